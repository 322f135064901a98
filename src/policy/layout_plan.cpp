#include <attune/policy/layout_plan.hpp>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>

namespace attune::policy {

namespace {

// Enough targets to get past the fast layouts no offered move leads to, few enough to stay cheap.
constexpr std::size_t k_max_targets = 64;
// A step on the way may be predicted slower than the incumbent by 10%, or by three quarters of what the
// target gains (the acceptance's keep_neutral keeps such a step, skills/rules/search.yaml): a detour
// to a layout 19% faster may cross one 11% slower, never one that costs more than the target repays.
constexpr double k_step_slowdown = 0.1;
constexpr double k_step_share_of_gain = 0.75;

std::size_t distance(std::size_t a, std::size_t b) { return a > b ? a - b : b - a; }

/// Every coordinate of `candidate` is at least as close to `target` as `from`'s, one closer.
bool toward(const Point& from, const Point& candidate, const Point& target) {
    bool closer = false;
    for (std::size_t d = 0; d < target.size(); ++d) {
        const std::size_t before = distance(from[d], target[d]), after = distance(candidate[d], target[d]);
        if (after > before) return false;
        closer = closer || after < before;
    }
    return closer;
}

}  // namespace

double memory_limit_below(const std::optional<double>& oom_floor_gib) {
    constexpr double k_below_gib = 0.01;
    return oom_floor_gib ? *oom_floor_gib - k_below_gib : std::numeric_limits<double>::infinity();
}

LayoutPlanner::LayoutPlanner(const ConfigSpace& space, double memory_margin)
    : m_space(space), m_margin(memory_margin) {}

bool LayoutPlanner::is_layout(std::size_t dim) const { return is_layout_field(m_space.dimensions()[dim].field); }

bool LayoutPlanner::same_layout(const Point& a, const Point& b) const {
    for (std::size_t d = 0; d < a.size(); ++d)
        if (is_layout(d) && a[d] != b[d]) return false;
    return true;
}

bool LayoutPlanner::fits(const Point& point, double limit_gib) const {
    if (!m_space.consistent(point)) return false;
    const sim::Estimate e = m_space.estimate(point);
    return e.valid && e.fits && e.memory_gib.total <= limit_gib;
}

const std::vector<LayoutPlanner::Target>& LayoutPlanner::targets(const Point& incumbent) const {
    const auto& dims = m_space.dimensions();
    Point flags;
    for (std::size_t d = 0; d < dims.size(); ++d)
        if (!is_layout(d)) flags.push_back(incumbent[d]);
    auto [it, inserted] = m_targets.try_emplace(flags);
    if (!inserted) return it->second;
    std::vector<Target>& out = it->second;
    Point p = incumbent;
    // Odometer over the layout levers; the flags keep the incumbent's values.
    const std::function<void(std::size_t)> visit = [&](std::size_t d) {
        if (d == dims.size()) {
            if (!m_space.consistent(p)) return;
            const sim::Estimate e = m_space.estimate(p);
            if (e.valid && e.fits)
                out.push_back({e.tokens_per_s_per_gpu, e.memory_gib.total, p});
            return;
        }
        if (!is_layout(d)) return visit(d + 1);
        for (std::size_t o = 0; o < dims[d].options.size(); ++o) {
            p[d] = o;
            visit(d + 1);
        }
        p[d] = incumbent[d];
    };
    visit(0);
    std::stable_sort(out.begin(), out.end(),
                     [](const Target& a, const Target& b) { return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu; });
    return out;
}

bool LayoutPlanner::reachable(const Point& from, const Point& to, double limit_gib, double target_limit_gib) const {
    std::set<Point> seen;
    const std::function<bool(const Point&)> search = [&](const Point& s) {
        if (s == to) return true;
        if (!seen.insert(s).second) return false;
        for (std::size_t d = 0; d < s.size(); ++d) {
            if (s[d] == to[d]) continue;
            // One lever at a time, each only toward the target (a step may stop between).
            const std::size_t lo = std::min(s[d], to[d]), hi = std::max(s[d], to[d]);
            for (std::size_t o = lo; o <= hi; ++o) {
                if (o == s[d]) continue;
                Point next = s;
                next[d] = o;
                if (fits(next, next == to ? target_limit_gib : limit_gib) && search(next)) return true;
            }
        }
        return false;
    };
    return search(from);
}

std::pair<double, double> LayoutPlanner::limits(const sim::Estimate& now, double memory_limit_gib, double memory_bias) const {
    const double limit = std::min(memory_limit_gib, now.memory_gib.capacity * (1 - m_margin));
    return {limit, std::max(limit, std::min(memory_limit_gib, now.memory_gib.capacity / memory_bias))};
}

bool LayoutPlanner::leads_to(const Point& from, const Point& to, double memory_limit_gib, double memory_bias) const {
    const sim::Estimate now = m_space.estimate(from);
    if (!now.valid) return false;
    const auto [limit, target_limit] = limits(now, memory_limit_gib, memory_bias);
    return reachable(from, to, limit, target_limit);
}

std::optional<LayoutPlanner::Choice> LayoutPlanner::choose(const Point& incumbent,
                                                           const std::vector<std::optional<Point>>& candidates,
                                                           double memory_limit_gib, double min_gain,
                                                           double memory_bias) const {
    const sim::Estimate now = m_space.estimate(incumbent);
    if (!now.valid) return std::nullopt;
    const auto [limit, target_limit] = limits(now, memory_limit_gib, memory_bias);
    std::size_t considered = 0;
    for (const Target& target : targets(incumbent)) {
        if (now.fits && target.tokens_per_s_per_gpu < now.tokens_per_s_per_gpu * (1 + min_gain)) break;
        if (target.memory_gib > target_limit) continue;
        if (++considered > k_max_targets) break;
        std::optional<std::size_t> best;
        double best_speed = 0;
        const double gain = target.tokens_per_s_per_gpu / now.tokens_per_s_per_gpu - 1;
        const double slowest = now.tokens_per_s_per_gpu * (1 - std::max(k_step_slowdown, k_step_share_of_gain * gain));
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            const auto& c = candidates[i];
            if (!c || !toward(incumbent, *c, target.point) || !fits(*c, *c == target.point ? target_limit : limit)) continue;
            const double speed = m_space.estimate(*c).tokens_per_s_per_gpu;
            if (now.fits && speed < slowest) continue;
            if (best && speed <= best_speed) continue;
            if (!reachable(*c, target.point, limit, target_limit)) continue;
            best = i;
            best_speed = speed;
        }
        if (best) return Choice{*best, target.tokens_per_s_per_gpu / now.tokens_per_s_per_gpu - 1};
    }
    return std::nullopt;
}

}  // namespace attune::policy
