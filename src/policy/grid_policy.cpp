#include "baseline_common.hpp"

#include <attune/policy/baselines.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::policy {

namespace {

class GridPolicy final : public Policy {
public:
    [[nodiscard]] std::string name() const override { return "grid"; }

    Decision propose(const CampaignState& state) override {
        const ConfigSpace& space = m_holder.space(state);
        if (!m_grid) m_grid = enumerate(space, state.cluster->gpus_per_node);
        const auto tried = m_holder.tried(state);
        // The gate's own invariants are checked lazily, in order: a campaign's budget reaches only a prefix.
        for (const Point& p : *m_grid)
            if (!tried.contains(p) && space.admissible(p))
                return baseline::whole_configuration(
                    space, p, "grid", fmt::format("next of {} grid configurations", m_grid->size()));
        return Stop{fmt::format("every one of the {} grid configurations tried or refused", m_grid->size())};
    }

private:
    /// tp, pp, cp, ep, vpp, micro batch in ascending order (tp inside a node); per layout the least
    /// recompute the memory estimate says fits; other levers stay as the recipe has them.
    static std::vector<Point> enumerate(const ConfigSpace& space, int gpus_per_node) {
        const auto& dims = space.dimensions();
        Point base = space.original_point().value_or(Point(dims.size(), 0));
        const std::vector<Field> order{Field::tp, Field::pp, Field::cp, Field::ep, Field::vpp, Field::mbs};
        std::vector<std::size_t> axes;
        for (const Field f : order)
            for (std::size_t i = 0; i < dims.size(); ++i)
                if (dims[i].field == f) axes.push_back(i);
        std::optional<std::size_t> recompute;
        for (std::size_t i = 0; i < dims.size(); ++i)
            if (dims[i].field == Field::recompute) recompute = i;
        std::vector<Point> grid;
        Point p = base;
        const auto visit = [&](auto&& self, std::size_t depth) -> void {
            if (depth == axes.size()) {
                if (option_of(space, p, Field::tp).value_or(1) > gpus_per_node) return;
                // Recompute options are ordered none < selective < full: the first that fits.
                const std::size_t levels = recompute ? dims[*recompute].options.size() : 1;
                for (std::size_t r = 0; r < levels; ++r) {
                    if (recompute) p[*recompute] = r;
                    if (!space.consistent(p)) return;
                    if (!space.estimate(p).fits) continue;
                    grid.push_back(p);
                    return;
                }
                return;
            }
            for (std::size_t o = 0; o < dims[axes[depth]].options.size(); ++o) {
                p[axes[depth]] = o;
                self(self, depth + 1);
            }
        };
        visit(visit, 0);
        return grid;
    }

    baseline::SpaceHolder m_holder;
    std::optional<std::vector<Point>> m_grid;
};

}  // namespace

std::unique_ptr<Policy> make_grid_policy() { return std::make_unique<GridPolicy>(); }

}  // namespace attune::policy
