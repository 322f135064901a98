// Runs every case of tests/fixtures/gate/ through `attune gate check` and compares the verdict
// and the refused keys with the case's expected.json.

#include "support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace fs = std::filesystem;
using attune::test_support::run_attune;

namespace {

std::vector<fs::path> corpus_cases() {
    std::vector<fs::path> cases;
    const fs::path root = ATTUNE_FIXTURES "/gate";
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec))
        if (entry.is_directory() && fs::exists(entry.path() / "expected.json")) cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    return cases;
}

/// The case's file of that stem, in whatever format the family writes (`baseline.yaml`, `.toml`, `.sh`).
fs::path file_named(const fs::path& dir, const std::string& stem) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.path().stem() == stem) return entry.path();
    return dir / (stem + ".yaml");
}

fs::path candidate_of(const fs::path& dir) {
    return fs::exists(dir / "candidate.overrides") ? dir / "candidate.overrides" : file_named(dir, "candidate");
}

std::set<std::string> refused_keys(const nlohmann::json& verdict) {
    std::set<std::string> keys;
    for (const auto& change : verdict["changes"])
        if (change["verdict"] == "refused") keys.insert(change["key"].get<std::string>());
    for (const auto& invariant : verdict["invariants"])
        if (!invariant["ok"].get<bool>()) keys.insert("invariant:" + invariant["name"].get<std::string>());
    return keys;
}

class GateCorpus : public ::testing::TestWithParam<fs::path> {};

}  // namespace

TEST(GateCorpusSize, HoldsAtLeastEightyCasesAcrossTheFamilies) {
    const auto cases = corpus_cases();
    EXPECT_GE(cases.size(), 80u);
    for (const std::string family : {"nemo-", "hyperpod-", "automodel-", "axolotl-"})
        EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
                                [&](const fs::path& c) { return c.filename().string().rfind(family, 0) == 0; }))
            << family;
    // The pretraining stacks' traps, at least 25 cases each (the issue that added them).
    for (const std::string family : {"megatron-lm-", "torchtitan-", "megatron-bridge-"})
        EXPECT_GE(std::count_if(cases.begin(), cases.end(),
                                [&](const fs::path& c) { return c.filename().string().rfind(family, 0) == 0; }),
                  25)
            << family;
}

TEST_P(GateCorpus, GivesTheExpectedVerdictAndRefusedKeys) {
    const auto dir = GetParam();
    std::ifstream expected_file(dir / "expected.json");
    const auto expected = nlohmann::json::parse(expected_file);
    std::vector<std::string> args{"gate", "check", file_named(dir, "baseline").string(), candidate_of(dir).string(), "--json"};
    if (fs::exists(dir / "policy.yaml")) args.insert(args.end(), {"--gate-policy", (dir / "policy.yaml").string()});
    if (fs::exists(dir / "cluster.yaml")) args.insert(args.end(), {"--cluster", (dir / "cluster.yaml").string()});
    for (const auto& arg : expected.value("args", nlohmann::json::array())) args.push_back(arg.get<std::string>());
    const auto result = run_attune(args);
    const std::string why = expected.value("why", "");
    ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 3) << why << "\n" << result.err;
    const auto verdict = nlohmann::json::parse(result.out);
    EXPECT_EQ(verdict["verdict"], expected["verdict"]) << why << "\n" << result.out;
    EXPECT_EQ(result.exit_code, expected["verdict"] == "allowed" ? 0 : 3);
    const auto wanted = expected.value("refused_keys", std::vector<std::string>{});
    EXPECT_EQ(refused_keys(verdict), std::set<std::string>(wanted.begin(), wanted.end())) << why << "\n" << result.out;
}

INSTANTIATE_TEST_SUITE_P(Cases, GateCorpus, ::testing::ValuesIn(corpus_cases()),
                         [](const ::testing::TestParamInfo<fs::path>& info) {
                             std::string name = info.param.filename().string();
                             std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                             return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GateCorpus);
