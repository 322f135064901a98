#pragma once
// The llm policy's command-line settings, shared by `attune tune` and `attune bench` so that both
// read the same flags with the same meaning.

#include <attune/campaign/factories.hpp>
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace attune::cli {

/// --llm, --llm-url, --llm-timeout and --no-skills as parsed (never a key: keys come from the
/// provider's environment variables).
struct LlmOptions {
    std::string llm;         ///< --llm PROVIDER:MODEL
    std::string llm_url;     ///< --llm-url: base URL as the provider's SDK takes it
    double timeout_s = 0;    ///< --llm-timeout: seconds per HTTP attempt; 0 keeps the client's default
    bool no_skills = false;  ///< --no-skills: the ablation without the skill set
};

/// Adds the four options to `command`; `picked_by` is how the user selects the llm policy there
/// ("--policy llm"), shown at the start of each option's help.
void add_llm_options(CLI::App& command, LlmOptions& options, const std::string& picked_by);

/// The factory's options for policy `name` with campaign seed `seed` and these LLM settings.
campaign::PolicyOptions policy_options(const std::string& name, std::uint64_t seed, const LlmOptions& llm);

}  // namespace attune::cli
