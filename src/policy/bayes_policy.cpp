#include "baseline_common.hpp"

#include <attune/policy/baselines.hpp>
#include <attune/policy/surrogate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attune::policy {

namespace {

constexpr int k_pool = 1500;    // random valid candidates scored per proposal
constexpr int k_draws = 30000;  // draws allowed to find them

class BayesPolicy final : public Policy {
public:
    BayesPolicy(std::uint64_t seed, int initial) : m_seed(seed), m_initial(initial) {}

    [[nodiscard]] std::string name() const override { return "bayes"; }

    Decision propose(const CampaignState& state) override {
        const ConfigSpace& space = m_holder.space(state);
        const auto history = m_holder.history(state);
        std::set<Point> tried;
        std::vector<Observation> observed;
        int finished = 0;
        for (const auto& t : history) {
            tried.insert(t.point);
            if (!t.tokens_per_s_per_gpu && !t.failed) continue;  // pending
            observed.push_back(
                {space.features(t.point),
                 t.tokens_per_s_per_gpu ? std::optional(std::log(*t.tokens_per_s_per_gpu)) : std::nullopt});
            ++finished;
        }
        std::mt19937_64 rng(baseline::call_seed(m_seed, state));
        // The candidate pool: random valid untried points, plus every one-lever neighbour of the best so far.
        std::vector<Point> pool;
        std::set<Point> pooled;
        for (int i = 0; i < k_draws && int(pool.size()) < k_pool; ++i) {
            const Point p = space.random_point(rng);
            if (!tried.contains(p) && !pooled.contains(p) && space.consistent(p))
                pool.push_back(p), pooled.insert(p);
        }
        const bool initial = finished - 1 < m_initial;  // the baseline does not count as a random point
        if (initial) {
            for (const Point& p : pool)
                if (space.admissible(p))
                    return baseline::whole_configuration(
                        space, p, "bayes-initial",
                        fmt::format("random initial point {} of {}", finished, m_initial));
            return Stop{"no untried valid configuration left"};
        }
        const Tried* best = nullptr;
        for (const auto& t : history)
            if (t.tokens_per_s_per_gpu && (!best || *t.tokens_per_s_per_gpu > *best->tokens_per_s_per_gpu))
                best = &t;
        if (best) {
            const auto& dims = space.dimensions();
            for (std::size_t d = 0; d < dims.size(); ++d)
                for (std::size_t o = 0; o < dims[d].options.size(); ++o) {
                    Point p = best->point;
                    p[d] = o;
                    if (!tried.contains(p) && !pooled.contains(p) && space.consistent(p))
                        pool.push_back(p), pooled.insert(p);
                }
        }
        // Score all, then take the best-scoring one the gate's batch invariants admit.
        std::vector<std::vector<double>> features;
        for (const Point& p : pool) features.push_back(space.features(p));
        const auto scores = acquisition(observed, features);
        std::vector<std::size_t> order(pool.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
        for (const std::size_t i : order)
            if (space.admissible(pool[i]))
                return baseline::whole_configuration(
                    space, pool[i], "bayes",
                    fmt::format("largest expected improvement x P(feasible) ({:.3g}) of {} candidates",
                                scores[i], pool.size()));
        return Stop{"no untried valid configuration left"};
    }

private:
    using Tried = baseline::Tried;
    std::uint64_t m_seed;
    int m_initial;
    baseline::SpaceHolder m_holder;
};

}  // namespace

std::unique_ptr<Policy> make_bayes_policy(std::uint64_t seed, int initial) {
    return std::make_unique<BayesPolicy>(seed, initial);
}

}  // namespace attune::policy
