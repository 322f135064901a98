// A large log is parsed on two threads (issue 4, speed): cut at a record line, its halves parsed
// at once and merged. Wherever the cut falls, `attune diagnose --json` says what one thread says.
// Each test cuts small logs at every place a cut can fall (min_bytes 1, `at` moved line by line).
#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/line_reader.hpp>
#include <attune/diagnose/parse.hpp>
#include <attune/diagnose/report.hpp>

#include "../../../src/diagnose/split.hpp"
#include "fixture_logs.hpp"
#include "support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attune::diagnose {
namespace {

namespace fs = std::filesystem;
using Logs = std::vector<fs::path>;
using Framework = std::optional<std::string>;

const SplitPolicy k_one_thread{.min_bytes = std::numeric_limits<std::uintmax_t>::max()};

// What `attune diagnose --json` prints for `logs`.
std::string document(const Logs& logs, const Framework& framework, const SplitPolicy& split) {
    static const auto rules = load_rules(fs::path(ATTUNE_SOURCE_DIR) / "skills" / "diagnosis.yaml");
    const auto metrics = parse_logs(logs, framework, {}, split);
    return to_json(metrics, diagnose(metrics, {}, rules)).dump(1);
}

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const detail::DialectSpec* spec_named(const Framework& framework) {
    for (const auto& spec : detail::dialect_specs()) {
        if (framework && spec.name == *framework) {
            return &spec;
        }
    }
    return nullptr;
}

// Every cut of `log`: for each boundary, a policy whose search finds it (the search starts at
// size * at and takes the first boundary after the next newline).
std::map<std::uintmax_t, SplitPolicy> every_cut(const fs::path& log, const Framework& framework) {
    const auto text = read_all(log);
    std::map<std::uintmax_t, SplitPolicy> cuts;
    for (std::size_t from = 0; from < text.size(); from = text.find('\n', from) + 1) {
        if (const auto boundary = detail::find_boundary(log, from, spec_named(framework))) {
            const double at = (static_cast<double>(from) + 0.5) / static_cast<double>(text.size());
            cuts.emplace(boundary->offset, SplitPolicy{.min_bytes = 1, .at = at});
        }
        if (text.find('\n', from) == std::string::npos) {
            break;
        }
    }
    return cuts;
}

// Cuts the last of `logs` everywhere it can be cut and expects the one-thread document each time;
// returns the number of cuts.
std::size_t expect_every_cut_agrees(const Logs& logs, const Framework& framework = std::nullopt) {
    const auto want = document(logs, framework, k_one_thread);
    const auto cuts = every_cut(logs.back(), framework);
    for (const auto& [offset, split] : cuts) {
        // Earlier logs are below min_bytes only if the policy says so: with min_bytes 1 they are cut too.
        EXPECT_EQ(document(logs, framework, split), want) << logs.back() << " cut at byte " << offset;
    }
    return cuts.size();
}

class DiagnoseSplitFixture : public testing::TestWithParam<fs::path> {};

TEST_P(DiagnoseSplitFixture, EveryCutGivesTheOneThreadDocument) {
    const auto cuts = expect_every_cut_agrees({GetParam()});
    const auto metrics = parse_logs({GetParam()}, std::nullopt, {}, k_one_thread);
    // With --framework the same dialect: the cut searches that dialect's formats only.
    if (metrics.dialect != "generic") {
        expect_every_cut_agrees({GetParam()}, metrics.dialect);
    }
    // A log with records after its first line has a cut, unless they number by order (hf) or are
    // '\r' bar updates (a cut falls at a line's start).
    if (metrics.steps.size() >= 2 && metrics.dialect != "hf" && read_all(GetParam()).find('\r') == std::string::npos) {
        EXPECT_GT(cuts, 0u) << "no record line to cut at";
    }
}

INSTANTIATE_TEST_SUITE_P(Diagnose, DiagnoseSplitFixture, testing::ValuesIn(test::fixture_logs()), test::fixture_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DiagnoseSplitFixture);

std::string stamp(int minute) {
    const int hour = 10 + minute / 60;
    const int rest = minute % 60;
    return "[2026-01-05 " + std::to_string(hour) + ":" + (rest < 10 ? "0" : "") + std::to_string(rest) + ":00]";
}

std::string record(int step, int minute, const std::string& prefix = "") {
    return prefix + " " + stamp(minute) + " iteration " + std::to_string(step) +
           "/ 1000 | elapsed time per iteration (ms): " + std::to_string(6000 + step % 7) +
           ".0 | throughput per GPU (TFLOP/s/GPU): 400.0 | lm loss: " + std::to_string(5.0 - step * 0.01) +
           " | grad norm: 1.0 |\n";
}

std::string timers() {
    return "max time across ranks (ms):\n    forward-backward ...............................: 2612.19\n";
}

// A Megatron run that hits an OOM on one rank while rank 0 still prints records (the traceback's
// lines among them), restarts from a checkpoint (steps go back and are printed again, by two ranks),
// prints '\r' progress bars and coloured records, and ends silent for two hours before Slurm cancels
// it. With `tflops_lines`, legacy "Effective Tera Flops" lines add to the record before them.
std::string restarted_run(bool tflops_lines) {
    std::string text = "Megatron-LM setup\n> building GPT model ...\n";
    int minute = 0;
    const auto records = [&](int first, int last) {
        for (int step = first; step <= last; ++step) {
            text += record(step, ++minute, step % 5 == 0 ? "[rank1]:" : "");
            if (step % 5 == 0) {
                text += record(step, minute, "[rank0]:");
            }
            if (tflops_lines) {
                text += "Effective Tera Flops per GPU: " + std::to_string(300 + step) + ".0\n";
            }
            text += step % 3 == 0 ? timers() : "";
            text += step % 4 == 0 ? "validation 1/4 [\r validation 2/4 [\r validation 4/4 [\n" : "";
            text += step % 6 == 0 ? "\x1b[32m" + record(step, minute, "[rank2]:") + "\x1b[0m" : "";
        }
    };
    records(1, 20);
    text += "[rank3]: Traceback (most recent call last):\n";
    records(21, 22);
    text += "[rank3]:   File \"train.py\", line 12, in step\n[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
    records(23, 24);
    text += "[rank3]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)\n";
    text += "Restarting from checkpoint at iteration 15\n";
    records(15, 40);
    text += stamp(minute + 120) + " slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2026-01-05T13:00:00 ***\n";
    return text;
}

TEST(DiagnoseSplit, RestartOomAndProgressBarsGiveTheOneThreadDocumentWhereverTheCutFalls) {
    const test_support::TempDir dir;
    const auto log = dir.write("restarted.log", restarted_run(false));
    EXPECT_GT(expect_every_cut_agrees({log}), 40u);
    EXPECT_GT(expect_every_cut_agrees({log}, "megatron"), 40u);
    const auto metrics = parse_logs({log}, std::nullopt, {}, k_one_thread);
    EXPECT_EQ(metrics.status, Status::hang);
    EXPECT_EQ(metrics.steps.size(), 40u);
}

// Attachment lines fill the record kept for their step; when the later half holds a step the
// earlier one holds too, this thread reads the later half itself.
TEST(DiagnoseSplit, AttachedFieldsAcrossARestartGiveTheOneThreadDocument) {
    const test_support::TempDir dir;
    const auto log = dir.write("attached.log", restarted_run(true));
    EXPECT_GT(expect_every_cut_agrees({log}), 40u);
}

// An OOM traceback that the cut falls inside, after the last record: the run ends in it.
TEST(DiagnoseSplit, FailureAfterTheLastRecordIsJudgedAsOneThreadJudgesIt) {
    std::string text;
    for (int step = 1; step <= 30; ++step) {
        text += record(step, step);
    }
    text += "[rank3]: Traceback (most recent call last):\n" + record(31, 31, "[rank0]:") +
            "[rank3]: torch.OutOfMemoryError: CUDA out of memory.\n[rank3]: ChildFailedError\n";
    const test_support::TempDir dir;
    const auto log = dir.write("oom.log", text);
    EXPECT_GT(expect_every_cut_agrees({log}), 20u);
    const auto metrics = parse_logs({log}, std::nullopt, {}, SplitPolicy{.min_bytes = 1, .at = 0.9});
    EXPECT_EQ(metrics.status, Status::oom);
    ASSERT_FALSE(metrics.evidence.empty());
    EXPECT_EQ(metrics.evidence.front().line, 33u);
}

// A log that decided another dialect before the cut: the boundary line is no record there, so this
// thread reads the later half itself.
TEST(DiagnoseSplit, AnotherDialectDecidedBeforeTheCutGivesTheOneThreadDocument) {
    std::string text;
    for (int step = 1; step <= 10; ++step) {
        text += "step " + std::to_string(step) + "/100 | loss: 3.0 | dt: 1000.0ms\n";
    }
    for (int step = 11; step <= 20; ++step) {
        text += record(step, step);
    }
    const test_support::TempDir dir;
    const auto log = dir.write("mixed.log", text);
    EXPECT_GT(expect_every_cut_agrees({log}), 5u);
    EXPECT_EQ(parse_logs({log}, std::nullopt, {}, k_one_thread).dialect, "generic");
}

// Several files read as one stream: each is cut, and line numbers restart in each.
TEST(DiagnoseSplit, SeveralLogsEachCutGiveTheOneThreadDocument) {
    const test_support::TempDir dir;
    const auto first = dir.write("first.log", restarted_run(false));
    std::string text;
    for (int step = 41; step <= 60; ++step) {
        text += record(step, step + 200);
    }
    text += "[rank3]: torch.OutOfMemoryError: CUDA out of memory.\n";
    const auto second = dir.write("second.log", text);
    EXPECT_GT(expect_every_cut_agrees({first, second}), 10u);
}

// Bad input takes the same way through the cut: no boundary, or one, and never a crash.
TEST(DiagnoseSplit, BadInputGivesTheOneThreadResult) {
    const test_support::TempDir dir;
    std::string binary(4096, '\0');
    for (std::size_t i = 0; i < binary.size(); ++i) {
        binary[i] = static_cast<char>((i * 7919) % 256);
    }
    const std::string huge_line(1u << 20, 'x');
    const std::vector<std::string> contents = {
        "",
        binary,
        record(1, 1) + huge_line + "\n" + record(2, 2) + record(3, 3) + huge_line + record(4, 4) + record(5, 5),
        record(1, 1) + record(2, 2) + record(3, 3) + "\xff\xfe iteration 4/ 1000 | elapsed time per iteration (ms): 6000.0 |\n" +
            record(5, 5) + record(6, 6).substr(0, 60),
    };
    for (std::size_t i = 0; i < contents.size(); ++i) {
        const auto log = dir.write("bad" + std::to_string(i) + ".log", contents[i]);
        for (const double at : {0.0, 0.3, 0.5, 0.9}) {
            const SplitPolicy split{.min_bytes = 1, .at = at};
            std::string one;
            std::string two;
            try {
                one = document({log}, std::nullopt, k_one_thread);
            } catch (const std::exception& error) {
                one = error.what();
            }
            try {
                two = document({log}, std::nullopt, split);
            } catch (const std::exception& error) {
                two = error.what();
            }
            EXPECT_EQ(two, one) << "content " << i << " at " << at;
        }
    }
}

// A byte range of a file reads the lines that start in it, numbered from its start.
TEST(DiagnoseLineReader, ReadsAByteRangeFromALineStart) {
    const test_support::TempDir dir;
    const auto log = dir.write("range.log", "one\ntwo\rbar\r\nthree\nfour");
    const auto lines = [&](ByteRange range) {
        LineReader reader(log, LineReader::k_default_max_line, range);
        std::vector<std::pair<std::string, std::size_t>> got;
        std::string_view line;
        while (reader.next(line)) {
            got.emplace_back(std::string(line), reader.line_number());
        }
        return got;
    };
    using Lines = std::vector<std::pair<std::string, std::size_t>>;
    EXPECT_EQ(lines({.begin = 0, .end = 4}), (Lines{{"one", 1}}));
    EXPECT_EQ(lines({.begin = 4, .end = 19}), (Lines{{"two", 1}, {"bar", 1}, {"three", 2}}));
    EXPECT_EQ(lines({.begin = 19}), (Lines{{"four", 1}}));
}

}  // namespace
}  // namespace attune::diagnose
