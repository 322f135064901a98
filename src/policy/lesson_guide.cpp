#include <attune/policy/lesson_guide.hpp>

#include <algorithm>

namespace attune::policy {

namespace {

constexpr double k_slack = 0.05;           // a lesson's layout: within 5 % of the fastest predicted
constexpr std::size_t k_max_targets = 16;  // the nearest layouts to the lesson tried as its target

}  // namespace

LessonGuide::LessonGuide(const ConfigSpace& space, const LayoutPlanner& planner) : m_space(space), m_planner(planner) {}

bool LessonGuide::fits(const Point& point, const Bounds& bounds) const {
    const auto e = m_space.estimate(point);
    return e.valid && e.fits && e.memory_gib.total * bounds.memory_bias <= e.memory_gib.capacity &&
           (!bounds.oom_floor || e.memory_gib.total < *bounds.oom_floor);
}

std::optional<Point> LessonGuide::target(const Lesson& lesson, const Point& incumbent, const Bounds& bounds) const {
    if (!lesson.layout) return std::nullopt;
    struct Scored {
        double distance, speed;
        Point point;
    };
    std::vector<Scored> scored;
    double fastest = 0;
    std::vector<std::size_t> dims;
    for (const Field f : k_layout_fields)
        if (const auto d = dimension_of(m_space, f)) dims.push_back(*d);
    Point point = incumbent;
    // Odometer over the layout levers.
    const auto visit = [&](auto&& self, std::size_t i) -> void {
        if (i == dims.size()) {
            if (!m_space.consistent(point)) return;
            double speed = 0;
            if (bounds.estimated) {
                if (!fits(point, bounds)) return;
                speed = m_space.estimate(point).tokens_per_s_per_gpu;
                fastest = std::max(fastest, speed);
            }
            scored.push_back({lesson_distance(*lesson.layout, lesson.seq_len, m_space, point), speed, point});
            return;
        }
        for (std::size_t o = 0; o < m_space.dimensions()[dims[i]].options.size(); ++o) {
            point[dims[i]] = o;
            self(self, i + 1);
        }
        point[dims[i]] = incumbent[dims[i]];
    };
    visit(visit, 0);
    std::erase_if(scored, [&](const Scored& s) { return bounds.estimated && s.speed < (1 - k_slack) * fastest; });
    std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
        return a.distance != b.distance ? a.distance < b.distance : a.speed > b.speed;
    });
    std::size_t tried = 0;
    for (const auto& s : scored) {
        if (!m_space.admissible(s.point)) continue;
        if (!bounds.estimated || m_planner.leads_to(incumbent, s.point, memory_limit_below(bounds.oom_floor), bounds.memory_bias)) return s.point;
        if (++tried == k_max_targets) break;
    }
    return std::nullopt;
}

std::optional<Point> LessonGuide::toward(const Point& incumbent, std::size_t d, std::size_t to,
                                         const std::function<bool(const Point&)>& usable) const {
    const std::size_t from = incumbent[d];
    for (std::size_t o = to; o != from; o = o > from ? o - 1 : o + 1) {
        Point step = incumbent;
        step[d] = o;
        if (m_space.consistent(step) && usable(step) && m_space.admissible(step)) return step;
    }
    return std::nullopt;
}

std::optional<LessonGuide::Step> LessonGuide::step(const Lesson& lesson, const Point& incumbent, const Point& target,
                                                   const Bounds& bounds, const std::function<bool(const Point&)>& untried) const {
    // The lesson's campaign moved its levers in this order through layouts that fit (blind: this order).
    const auto rank = [&](Field f) {
        return std::distance(lesson.order.begin(), std::find(lesson.order.begin(), lesson.order.end(), lever_name(f)));
    };
    const auto usable = [&](const Point& p) {
        return (!bounds.estimated || (fits(p, bounds) && m_planner.leads_to(p, target, memory_limit_below(bounds.oom_floor), bounds.memory_bias))) &&
               untried(p);
    };
    std::optional<Step> best;
    double best_speed = -1;
    for (const Field f : k_layout_fields) {
        const auto d = dimension_of(m_space, f);
        if (!d || incumbent[*d] == target[*d]) continue;
        const auto point = toward(incumbent, *d, target[*d], usable);
        if (!point) continue;
        const double speed = bounds.estimated ? m_space.estimate(*point).tokens_per_s_per_gpu : 0;
        if (!best || rank(f) < rank(best->field) || (rank(f) == rank(best->field) && speed > best_speed))
            best = Step{*point, f}, best_speed = speed;
    }
    return best;
}

}  // namespace attune::policy
