#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attune::gate {

/// The user's gate policy (gate/policy.default.yaml, or --gate-policy FILE over it).
struct Policy {
    std::vector<std::string> allow_numerics;  ///< levers whose numerics changes are allowed; "*" allows all
    bool allow_unknown = false;               ///< unknown keys are warnings instead of refusals
    std::optional<int> max_levers;            ///< most canonical levers one candidate may change
    int loss_parity_steps = 20;               ///< first steps the loss-parity check compares
    double loss_parity_tolerance = 0.02;      ///< relative departure that marks objective drift
    std::string source;                       ///< the files it came from, for messages
    std::string text;                         ///< their bytes, hashed with the rules

    [[nodiscard]] bool allows_numerics(const std::string& lever) const;
};

/// The default policy from attune's data folder, with `user_file` (when given) on top.
/// Throws InputError with `file:line: what was expected`.
Policy load_policy(const std::filesystem::path& data_dir, const std::optional<std::filesystem::path>& user_file);

}  // namespace attune::gate
