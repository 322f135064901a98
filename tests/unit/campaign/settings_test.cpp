// Campaign settings a policy brings (issue 8): journaled in campaign-start and read back on resume.
#include "../../support/run.hpp"

#include <attune/campaign/campaign.hpp>
#include <attune/campaign/factories.hpp>

#include <gtest/gtest.h>

namespace attune::campaign {
namespace {

using test_support::TempDir;

TEST(CampaignSettings, PreflightVerdictsAndMaxLeversSurviveAResume) {
    const TempDir dir;
    Settings settings;
    settings.recipe = std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml";
    settings.budget_gpu_s = 10 * 3600;
    settings.policy = "random";
    settings.preflight_verdicts = policy_uses_preflight("random");
    settings.max_levers = policy_max_levers("random");
    {
        const auto opened = create(dir.path() / "c", settings);
        EXPECT_FALSE(opened.context.preflight_verdicts);
        EXPECT_TRUE(opened.context.max_levers.has_value());
    }
    const auto reopened = reopen(dir.path() / "c", /*lock=*/false);
    EXPECT_FALSE(reopened.context.preflight_verdicts);
    EXPECT_EQ(reopened.context.max_levers, policy_max_levers("random"));
}

TEST(CampaignSettings, OnlyRandomSearchGoesWithoutAPreflightAndOnlyTheBaselinesLiftTheLeverLimit) {
    for (const std::string name : {"rules", "bayes", "grid"}) EXPECT_TRUE(policy_uses_preflight(name)) << name;
    EXPECT_FALSE(policy_uses_preflight("random"));
    EXPECT_FALSE(policy_max_levers("rules").has_value());
    for (const std::string name : {"random", "bayes", "grid"}) EXPECT_GE(policy_max_levers(name).value_or(0), 100) << name;
}

}  // namespace
}  // namespace attune::campaign
