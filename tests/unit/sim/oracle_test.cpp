#include <attune/model/catalogue.hpp>
#include <attune/sim/oracle.hpp>

#include <gtest/gtest.h>

namespace attune::sim {
namespace {

TEST(SimOracle, FindsAtLeastTheBaselineAndCountsFeasibleLayouts) {
    auto model = model::Catalogue::shipped().find("llama3_70b")->shape;
    model.seq_len = 8192;
    Layout base;
    base.nodes = 8, base.tp = 8, base.pp = 8, base.gbs = 256, base.sequence_parallel = true;
    base.recompute = Recompute::full;
    LeverSpace space;
    space.tp = {1, 2, 4, 8}, space.pp = {1, 2, 4, 8}, space.vpp = {1, 2, 5}, space.mbs = {1, 2, 4};
    space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
    space.precision = {Precision::bf16, Precision::fp8};
    const auto result = run_oracle(World{}, *find_hardware("h100"), model, base, space);
    EXPECT_EQ(result.evaluated, 4 * 4 * 3 * 3 * 3 * 2);
    EXPECT_GT(result.feasible, 0);
    EXPECT_LT(result.feasible, result.evaluated);
    EXPECT_GE(result.best_tokens_per_s_per_gpu, result.baseline_tokens_per_s_per_gpu);
    EXPECT_GT(result.baseline_tokens_per_s_per_gpu, 0);
}

}  // namespace
}  // namespace attune::sim
