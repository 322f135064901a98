#include <attune/campaign/factories.hpp>
#include <attune/core/error.hpp>
#include <attune/policy/rules_policy.hpp>
#include <attune/sim/world.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace attune::campaign {

namespace {

constexpr std::array k_policies = {"rules"};
constexpr std::array k_backends = {"sim", "local", "slurm"};

}  // namespace

void check_policy_name(const std::string& name) {
    if (std::find(k_policies.begin(), k_policies.end(), name) == k_policies.end())
        throw InputError(fmt::format("--policy {}: expected one of {}", name, fmt::join(k_policies, ", ")));
}

std::unique_ptr<policy::Policy> make_policy(const PolicyOptions& options, const Context&) {
    check_policy_name(options.name);
    return policy::make_rules_policy(policy::default_search_rules());
}

void check_backend_name(const std::string& name) {
    if (std::find(k_backends.begin(), k_backends.end(), name) == k_backends.end())
        throw InputError(fmt::format("--backend {}: expected one of {}", name, fmt::join(k_backends, ", ")));
}

std::unique_ptr<launch::Backend> make_backend(const Context& context) {
    check_backend_name(context.backend);
    if (context.backend == "local") return launch::make_local_backend(context.cluster);
    if (context.backend == "slurm") return launch::make_slurm_backend(context.cluster, context.max_queue_wait_s);
    return launch::make_sim_backend(context.cluster, context.world_seed ? context.world_seed : sim::k_default_world_seed);
}

}  // namespace attune::campaign
