#include "baseline_common.hpp"

#include <attune/policy/baselines.hpp>

#include <fmt/format.h>

namespace attune::policy {

namespace {

constexpr int k_draws = 20000;

class RandomPolicy final : public Policy {
public:
    explicit RandomPolicy(std::uint64_t seed) : m_seed(seed) {}

    [[nodiscard]] std::string name() const override { return "random"; }

    Decision propose(const CampaignState& state) override {
        const ConfigSpace& space = m_holder.space(state);
        const auto tried = m_holder.tried(state);
        std::mt19937_64 rng(baseline::call_seed(m_seed, state));
        // Rejection sampling: uniform over the valid points, since every draw is uniform over the space.
        for (int i = 0; i < k_draws; ++i) {
            const Point p = space.random_point(rng);
            if (tried.contains(p) || !space.consistent(p) || !space.admissible(p)) continue;
            return baseline::whole_configuration(space, p, "random",
                                                 "drawn uniformly from the valid configurations");
        }
        return Stop{fmt::format("no untried valid configuration in {} draws", k_draws)};
    }

private:
    std::uint64_t m_seed;
    baseline::SpaceHolder m_holder;
};

}  // namespace

std::unique_ptr<Policy> make_random_policy(std::uint64_t seed) {
    return std::make_unique<RandomPolicy>(seed);
}

}  // namespace attune::policy
