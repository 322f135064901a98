#include <attune/sim/from_recipe.hpp>

#include <gtest/gtest.h>

namespace attune::sim {
namespace {

TEST(SimFromRecipe, ReadsTheExampleNemoRecipeThroughItsAdapter) {
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/nemo-llama3-8b-h100.yaml", gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.layers, 32);
    EXPECT_EQ(in.model.hidden, 4096);
    EXPECT_EQ(in.dialect, Dialect::megatron);
    const auto e = estimate(in.hardware, in.model, in.layout);
    ASSERT_TRUE(e.valid) << e.problem;
    EXPECT_TRUE(e.fits);
    const auto space = lever_space(*loaded.adapter);
    EXPECT_FALSE(space.tp.empty());
    EXPECT_FALSE(space.recompute.empty());
}

TEST(SimFromRecipe, ReadsQwen3FromANemoRecipeWithItsHeadSizeAndTokenizer) {
    // Qwen3's query projection (32 heads x 128) is twice its hidden size: kv_channels says so.
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/bench/nemo-qwen3-30b-a3b-h200-draft.yaml",
                                          gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.head_dim, 128);
    EXPECT_EQ(in.model.vocab, 151936) << "the tokenizer's size, from the adapter's map";
    EXPECT_EQ(in.model.experts, 128);
    EXPECT_EQ(in.model.moe_ffn, 768);
    EXPECT_TRUE(estimate(in.hardware, in.model, in.layout).valid);
}

TEST(SimFromRecipe, FindsTheModelAnAutoModelBenchmarkNamesInItsConfig) {
    // from_config benchmarks name the model under model.config (no weights are loaded).
    const auto loaded = gate::load_recipe(
        ATTUNE_SOURCE_DIR "/examples/bench/automodel-deepseek-v3-h100-recipe-on-b200.yaml", gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_TRUE(in.model.mla);
    EXPECT_EQ(in.model.layers, 61);
    EXPECT_EQ(in.model.experts, 256);
    EXPECT_EQ(in.layout.pp, 4);
    EXPECT_EQ(in.layout.ep, 64);
    EXPECT_EQ(in.layout.mbs, 1) << "the pipeline's micro batch (pp_microbatch_size), not the local batch of 4";
    EXPECT_EQ(in.layout.recompute, Recompute::full) << "activation_checkpointing: true wraps every block";
}

TEST(SimFromRecipe, ReadsTheRecomputeSettingsOfEveryFramework) {
    EXPECT_EQ(parse_recompute("true"), Recompute::full);
    EXPECT_EQ(parse_recompute("full"), Recompute::full);
    EXPECT_EQ(parse_recompute("uniform"), Recompute::full);
    EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
    EXPECT_EQ(parse_recompute("false"), Recompute::none);
    EXPECT_EQ(parse_recompute(""), Recompute::none);
}

}  // namespace
}  // namespace attune::sim
