// Every log under ../shared/logs and tests/fixtures/diagnose gives the status and values its
// .expected.json states (numbers within 1%).
#include <attune/diagnose/parse.hpp>

#include "fixture_logs.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace attune::diagnose {
namespace {

namespace fs = std::filesystem;

using test::fixture_logs;

void expect_close(const nlohmann::json& want, const std::optional<double>& got, const std::string& what) {
    if (want.is_null()) {
        EXPECT_FALSE(got && std::isfinite(*got)) << what << ": expected null, got " << *got;
        return;
    }
    ASSERT_TRUE(got && std::isfinite(*got)) << what << ": expected " << want;
    EXPECT_NEAR(*got, want.get<double>(), 0.01 * std::abs(want.get<double>()) + 1e-9) << what;
}

// The per-step array of one field: only steps that printed it; a printed nan is null.
template <typename Member>
void expect_series(const nlohmann::json& want, const RunMetrics& metrics, Member member, const std::string& what) {
    std::vector<std::optional<double>> got;
    for (const auto& step : metrics.steps) {
        const bool printed = member == &StepRecord::loss ? step.loss_printed : (step.*member).has_value();
        if (printed) {
            got.push_back(step.*member);
        }
    }
    if (want.is_null()) {
        EXPECT_TRUE(got.empty()) << what << ": expected no values, got " << got.size();
        return;
    }
    ASSERT_EQ(got.size(), want.size()) << what;
    for (std::size_t i = 0; i < got.size(); ++i) {
        expect_close(want[i], got[i], what + "[" + std::to_string(i) + "]");
    }
}

class DiagnoseFixture : public testing::TestWithParam<fs::path> {};

TEST_P(DiagnoseFixture, GivesTheExpectedStatusAndValues) {
    std::ifstream file(fs::path(GetParam()).replace_extension(".expected.json"));
    const auto want = nlohmann::json::parse(file);
    auto metrics = parse_logs({GetParam()}, std::nullopt);
    EXPECT_EQ(metrics.dialect, want["dialect"].is_null() ? std::string() : want["dialect"].get<std::string>());
    EXPECT_EQ(status_name(metrics.status), want["status"].get<std::string>());
    if (want.contains("cause")) {
        EXPECT_EQ(metrics.cause, want["cause"].is_null() ? std::string() : want["cause"].get<std::string>());
    }
    EXPECT_EQ(metrics.steps.size(), want["steps_seen"].get<std::size_t>());
    if (want["last_step"].is_null()) {
        EXPECT_FALSE(metrics.last_step.has_value());
    } else {
        EXPECT_EQ(metrics.last_step, want["last_step"].get<long long>());
    }
    expect_series(want["step_time_s"], metrics, &StepRecord::step_time_s, "step_time_s");
    expect_series(want["tflops_per_gpu"], metrics, &StepRecord::tflops_per_gpu, "tflops_per_gpu");
    expect_series(want["tokens_per_s_per_gpu"], metrics, &StepRecord::tokens_per_s_per_gpu, "tokens_per_s_per_gpu");
    expect_series(want["loss"], metrics, &StepRecord::loss, "loss");
    expect_close(want["peak_memory_gib"], metrics.peak_memory_gib, "peak_memory_gib");
    if (metrics.status != Status::ok) {
        EXPECT_FALSE(metrics.evidence.empty()) << "a failure names its evidence";
    }
}

INSTANTIATE_TEST_SUITE_P(Diagnose, DiagnoseFixture, testing::ValuesIn(fixture_logs()), test::fixture_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DiagnoseFixture);

TEST(DiagnoseFixtures, SharedCorpusIsPresent) {
    if (!fs::is_directory(fs::path(ATTUNE_SHARED_DIR) / "logs")) {
        GTEST_SKIP() << "../shared/logs is absent: the shared log corpus is not checked";
    }
    EXPECT_GE(fixture_logs().size(), 40u);
}

}  // namespace
}  // namespace attune::diagnose
