// Where a lesson leads on the NeMo 70B example (tp 8 over a whole node, pp 4, full recompute, on 8 x 8
// H100): the published 64 x H100 layout (tp 4, pp 8, vpp 5, no recompute) translated to this space.
#include "../../support/nemo70b_space.hpp"

#include <attune/policy/layout_plan.hpp>
#include <attune/policy/lesson_guide.hpp>

#include <gtest/gtest.h>

namespace attune::policy {
namespace {

struct Fixture : test_support::Nemo70bSpace {
    LayoutPlanner planner{space, 0.05};
    LessonGuide guide{space, planner};
    Point original = space.original_point().value();
};

Lesson published_70b() {
    Lesson l;
    l.name = "published";
    l.seq_len = 8192;
    l.layout = LessonLayout{.tp = 4, .nvlink_reach = 8, .pp = 8, .vpp = 5, .layers = 80, .cp = 1, .ep = 1, .experts = 0,
                            .micro_batch = 1, .recompute = "none"};
    return l;
}

TEST(LessonDistance, IsZeroAtTheLessonsOwnLayoutAndALevelOfRecomputeCountsTwo) {
    const Fixture f;
    const Lesson lesson = published_70b();
    // The original: tp 8 (one doubling off), pp 4 (20 layers per stage against 10: one), no vpp (5 against
    // 1: log2 5), full recompute (two levels: four).
    EXPECT_NEAR(lesson_distance(*lesson.layout, lesson.seq_len, f.space, f.original), 1 + 1 + std::log2(5.0) + 4, 1e-9);
    const LessonLayout here = layout_at(f.space, f.original, 8);
    EXPECT_EQ(here.tp, 8);
    EXPECT_EQ(here.recompute, "full");
    EXPECT_EQ(lesson_distance(here, lesson.seq_len, f.space, f.original), 0);
}

TEST(LessonGuide, LeadsToALayoutWithoutRecomputeThatFitsOneReachableLeverAtATime) {
    const Fixture f;
    const LessonGuide::Bounds bounds{};
    const auto target = f.guide.target(published_70b(), f.original, bounds);
    ASSERT_TRUE(target.has_value());
    const LessonLayout there = layout_at(f.space, *target, 8);
    EXPECT_EQ(there.recompute, "none");
    EXPECT_LE(there.tp, 4);
    const auto e = f.space.estimate(*target);
    EXPECT_TRUE(e.fits);
    EXPECT_GT(e.tokens_per_s_per_gpu, f.space.estimate(f.original).tokens_per_s_per_gpu * 1.3);
    // Step by step, each one lever and each fitting, it gets there.
    Point at = f.original;
    for (int steps = 0; !f.planner.same_layout(at, *target); ++steps) {
        ASSERT_LT(steps, 12) << "no path to the target";
        const auto step = f.guide.step(published_70b(), at, *target, bounds, [](const Point&) { return true; });
        ASSERT_TRUE(step.has_value()) << f.space.describe(at);
        int moved = 0;
        for (std::size_t d = 0; d < at.size(); ++d) moved += step->point[d] != at[d] ? 1 : 0;
        EXPECT_EQ(moved, 1);
        EXPECT_TRUE(f.space.estimate(step->point).fits);
        at = step->point;
    }
}

TEST(LessonGuide, BlindTheNearestConsistentLayoutIsTheTarget) {
    const Fixture f;
    const auto target = f.guide.target(published_70b(), f.original, LessonGuide::Bounds{.estimated = false});
    ASSERT_TRUE(target.has_value());
    const LessonLayout there = layout_at(f.space, *target, 8);
    EXPECT_EQ(there.tp, 4);
    EXPECT_EQ(there.pp, 8);
    EXPECT_EQ(there.vpp, 5);
    EXPECT_EQ(there.recompute, "none");
}

}  // namespace
}  // namespace attune::policy
