#include <attune/campaign/factories.hpp>
#include <attune/core/error.hpp>
#include <attune/llm/client.hpp>
#include <attune/policy/llm_policy.hpp>
#include <attune/policy/baselines.hpp>
#include <attune/policy/rules_policy.hpp>
#include <attune/sim/world.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace attune::campaign {

namespace {

constexpr std::array k_policies = {"rules", "llm", "random", "bayes", "grid"};
constexpr int k_no_lever_limit = 1000;
constexpr std::array k_backends = {"sim", "local", "slurm"};

std::unique_ptr<llm::Client> llm_client(const PolicyOptions& options) {
    if (options.llm.empty()) throw InputError("--policy llm needs --llm PROVIDER:MODEL (openai, anthropic or bedrock)");
    if (const auto scheme = options.llm_url.find("://"); scheme != std::string::npos &&
                                                          options.llm_url.find('@') < options.llm_url.find('/', scheme + 3))
        throw InputError("--llm-url " + options.llm_url.substr(0, scheme + 3) +
                         "...: must not carry credentials; attune reads keys from the provider's environment variables");
    llm::Config config = llm::parse_llm_option(options.llm, options.llm_url);
    if (options.llm_timeout_s > 0)
        config.timeout = std::chrono::milliseconds(static_cast<long long>(options.llm_timeout_s * 1000));
    config.max_calls = std::max(0, config.max_calls - int(options.llm_calls_used));
    config.max_tokens = std::max(0L, config.max_tokens - options.llm_tokens_used);
    return llm::make_client(config);
}

}  // namespace

void check_policy(const PolicyOptions& options) {
    if (std::find(k_policies.begin(), k_policies.end(), options.name) == k_policies.end())
        throw InputError(fmt::format("--policy {}: expected one of {}", options.name, fmt::join(k_policies, ", ")));
    if (options.name == "llm") llm_client(options);
}

std::unique_ptr<policy::Policy> make_policy(const PolicyOptions& options, const Context& context) {
    check_policy(options);
    if (options.name == "random") return policy::make_random_policy(options.seed);
    if (options.name == "bayes") return policy::make_bayes_policy(options.seed);
    if (options.name == "grid") return policy::make_grid_policy();
    auto rules = policy::make_rules_policy(policy::default_search_rules(), context.lessons);
    if (options.name == "llm")
        return policy::make_llm_policy(llm_client(options), std::move(rules), {.skills = !options.no_skills}, context.lessons);
    return rules;
}

void check_backend_name(const std::string& name) {
    if (std::find(k_backends.begin(), k_backends.end(), name) == k_backends.end())
        throw InputError(fmt::format("--backend {}: expected one of {}", name, fmt::join(k_backends, ", ")));
}

bool policy_uses_preflight(const std::string& name) { return name != "random"; }

std::optional<int> policy_max_levers(const std::string& name) {
    if (name == "random" || name == "bayes" || name == "grid") return k_no_lever_limit;
    return std::nullopt;
}

std::unique_ptr<launch::Backend> make_backend(const Context& context) {
    check_backend_name(context.backend);
    if (context.backend == "local") return launch::make_local_backend(context.cluster);
    if (context.backend == "slurm") return launch::make_slurm_backend(context.cluster, context.max_queue_wait_s);
    return launch::make_sim_backend(context.cluster, context.world_seed ? context.world_seed : sim::k_default_world_seed);
}

}  // namespace attune::campaign
