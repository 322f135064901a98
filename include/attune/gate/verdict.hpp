#pragma once

#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attune::gate {

/// One key that differs between the original recipe and the candidate.
struct Change {
    std::string key;
    std::string lever;  ///< canonical lever, empty for unknown keys
    KeyClass key_class = KeyClass::unknown;
    std::optional<recipe::Value> from;  ///< nullopt when the key is absent
    std::optional<recipe::Value> to;
    bool allowed = false;
    bool trial_only = false;
    std::string reason;
};

/// One invariant as it evaluated on both recipes.
struct InvariantCheck {
    std::string name;
    std::string baseline;
    std::string candidate;
    bool ok = false;
    std::string why;
};

/// The gate's judgement of a candidate against the original recipe.
struct Verdict {
    bool allowed = false;
    std::string framework;
    std::string rules_hash;
    std::vector<Change> changes;
    std::vector<InvariantCheck> invariants;
    std::vector<std::string> levers;  ///< the canonical levers that count against --max-levers

    /// The document `attune gate check --json` prints.
    [[nodiscard]] nlohmann::json to_json() const;
};

/// What a check is for: a final recipe, or a trial run that may set trial-only keys.
enum class Purpose { final_recipe, trial_run };

struct CheckOptions {
    Purpose purpose = Purpose::final_recipe;
    std::optional<int> max_levers;  ///< overrides the policy's
    bool allow_unknown = false;     ///< or the policy's allow_unknown
};

/// Judges `candidate` against the ORIGINAL recipe `baseline` (docs/gate.md): every
/// changed key by its class, duplicate keys, the invariants, and the number of levers.
Verdict check(const recipe::Document& baseline, const recipe::Document& candidate, const Adapter& adapter,
              const Rules& rules, const Policy& policy, const cluster::Cluster& cluster, const CheckOptions& options);

}  // namespace attune::gate
