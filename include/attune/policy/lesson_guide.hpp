#pragma once
// Where a lesson leads in this recipe's space (docs/campaign.md, "Lessons"): its layout translated to
// a target among the layouts the estimate finds near-best, and the next single-lever step toward it
// through layouts that fit. The rules policy turns a step into a proposal.

#include <attune/policy/config_space.hpp>
#include <attune/policy/layout_plan.hpp>
#include <attune/policy/lessons.hpp>

#include <functional>
#include <optional>

namespace attune::policy {

class LessonGuide {
public:
    /// `space` and `planner` must outlive the guide.
    LessonGuide(const ConfigSpace& space, const LayoutPlanner& planner);

    /// What the campaign knows that bounds the layouts a lesson may lead through.
    struct Bounds {
        bool estimated = true;                          ///< false: blind, nothing is predicted
        double memory_bias = 1;                         ///< the cluster's measured peak over the estimate
        std::optional<double> oom_floor;                ///< the estimate of the smallest layout that ran out of memory
    };

    /// The lesson's layout in this space: among the consistent layouts predicted to fit, within 5% of the
    /// fastest of them, the nearest to the lesson's (the lesson breaks the ties the estimate cannot, and
    /// never leads far from what it predicts) that the planner can reach from `incumbent`; blind, the
    /// nearest consistent one. The flags stay as the incumbent has them.
    [[nodiscard]] std::optional<Point> target(const Lesson& lesson, const Point& incumbent, const Bounds& bounds) const;

    struct Step {
        Point point;
        Field field;
    };
    /// One layout lever of `incumbent` moved toward `target` (as far as fits when the target's value does
    /// not yet), to a layout from which `target` stays reachable and that `untried` accepts: in the order
    /// the lesson's campaign first moved its levers, then the fastest predicted.
    [[nodiscard]] std::optional<Step> step(const Lesson& lesson, const Point& incumbent, const Point& target, const Bounds& bounds,
                                           const std::function<bool(const Point&)>& untried) const;

private:
    [[nodiscard]] bool fits(const Point& point, const Bounds& bounds) const;
    [[nodiscard]] std::optional<Point> toward(const Point& incumbent, std::size_t d, std::size_t to,
                                              const std::function<bool(const Point&)>& usable) const;

    const ConfigSpace& m_space;
    const LayoutPlanner& m_planner;
};

}  // namespace attune::policy
