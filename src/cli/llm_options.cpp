#include <attune/cli/llm_options.hpp>
#include <attune/cli/validators.hpp>

#include <CLI/CLI.hpp>

namespace attune::cli {

void add_llm_options(CLI::App& command, LlmOptions& options, const std::string& picked_by) {
    command.add_option("--llm", options.llm, picked_by + ": PROVIDER:MODEL (openai, anthropic, bedrock)");
    command.add_option("--llm-url", options.llm_url, picked_by + ": base URL as the provider's SDK takes it");
    command
        .add_option("--llm-timeout", options.timeout_s,
                    picked_by + ": seconds per HTTP attempt (default 120)")
        ->check(positive_number());
    command.add_flag("--no-skills", options.no_skills, picked_by + ": without the skill set (ablation)");
}

campaign::PolicyOptions policy_options(const std::string& name, std::uint64_t seed, const LlmOptions& llm) {
    return {.name = name,
            .llm = llm.llm,
            .llm_url = llm.llm_url,
            .no_skills = llm.no_skills,
            .seed = seed,
            .llm_timeout_s = llm.timeout_s};
}

}  // namespace attune::cli
