// Every real recipe of the families attune reads in ../shared/recipes loads, is detected as its
// family, has no unknown key, and checks against itself as allowed with no changes.

#include "support/run.hpp"

#include <attune/core/paths.hpp>
#include <attune/gate/verdict.hpp>

#include <gtest/gtest.h>

#include <filesystem>

namespace fs = std::filesystem;
using namespace attune;

namespace {

struct SharedRecipe {
    std::string relative_path;
    std::string family;
};

std::vector<SharedRecipe> shared_recipes() {
    std::vector<SharedRecipe> recipes;
    const auto shared = test_support::shared_dir();
    if (shared.empty()) return recipes;
    const std::vector<std::tuple<std::string, std::string, std::string>> families = {
        {"nemo", "", "nemo"}, {"sagemaker-hyperpod", "hf_", "hyperpod-hf"}, {"sagemaker-hyperpod", "llmft_", "hyperpod-llmft"},
        {"sagemaker-hyperpod", "checkpointless_", "hyperpod-checkpointless"}, {"automodel", "", "automodel"},
        {"axolotl", "", "axolotl"}, {"megatron-lm", "", "megatron-lm"}, {"torchtitan", "", "torchtitan"},
        {"torchtune", "", "torchtune"}, {"deepspeed", "", "deepspeed"}, {"llama-factory", "", "llama-factory"},
        // MaxText's model files are fragments its pyconfig merges over base.yml, not recipes of their own.
        {"maxtext", "base", "maxtext"}};
    for (const auto& [folder, prefix, family] : families)
        for (const auto& entry : fs::directory_iterator(shared / "recipes" / folder))
            if (entry.path().extension() != ".csv" && entry.path().filename().string().rfind(prefix, 0) == 0)
                recipes.push_back(SharedRecipe{folder + "/" + entry.path().filename().string(), family});
    std::sort(recipes.begin(), recipes.end(), [](const auto& a, const auto& b) { return a.relative_path < b.relative_path; });
    return recipes;
}

class SharedRecipeGate : public ::testing::TestWithParam<SharedRecipe> {};

}  // namespace

TEST(SharedRecipes, AreThereToTest) {
    if (test_support::shared_dir().empty()) GTEST_SKIP() << "../shared is absent: the shared recipes are not tested";
    EXPECT_GE(shared_recipes().size(), 20u);
}

TEST_P(SharedRecipeGate, LoadsIsDetectedHasNoUnknownKeyAndChecksAgainstItself) {
    const auto& param = GetParam();
    const auto path = test_support::shared_dir() / "recipes" / param.relative_path;
    const auto& rules = gate::default_rules();
    const auto loaded = gate::load_recipe(path, rules);
    EXPECT_EQ(loaded.adapter->name(), param.family);
    for (const auto& leaf : loaded.document.leaves())
        EXPECT_NE(loaded.adapter->classify(leaf.path), nullptr) << param.relative_path << ": unknown key " << leaf.path;
    const auto policy = gate::load_policy(data_dir(), std::nullopt);
    const auto verdict = gate::check(loaded.document, loaded.document, *loaded.adapter, rules, policy,
                                     cluster::default_cluster(), {});
    EXPECT_TRUE(verdict.allowed) << param.relative_path;
    EXPECT_TRUE(verdict.changes.empty());
}

INSTANTIATE_TEST_SUITE_P(Recipes, SharedRecipeGate, ::testing::ValuesIn(shared_recipes()),
                         [](const ::testing::TestParamInfo<SharedRecipe>& info) {
                             std::string name = info.param.relative_path;
                             std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                             return name;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SharedRecipeGate);
