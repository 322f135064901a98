// The layout planner and what it changes in the rules policy, on the NeMo 70B example (tp 8 over a
// whole node, pp 4, full recompute, on 8 x 8 H100): greedy by predicted speed, recompute goes first
// and spends the memory that tp down needs; the plan takes tp down first.
#include "../../support/nemo70b_space.hpp"

#include <attune/campaign/trial_io.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/policy/layout_plan.hpp>
#include <attune/policy/rules_policy.hpp>

#include <gtest/gtest.h>

namespace attune::policy {
namespace {

struct Fixture : test_support::Nemo70bSpace {
    Point point(const Edits& edits) const {
        const auto p = space.point_of(edits);
        EXPECT_TRUE(p.has_value());
        return p.value_or(Point{});
    }
};

const Edits k_selective{{"model.activations_checkpoint_granularity", recipe::Value::string("selective")},
                        {"model.activations_checkpoint_method", recipe::Value::null()},
                        {"model.activations_checkpoint_num_layers", recipe::Value::null()}};
const Edits k_tp4{{"model.tensor_model_parallel_size", recipe::Value::number(4)},
                  {"model.make_vocab_size_divisible_by", recipe::Value::number(256)}};
const Edits k_overlap{{"model.ub_tp_comm_overlap", recipe::Value::boolean(true)}};

TEST(LayoutPlanner, TakesTpDownBeforeTheRecomputeMoveTheEstimateRanksFaster) {
    const Fixture f;
    const Point original = f.point({});
    const std::vector<std::optional<Point>> candidates{f.point(k_selective), f.point(k_tp4)};
    // The premise: one move ahead, selective recompute looks better.
    ASSERT_GT(f.space.estimate(*candidates[0]).tokens_per_s_per_gpu, f.space.estimate(*candidates[1]).tokens_per_s_per_gpu);
    const LayoutPlanner planner(f.space, 0.05);
    const auto choice = planner.choose(original, candidates, 1e9, 0.02, 1.0);
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->index, 1u);
    EXPECT_GE(choice->target_gain, 0.02) << "the target it heads for is predicted at least 2% faster";
}

TEST(LayoutPlanner, OffersNothingWhenNoCandidateLeadsToAFasterLayout) {
    const Fixture f;
    const LayoutPlanner planner(f.space, 0.05);
    // A flag changes no layout; and no layout fits under a memory limit of 1 GiB.
    EXPECT_FALSE(planner.choose(f.point({}), {f.point(k_overlap), std::nullopt}, 1e9, 0.02, 1.0).has_value());
    EXPECT_FALSE(planner.choose(f.point({}), {f.point(k_selective), f.point(k_tp4)}, 1.0, 0.02, 1.0).has_value());
}

TEST(LayoutPlanner, APlannedLayoutMayFillTheMarginItsStepsKeep) {
    const Fixture f;
    // A 30% margin: the steps stay under 56 of the H100's 80 GiB; the fastest layouts need more.
    const LayoutPlanner planner(f.space, 0.3);
    const std::vector<std::optional<Point>> candidates{f.point(k_selective), f.point(k_tp4)};
    // A cluster whose runs peak at twice the estimate leaves the target no room past the margin.
    const auto within_margin = planner.choose(f.point({}), candidates, 1e9, 0.02, 2.0);
    const auto to_capacity = planner.choose(f.point({}), candidates, 1e9, 0.02, 1.0);
    ASSERT_TRUE(within_margin.has_value());
    ASSERT_TRUE(to_capacity.has_value());
    EXPECT_GT(to_capacity->target_gain, within_margin->target_gain)
        << "a target above the margin but inside the capacity is planned for where the measured bias allows it";
    // An OOM's memory bounds the target too.
    EXPECT_FALSE(planner.choose(f.point({}), candidates, 1.0, 0.02, 1.0).has_value());
}

TEST(RulesPolicy, OnThe70BExampleProposesTpDownFirst) {
    const Fixture f;
    Measurement measured;
    measured.status = "ok";
    measured.tokens_per_s_per_gpu = 568;
    measured.peak_memory_gib = 30;
    measured.noise = 0.003;
    measured.facts["memory_headroom_gib"] = 49;
    CampaignState s;
    s.original = &f.loaded.document;
    s.adapter = f.loaded.adapter;
    s.cluster = &f.cluster;
    s.rules = &gate::default_rules(), s.gate_policy = &f.gate_policy;
    s.incumbent_measured = &measured;
    s.history.push_back({.n = 0, .kind = "baseline", .lever = "", .move = "baseline", .edits = {}, .incumbent = -1,
                         .outcome = "ok", .preflight = std::nullopt, .measured = measured, .accepted = false});
    s.budget_left_gpu_s = 200 * 3600;
    s.trial_cost_gpu_s = 10 * 3600;
    s.estimate = [&f](const Edits& edits) {
        return campaign::preflight_of(f.loaded.document.with_edits(edit_list(edits)), *f.loaded.adapter, f.cluster);
    };
    const auto decision = make_rules_policy(default_search_rules())->propose(s);
    ASSERT_TRUE(std::holds_alternative<Proposal>(decision)) << std::get<Stop>(decision).reason;
    const auto& p = std::get<Proposal>(decision);
    EXPECT_EQ(p.lever, "tp");
    EXPECT_EQ(p.edits.at("model.tensor_model_parallel_size").to_string(), "4");
    EXPECT_TRUE(p.stepping_stone) << "a planned move says so, for acceptance";
}

TEST(SearchRules, TheLeversAnotherMoveRequiresArePrerequisites) {
    const auto& rules = default_search_rules();
    EXPECT_TRUE(rules.is_prerequisite("distributed_optimizer"));
    EXPECT_TRUE(rules.is_prerequisite("overlap_grad_reduce"));
    EXPECT_FALSE(rules.is_prerequisite("tp"));
}

}  // namespace
}  // namespace attune::policy
