#pragma once
// The LLM agent: an LLM proposes one lever change per step through tools, with the skill set as
// context. Everything it says is untrusted: arguments are validated against the adapter's
// domains, pre-checked by the gate and the preflight, and answered with the reason when refused.

#include <attune/llm/client.hpp>
#include <attune/policy/lessons.hpp>
#include <attune/policy/policy.hpp>
#include <attune/policy/search_rules.hpp>

#include <filesystem>
#include <memory>

namespace attune::policy {

struct LlmPolicyOptions {
    bool skills = true;              ///< false: --no-skills, the ablation without the skill set
    int max_rounds_per_step = 8;     ///< tool rounds (chat calls) per step before falling back to rules
    int max_refusals_per_step = 3;   ///< refused proposals per step before falling back to rules
};

/// The skill set as system-prompt text: search rules, playbooks, and the campaign's lessons (the
/// files the campaign matched and copied, best first).
std::string skill_context(const std::filesystem::path& skills_dir, const std::vector<Lesson>& lessons);

/// The agent. On an LLM failure (unreachable, caps spent, too many refusals) the step falls
/// back to `fallback` (the rules policy), and that is journaled. `lessons`: the campaign's, as text
/// in its skill set.
std::unique_ptr<Policy> make_llm_policy(std::unique_ptr<llm::Client> client, std::unique_ptr<Policy> fallback,
                                        const LlmPolicyOptions& options, std::vector<Lesson> lessons);

}  // namespace attune::policy
