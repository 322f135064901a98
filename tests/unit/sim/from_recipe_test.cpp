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

}  // namespace
}  // namespace attune::sim
