// The journal fold: what the campaign loop, --resume and report read back.
#include <attune/campaign/record.hpp>
#include <attune/recipe/document.hpp>

#include <gtest/gtest.h>

namespace attune::campaign {
namespace {

using nlohmann::json;

json proposed(int n, const std::string& kind) {
    return {{"type", "trial-proposed"}, {"trial", n}, {"kind", kind}, {"edits", json::object()}, {"incumbent", n - 1}};
}

json decided(int n, const std::string& decision) {
    return {{"type", "decision"}, {"trial", n}, {"decision", decision}, {"reason", ""}};
}

TEST(CampaignRecord, ARestoredIncumbentIsTheBestAgain) {
    std::vector<json> events{{{"type", "campaign-start"}},   proposed(0, "baseline"),  decided(0, "baseline"),
                             proposed(1, "candidate"),
                             decided(1, "accept"),   proposed(2, "candidate"), decided(2, "accept")};
    EXPECT_EQ(fold(events).incumbent, 2);
    events.push_back({{"type", "incumbent-restored"}, {"trial", 1}, {"from", 2}, {"reason", "a detour did not pay"}});
    const CampaignRecord record = fold(events);
    EXPECT_EQ(record.incumbent, 1);
    EXPECT_EQ(record.best().view.n, 1);
    CampaignRecord incremental = fold({events.begin(), events.end() - 1});
    fold_more(incremental, events, events.size() - 1);
    EXPECT_EQ(incremental.incumbent, 1) << "the loop's incremental fold agrees";
}

}  // namespace
}  // namespace attune::campaign

namespace attune::campaign {

TEST(CampaignRecord, TheBestRecipeIsWrittenInTheFormatOfTheRecipeCopy) {
    CampaignRecord record;
    record.start = {{"recipe_file", "recipes/original.toml"}};
    EXPECT_EQ(best_recipe_path("/c", record), std::filesystem::path("/c/best.toml"));
    record.start = nlohmann::json::object();  // a journal from before recipe_file: a YAML copy
    EXPECT_EQ(best_recipe_path("/c", record), std::filesystem::path("/c/best.yaml"));
    EXPECT_EQ(recipe::extension_of(recipe::format_of("ds_config.JSON")), ".json");
}

}  // namespace attune::campaign
