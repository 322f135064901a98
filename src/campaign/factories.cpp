#include <attune/campaign/factories.hpp>
#include <attune/core/error.hpp>
#include <attune/policy/baselines.hpp>
#include <attune/policy/rules_policy.hpp>
#include <attune/sim/world.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace attune::campaign {

namespace {

constexpr std::array k_policies = {"rules", "random", "bayes", "grid"};
constexpr int k_no_lever_limit = 1000;
constexpr std::array k_backends = {"sim"};

}  // namespace

void check_policy_name(const std::string& name) {
    if (std::find(k_policies.begin(), k_policies.end(), name) == k_policies.end())
        throw InputError(fmt::format("--policy {}: expected one of {}", name, fmt::join(k_policies, ", ")));
}

std::unique_ptr<policy::Policy> make_policy(const PolicyOptions& options, const Context&) {
    check_policy_name(options.name);
    if (options.name == "random") return policy::make_random_policy(options.seed);
    if (options.name == "bayes") return policy::make_bayes_policy(options.seed);
    if (options.name == "grid") return policy::make_grid_policy();
    return policy::make_rules_policy(policy::default_search_rules());
}

bool policy_uses_preflight(const std::string& name) { return name != "random"; }

std::optional<int> policy_max_levers(const std::string& name) {
    if (name == "random" || name == "bayes" || name == "grid") return k_no_lever_limit;
    return std::nullopt;
}

std::unique_ptr<launch::Backend> make_backend(const Context& context) {
    if (context.backend == "sim")
        return launch::make_sim_backend(context.cluster, context.world_seed ? context.world_seed : sim::k_default_world_seed);
    throw InputError(fmt::format("--backend {}: expected one of {}", context.backend, fmt::join(k_backends, ", ")));
}

}  // namespace attune::campaign
