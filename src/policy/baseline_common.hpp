#pragma once
// What the baseline policies (random, bayes, grid) share: the lever space built once per campaign,
// and the campaign history read back as points of that space.

#include <attune/policy/config_space.hpp>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attune::policy::baseline {

/// One trial of the history as a point of the space.
struct Tried {
    Point point;
    std::optional<double> tokens_per_s_per_gpu;  ///< measured and ok
    bool failed = false;                         ///< refused, predicted-oom, infeasible or a failed run
};

/// The space (built on first use) and a cache of history edits -> points.
class SpaceHolder {
public:
    const ConfigSpace& space(const CampaignState& state);
    /// Every trial of the history that lies in the space, and whether it ran, failed or is pending.
    std::vector<Tried> history(const CampaignState& state);
    /// The points already proposed (any outcome), as keys.
    std::set<Point> tried(const CampaignState& state);

private:
    std::unique_ptr<ConfigSpace> m_space;
    std::map<std::string, std::optional<Point>> m_points;
};

/// A proposal that sets every lever of the space to `point`.
Proposal whole_configuration(const ConfigSpace& space, const Point& point, const std::string& move,
                             const std::string& why);

/// A deterministic generator for this call: same seed and history, same draws (so `--resume` proposes the
/// same).
std::uint64_t call_seed(std::uint64_t seed, const CampaignState& state);

}  // namespace attune::policy::baseline
