#pragma once
// The one place that maps --policy and --backend names to their implementations, so that a new
// policy or backend is one line here and the loop never changes.

#include <attune/campaign/campaign.hpp>

#include <memory>
#include <optional>
#include <string>

namespace attune::campaign {

/// What a policy may need beyond the campaign state (LLM endpoint, seeds).
struct PolicyOptions {
    std::string name = "rules";
    std::string llm;          ///< --llm PROVIDER:MODEL
    std::string llm_url;      ///< --llm-url
    bool no_skills = false;   ///< --no-skills (the ablation)
    std::uint64_t seed = 1;
    double llm_timeout_s = 0;  ///< per HTTP attempt; 0 keeps the client's default (120 s)
    long llm_calls_used = 0;  ///< by this campaign before a --resume: the caps are per campaign
    long llm_tokens_used = 0;
};

/// The policy named `options.name`; throws InputError naming the accepted names otherwise.
std::unique_ptr<policy::Policy> make_policy(const PolicyOptions& options, const Context& context);

/// Throws InputError unless the policy can be made: a known name and, for `llm`, a valid --llm,
/// --llm-url and the provider's credentials in the environment. Checked before anything is written.
void check_policy(const PolicyOptions& options);

/// Throws InputError unless `name` is a backend this build has (sim, local, slurm).
void check_backend_name(const std::string& name);

/// Whether the policy uses the preflight (the nominal memory estimate) before a launch: every
/// policy but random search, which has none unless the user asks (`--preflight`).
bool policy_uses_preflight(const std::string& name);

/// The gate's --max-levers for the policy's candidates: the baselines (random, bayes, grid) change
/// whole configurations, so no limit; nullopt leaves the gate policy file's setting (rules, llm).
std::optional<int> policy_max_levers(const std::string& name);

/// The backend the campaign was started with; throws InputError naming the accepted names otherwise.
std::unique_ptr<launch::Backend> make_backend(const Context& context);

}  // namespace attune::campaign
