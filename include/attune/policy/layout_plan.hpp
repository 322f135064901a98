#pragma once
// Planning one-lever moves toward a layout the nominal model says is faster. Greedy by predicted
// speed, a tuner spends on the quickest win the memory that a later, larger win needs (recompute
// off first, and then tp down no longer fits), and where dp is 1 tp and pp can only move together.
// The planner picks, among the moves the search rules offer, one from which a faster layout stays
// reachable by further single moves through layouts that fit with a margin.

#include <attune/policy/config_space.hpp>

#include <map>
#include <optional>
#include <vector>

namespace attune::policy {

/// The memory limit a planned layout stays under: just below the estimate of the smallest layout that ran
/// out of memory (none: no limit).
double memory_limit_below(const std::optional<double>& oom_floor_gib);

class LayoutPlanner {
public:
    /// `memory_margin`: the fraction of HBM a planned layout leaves free (the allocator's
    /// fragmentation varies from cluster to cluster; the estimate assumes a typical one).
    LayoutPlanner(const ConfigSpace& space, double memory_margin);

    /// The index of the candidate to take, or nullopt when no candidate leads toward a layout
    /// predicted at least `min_gain` faster than `incumbent`. `candidates` are the points of the
    /// moves on offer (nullopt: outside the space); `memory_limit_gib` also bounds planned layouts
    /// (the estimate of a layout that ran out of memory). Levers that are flags stay as the
    /// incumbent has them: only the layout (tp, pp, vpp, cp, ep, micro batch, recompute) is planned.
    struct Choice {
        std::size_t index;   ///< of the candidate
        double target_gain;  ///< the target's predicted speed over the incumbent's, minus 1
    };
    /// `memory_bias`: the cluster's measured peak memory over the estimate (at least 1). The planned layout
    /// itself may fill the memory a single move could, the capacity over that bias, past the margin the
    /// steps before it keep: it is one trial, and an OOM there reverts it like any move's.
    [[nodiscard]] std::optional<Choice> choose(const Point& incumbent, const std::vector<std::optional<Point>>& candidates,
                                               double memory_limit_gib, double min_gain, double memory_bias) const;

    /// Whether `to` is reached from `from` by single moves toward it through layouts that fit with the
    /// margin (`to` itself up to the capacity over `memory_bias`), all below `memory_limit_gib`.
    [[nodiscard]] bool leads_to(const Point& from, const Point& to, double memory_limit_gib, double memory_bias) const;

    /// The same tp, pp, vpp, cp, ep, micro batch and recompute (the flags may differ).
    [[nodiscard]] bool same_layout(const Point& a, const Point& b) const;

private:
    struct Target {
        double tokens_per_s_per_gpu;
        double memory_gib;
        Point point;
    };
    [[nodiscard]] const std::vector<Target>& targets(const Point& incumbent) const;
    [[nodiscard]] bool fits(const Point& point, double limit_gib) const;
    [[nodiscard]] bool reachable(const Point& from, const Point& to, double limit_gib, double target_limit_gib) const;
    [[nodiscard]] bool is_layout(std::size_t dim) const;
    /// The memory a planned step may use, and the planned layout itself (see choose).
    [[nodiscard]] std::pair<double, double> limits(const sim::Estimate& now, double memory_limit_gib, double memory_bias) const;

    const ConfigSpace& m_space;
    double m_margin;
    /// Every consistent layout the estimate says fits, fastest first, per setting of the flag levers.
    mutable std::map<Point, std::vector<Target>> m_targets;
};

}  // namespace attune::policy
