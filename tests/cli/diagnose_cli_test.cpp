// Black-box: runs the built `attune diagnose` and checks its JSON document and exit codes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

struct Outcome {
    int exit_code = -1;
    std::string out;
};

Outcome run_attune(const std::string& arguments) {
    const std::string command = std::string(ATTUNE_BINARY) + " " + arguments + " 2>/dev/null";
    Outcome outcome;
    FILE* pipe = ::popen(command.c_str(), "r");
    std::array<char, 4096> buffer{};
    while (const auto read = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
        outcome.out.append(buffer.data(), read);
    }
    const int status = ::pclose(pipe);
    outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return outcome;
}

std::string fixture(const std::string& name) {
    return std::string(ATTUNE_FIXTURES) + "/diagnose/" + name;
}

TEST(DiagnoseCli, JsonDocumentHasTheIssueFields) {
    const auto outcome = run_attune("diagnose --json " + fixture("megatron/mcore-plain-oom-then-watchdog.log"));
    ASSERT_EQ(outcome.exit_code, 0);
    const auto document = nlohmann::json::parse(outcome.out);
    EXPECT_EQ(document["dialect"], "megatron");
    EXPECT_EQ(document["status"], "oom");
    EXPECT_EQ(document["steps_seen"], 3);
    EXPECT_EQ(document["last_step"], 3);
    EXPECT_EQ(document["bottleneck"], "memory-bound");
    EXPECT_TRUE(document["peak_memory_gib"].is_null());
    EXPECT_DOUBLE_EQ(document["steps"][1]["step_time_s"].get<double>(), 4.1);
    EXPECT_TRUE(document["steps"][1]["tokens_per_s_per_gpu"].is_null());
    for (const auto* key : {"step_time_s", "tokens_per_s_per_gpu", "tflops_per_gpu", "noise"}) {
        EXPECT_TRUE(document["steady"].contains(key)) << key;
    }
    ASSERT_FALSE(document["evidence"].empty());
    EXPECT_EQ(document["evidence"][0]["line"], 8);
}

TEST(DiagnoseCli, NonUtf8EvidenceIsPrintedAsValidJson) {
    const auto path = std::filesystem::temp_directory_path() / "attune-diag-non-utf8.log";
    {
        std::ofstream log(path, std::ios::binary);
        log << "step 00001/100 | loss: 5.0 | dt: 500.0ms\nstep 00002/100 | loss: 4.9 | dt: 500.0ms\n"
            << "torch.OutOfMemoryError: CUDA out of memory \xff\xfe\n";
    }
    const auto outcome = run_attune("diagnose --json " + path.string());
    std::filesystem::remove(path);
    ASSERT_EQ(outcome.exit_code, 0);
    const auto document = nlohmann::json::parse(outcome.out);
    EXPECT_EQ(document["status"], "oom");
    EXPECT_EQ(document["evidence"][0]["line"], 3);
}

TEST(DiagnoseCli, MissingFileExitsTwo) {
    EXPECT_EQ(run_attune("diagnose /nonexistent/attune.log").exit_code, 2);
}

TEST(DiagnoseCli, UnknownFrameworkExitsTwo) {
    EXPECT_EQ(run_attune("diagnose --framework nope " + fixture("megatron/mcore-plain-oom-then-watchdog.log")).exit_code, 2);
}

TEST(DiagnoseCli, UnrecognisedContentExitsTwo) {
    EXPECT_EQ(run_attune("diagnose /dev/null").exit_code, 2);
}

TEST(DiagnoseCli, TextOutputNamesStatusAndBottleneck) {
    const auto outcome = run_attune("diagnose " + fixture("generic/json-lines-crlf-time-limit.log"));
    ASSERT_EQ(outcome.exit_code, 0);
    EXPECT_NE(outcome.out.find("status:     time-limit"), std::string::npos) << outcome.out;
    EXPECT_NE(outcome.out.find("bottleneck: failed"), std::string::npos) << outcome.out;
}

}  // namespace
