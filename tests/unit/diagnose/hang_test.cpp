// Hang detection (issue 4): a silence judged from the log's own timestamps, or, for a job still
// running, from the log's modification time against the caller's clock (--hang-after).
#include <attune/diagnose/parse.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace attune::diagnose {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A log file in the temporary folder, removed with the object.
class TempLog {
public:
    explicit TempLog(const std::string& content) {
        m_path = fs::temp_directory_path() / ("attune-hang-" + std::to_string(::getpid()) + "-" + std::to_string(s_counter++) + ".log");
        std::ofstream(m_path, std::ios::binary) << content;
    }
    ~TempLog() { fs::remove(m_path); }
    TempLog(const TempLog&) = delete;
    TempLog& operator=(const TempLog&) = delete;
    [[nodiscard]] const fs::path& path() const { return m_path; }

    // Backdates the file: it was last written `age` ago.
    void age(std::chrono::seconds age) const { fs::last_write_time(m_path, fs::file_time_type::clock::now() - age); }

private:
    static inline int s_counter = 0;
    fs::path m_path;
};

// Megatron records one minute apart from 10:00:00 on, each stamped.
std::string stamped_records(int count) {
    std::string text;
    for (int i = 1; i <= count; ++i) {
        text += " [2026-01-05 10:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + ":00] iteration " + std::to_string(i) +
                "/ 1000 | elapsed time per iteration (ms): 6000.0 | throughput per GPU (TFLOP/s/GPU): 400.0 | lm loss: 5.000000E+00 |\n";
    }
    return text;
}

std::string fixture(const std::string& name) { return std::string(ATTUNE_FIXTURES) + "/diagnose/" + name; }

TEST(DiagnoseHang, SilenceBeforeATimeLimitLongerThanTheThresholdIsAHang) {
    const TempLog log(stamped_records(6) + "slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-01-05T11:30:00 DUE TO TIME LIMIT ***\n");
    const auto metrics = parse_logs({log.path()}, std::nullopt);
    EXPECT_EQ(metrics.status, Status::hang);
    ASSERT_GE(metrics.evidence.size(), 2u);
    EXPECT_EQ(metrics.evidence[0].line, 6u) << "the last progress line comes first";
    EXPECT_NE(metrics.evidence[0].text.find("iteration 6/"), std::string::npos);
    EXPECT_EQ(metrics.evidence[1].line, 7u) << "then the line that dates the silence";
}

TEST(DiagnoseHang, ATimeLimitSoonAfterProgressStaysATimeLimit) {
    const TempLog log(stamped_records(6) + "slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-01-05T10:20:00 DUE TO TIME LIMIT ***\n");
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::time_limit);
}

TEST(DiagnoseHang, HangAfterSetsTheThreshold) {
    const TempLog log(stamped_records(6) + "slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-01-05T10:20:00 DUE TO TIME LIMIT ***\n");
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt, HangCheck{.after_s = 600.0, .now = std::nullopt}).status, Status::hang);
}

TEST(DiagnoseHang, AWatchdogAfterTheSilenceNamesTheCause) {
    const TempLog log(stamped_records(6) + "[2026-01-05 13:00:00] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9)\n");
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::nccl_timeout);
}

TEST(DiagnoseHang, RecordsWithoutTimesAreNotJudgedBySilence) {
    const TempLog log(" iteration 1/ 10 | elapsed time per iteration (ms): 10.0 |\n iteration 2/ 10 | elapsed time per iteration (ms): 10.0 |\n"
                      "slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2026-01-05T23:00:00 DUE TO TIME LIMIT ***\n");
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::time_limit);
}

TEST(DiagnoseHang, AStaleLogOfARunningJobIsAHang) {
    const TempLog log(stamped_records(6));
    log.age(2h);
    const auto metrics = parse_logs({log.path()}, std::nullopt, HangCheck{.after_s = 600.0, .now = std::chrono::system_clock::now()});
    EXPECT_EQ(metrics.status, Status::hang);
    ASSERT_EQ(metrics.evidence.size(), 2u);
    EXPECT_EQ(metrics.evidence[0].line, 6u);
    EXPECT_EQ(metrics.evidence[1].line, 0u) << "the silence is a conclusion, not a line";
}

TEST(DiagnoseHang, AFreshLogOfARunningJobIsNotAHang) {
    const TempLog log(stamped_records(6));
    log.age(60s);
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt, HangCheck{.after_s = 600.0, .now = std::chrono::system_clock::now()}).status, Status::ok);
}

TEST(DiagnoseHang, ModificationTimeIsReadOnlyWhenAsked) {
    const TempLog log(stamped_records(6));
    log.age(24h);
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt).status, Status::ok);
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt, HangCheck{.after_s = 600.0, .now = std::nullopt}).status, Status::ok);
}

TEST(DiagnoseHang, AStaleLogThatEndsInAFailureKeepsItsFailure) {
    const TempLog log(stamped_records(6) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n");
    log.age(2h);
    EXPECT_EQ(parse_logs({log.path()}, std::nullopt, HangCheck{.after_s = 600.0, .now = std::chrono::system_clock::now()}).status, Status::oom);
}

TEST(DiagnoseHang, TheSharedScancelLogStaysAHang) {
    const auto shared = fs::path(ATTUNE_SHARED_DIR) / "logs" / "megatron" / "silence-then-scancel-hang.log";
    if (!fs::exists(shared)) {
        GTEST_SKIP() << "../shared/logs is absent";
    }
    const auto metrics = parse_logs({shared}, std::nullopt);
    EXPECT_EQ(metrics.status, Status::hang);
    EXPECT_NE(metrics.evidence.front().text.find("iteration"), std::string::npos) << "the last progress line is the first evidence";
}

TEST(DiagnoseHang, OwnFixtureTimeLimitAfterHoursOfSilenceIsAHang) {
    const auto metrics = parse_logs({fixture("megatron/silence-then-time-limit-hang.log")}, std::nullopt);
    EXPECT_EQ(metrics.status, Status::hang);
    ASSERT_GE(metrics.evidence.size(), 3u);
    EXPECT_NE(metrics.evidence[1].text.find("DUE TO TIME LIMIT"), std::string::npos);
}

}  // namespace
}  // namespace attune::diagnose
