// Bad input never crashes the parser: it gives a clear status or an InputError (exit 2).
#include <attune/core/error.hpp>
#include <attune/diagnose/line_reader.hpp>
#include <attune/diagnose/parse.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace attune::diagnose {
namespace {

namespace fs = std::filesystem;

// A log file in a fresh temporary folder, removed with the object.
class TempLog {
public:
    explicit TempLog(const std::string& content) {
        m_path = fs::temp_directory_path() /
                 ("attune-diag-" + std::to_string(::getpid()) + "-" + std::to_string(s_counter++) + ".log");
        std::ofstream(m_path, std::ios::binary) << content;
    }
    ~TempLog() { fs::remove(m_path); }
    TempLog(const TempLog&) = delete;
    TempLog& operator=(const TempLog&) = delete;
    [[nodiscard]] const fs::path& path() const { return m_path; }

private:
    static inline int s_counter = 0;
    fs::path m_path;
};

std::string megatron_line(int step, double ms) {
    return " iteration " + std::to_string(step) + "/ 1000 | elapsed time per iteration (ms): " + std::to_string(ms) +
           " | throughput per GPU (TFLOP/s/GPU): 400.0 | lm loss: 5.000000E+00 | grad norm: 1.0 |\n";
}

TEST(DiagnoseBadInput, EmptyLogIsUnknownWithItsEvidence) {
    const TempLog log("");
    const auto metrics = parse_logs({log.path()}, std::nullopt);
    EXPECT_EQ(metrics.status, Status::unknown);
    EXPECT_TRUE(metrics.dialect.empty());
    EXPECT_FALSE(metrics.evidence.empty());
}

TEST(DiagnoseBadInput, TextWithNoRecordAndNoFailureSignIsUnknown) {
    const TempLog log("Loading checkpoint shards\nhello from the job prologue\n");
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::unknown);
}

TEST(DiagnoseBadInput, EmptyLogWithFrameworkIsTooShort) {
    const TempLog log("");
    const auto metrics = parse_logs({log.path()}, std::string("megatron"));
    EXPECT_EQ(metrics.status, Status::too_short);
    EXPECT_FALSE(metrics.evidence.empty());
}

TEST(DiagnoseBadInput, MissingFileIsAnInputError) {
    EXPECT_THROW(parse_logs({"/nonexistent/attune/trial.log"}, std::nullopt), InputError);
}

TEST(DiagnoseBadInput, UnknownFrameworkSuggestsTheClosestName) {
    const TempLog log(megatron_line(1, 1000));
    try {
        parse_logs({log.path()}, std::string("megatorn"));
        FAIL() << "expected InputError";
    } catch (const InputError& error) {
        EXPECT_NE(std::string(error.what()).find("did you mean 'megatron'"), std::string::npos) << error.what();
    }
}

TEST(DiagnoseBadInput, BinaryFileIsNotALog) {
    std::mt19937 random(7);
    std::string bytes(256 * 1024, '\0');
    for (auto& byte : bytes) {
        // letters excluded so that no failure wording can appear by chance
        byte = static_cast<char>(random() % 64);
    }
    const TempLog log(bytes);
    EXPECT_THROW(parse_logs({log.path()}, std::nullopt), InputError);
}

TEST(DiagnoseBadInput, MegabyteLinesAndTruncatedLastLineAreRead) {
    std::string content = megatron_line(1, 9000) + std::string(1 << 20, 'x') + "\n";
    for (int step = 2; step <= 6; ++step) {
        content += megatron_line(step, 2000);
    }
    content += std::string(1 << 20, '\xff') + "\n" + megatron_line(7, 2000).substr(0, 40);
    const TempLog log(content);
    const auto metrics = parse_logs({log.path()}, std::nullopt);
    EXPECT_EQ(metrics.status, Status::ok);
    EXPECT_EQ(metrics.steps.size(), 6u);
    ASSERT_TRUE(metrics.steady.step_time_s);
    EXPECT_DOUBLE_EQ(*metrics.steady.step_time_s, 2.0);
    EXPECT_EQ(metrics.steady.steps_used, 5u);
}

TEST(DiagnoseBadInput, EachSchedulerEndStateInTheBackendsNoteGivesItsStatus) {
    // The note a launch backend writes beside the log (docs/backends.md), one per final state.
    const std::vector<std::pair<std::string, Status>> states = {
        {"TIMEOUT", Status::time_limit},     {"DEADLINE", Status::time_limit}, {"PREEMPTED", Status::preempted},
        {"NODE_FAIL", Status::node_failure}, {"BOOT_FAIL", Status::node_failure}, {"OUT_OF_MEMORY", Status::oom},
        {"CANCELLED", Status::hang},         {"FAILED", Status::crash}};
    for (const auto& [state, status] : states) {
        const TempLog log(megatron_line(1, 9000) + megatron_line(2, 2000) + megatron_line(3, 2000) + megatron_line(4, 2000) +
                          "attune: slurm job 12 ended in state " + state + " (exit code 1, elapsed 600 s, 8 GPUs, queue wait 0 s)\n");
        EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, status) << state;
    }
}

TEST(DiagnoseBadInput, TooFewStepsIsTooShort) {
    const TempLog log(megatron_line(1, 9000) + megatron_line(2, 2000));
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::too_short);
}

TEST(DiagnoseLineReader, CapsLongLinesAndSplitsCarriageReturns) {
    const TempLog log(std::string(100, 'a') + "\nbar 1\rbar 2\r\nlast");
    LineReader reader(log.path(), 10);
    std::vector<std::pair<std::string, std::size_t>> lines;
    std::string_view line;
    while (reader.next(line)) {
        lines.emplace_back(std::string(line), reader.line_number());
    }
    const std::vector<std::pair<std::string, std::size_t>> want = {
        {"aaaaaaaaaa", 1}, {"bar 1", 2}, {"bar 2", 2}, {"last", 3}};
    EXPECT_EQ(lines, want);
}

// The reader looks for '\r' and ESC once per 1 MiB block rather than once per line: across several
// blocks, with both bytes at random places (block edges included), it gives the pieces, line
// numbers and has_escape() that a plain split of the whole text gives.
TEST(DiagnoseLineReader, BlockScansForCarriageReturnAndEscapeMatchAPlainSplit) {
    std::mt19937 random(4);
    std::string content;
    while (content.size() < (5u << 19)) {
        const auto length = random() % 300;
        for (std::size_t i = 0; i < length; ++i) {
            const auto pick = random() % 100;
            content += pick == 0 ? '\x1b' : pick == 1 ? '\r' : static_cast<char>('a' + pick % 26);
        }
        content += '\n';
    }
    std::vector<std::tuple<std::string, std::size_t, bool>> want;
    std::size_t number = 1;
    std::string piece;
    for (std::size_t i = 0; i < content.size(); ++i) {
        const char c = content[i];
        if (c != '\r' && c != '\n') {
            piece += c;
            continue;
        }
        want.emplace_back(piece, number, piece.find('\x1b') != std::string::npos);
        piece.clear();
        if (c == '\n' || (i + 1 < content.size() && content[i + 1] == '\n')) {
            i += c == '\r' ? 1 : 0;
            ++number;
        }
    }
    const TempLog log(content);
    LineReader reader(log.path());
    std::vector<std::tuple<std::string, std::size_t, bool>> got;
    std::string_view line;
    while (reader.next(line)) {
        got.emplace_back(std::string(line), reader.line_number(), reader.has_escape());
    }
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace attune::diagnose
