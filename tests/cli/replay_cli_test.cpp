// Black-box: `attune replay` on the recorded example campaigns (as a user's CI would), and a
// replay that diverges after a change to the search rules.
#include "../support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using attune::test_support::run_attune;
using attune::test_support::TempDir;
using nlohmann::json;

fs::path campaigns() { return fs::path(ATTUNE_SOURCE_DIR) / "examples" / "campaigns"; }

TEST(Replay, EveryRecordedExampleCampaignAgreesWithTodaysCode) {
    int replayed = 0;
    bool llm = false;
    for (const auto& entry : fs::directory_iterator(campaigns())) {
        const auto result = run_attune({"replay", entry.path().string(), "--json"});
        EXPECT_EQ(result.exit_code, 0) << entry.path() << "\n" << result.out << result.err;
        const auto document = json::parse(result.out);
        EXPECT_TRUE(document["agrees"].get<bool>());
        EXPECT_GT(document["compared"].get<int>(), 10);
        llm = llm || entry.path().filename().string().starts_with("llm-");
        ++replayed;
    }
    EXPECT_GE(replayed, 2);
    EXPECT_TRUE(llm) << "one recorded campaign must be an LLM campaign (its answers are served from the journal)";
}

TEST(Replay, ARandomCampaignReplaysWithTheSettingsItRanWith) {
    // random launches what the preflight predicts to fail and proposes whole configurations
    // (campaign-start: preflight_verdicts false, max_levers 1000); its replay must judge alike.
    const TempDir dir;
    const auto campaign = dir.path() / "random";
    const auto tune = run_attune({"-q", "tune", (fs::path(ATTUNE_SOURCE_DIR) / "examples" / "recipes" / "nemo-llama3-8b-h100.yaml").string(),
                                  "--policy", "random", "--budget", "20gpuh", "--campaign", campaign.string()});
    ASSERT_EQ(tune.exit_code, 0) << tune.err;
    const auto result = run_attune({"replay", campaign.string(), "--json"});
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_TRUE(json::parse(result.out)["agrees"].get<bool>());
}

TEST(Replay, ARulesChangeThatWouldDecideDifferentlyExitsFourWithTheSteps) {
    const TempDir data;
    fs::copy(fs::path(ATTUNE_SOURCE_DIR) / "gate", data.path() / "gate", fs::copy_options::recursive);
    fs::copy(fs::path(ATTUNE_SOURCE_DIR) / "skills", data.path() / "skills", fs::copy_options::recursive);
    fs::copy(fs::path(ATTUNE_SOURCE_DIR) / "data", data.path() / "data", fs::copy_options::recursive);
    const auto search = data.path() / "skills" / "rules" / "search.yaml";
    std::stringstream text;
    text << std::ifstream(search).rdbuf();
    // Demand a 50% gain: every accept of the recorded campaign becomes a revert.
    const std::string changed = std::regex_replace(text.str(), std::regex(R"(min_gain: "[^"]*")"), R"(min_gain: "0.5")");
    ASSERT_NE(changed, text.str());
    std::ofstream(search) << changed;
    const auto result = run_attune({"replay", (campaigns() / "rules-mixtral-8x7b").string(), "--json"}, {},
                                   {"ATTUNE_DATA_DIR=" + data.path().string()});
    EXPECT_EQ(result.exit_code, 4) << result.out << result.err;
    const auto document = json::parse(result.out);
    EXPECT_FALSE(document["agrees"].get<bool>());
    bool decision_changed = false;
    for (const auto& d : document["differences"])
        decision_changed = decision_changed || (d["recorded"].is_object() && d["recorded"]["type"] == "decision" &&
                                                d["recorded"]["decision"] == "accept" && d["replayed"]["decision"] == "revert");
    EXPECT_TRUE(decision_changed) << document.dump(2);
}

TEST(Replay, AFolderWithoutACampaignIsAUsageError) {
    const TempDir dir;
    const auto result = run_attune({"replay", dir.path().string()});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("no campaign here"), std::string::npos) << result.err;
}

}  // namespace
