#pragma once
// skills/rules/search.yaml as data: the moves of the rules policy, and the acceptance, failure
// and stop rules every campaign applies (skills/README.md describes the conventions).

#include <attune/gate/expression.hpp>
#include <attune/recipe/value.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attune::policy {

/// One single-lever move: set a value, or step to the next/previous one in the lever's domain.
struct Move {
    std::string id;                          ///< `phase/index`, stable while the file is
    std::string lever;
    std::vector<std::string> keys;           ///< the first of these the framework has; empty: the lever's first key
    std::optional<recipe::Value> set;
    int step = 0;                            ///< +1 up, -1 down, 0 with `set`
    std::optional<gate::Expression> guard;
    std::vector<std::pair<std::string, recipe::Value>> with;
    std::vector<std::pair<std::string, gate::Expression>> adjust;
    std::vector<std::pair<std::string, recipe::Value>> requires_values;
    std::string why;
};

struct Phase {
    std::string name;
    std::optional<gate::Expression> when;
    std::string why;
    std::vector<Move> moves;
    /// Its moves are taken only on the layout planner's path to a layout predicted faster, never
    /// tried on their own.
    bool planned_only = false;
    /// For a planned_only phase: when its moves may also lead toward layouts predicted only a little
    /// faster (exploration, once the other moves are spent); a plan toward a layout predicted at least
    /// 2% faster may take them whenever `when` holds. Absent: whenever `when` holds.
    std::optional<gate::Expression> explore_when;
};

/// What to do with a candidate that did not finish ok.
struct FailureRule {
    gate::Expression when;
    bool retry_once = false;                 ///< run it again once before reverting; else revert at once
    std::string why;
};

struct StopRule {
    gate::Expression when;
    std::string why;
};

struct Acceptance {
    gate::Expression min_gain;               ///< relative gain a candidate must beat (reads `noise`)
    std::optional<gate::Expression> keep_neutral;  ///< when a change within noise is kept (reads gain, min_gain, memory_freed_gib, prerequisite, stepping_stone, plan_gain, predicted_gain)
    /// when a candidate measured more than once, whose mean gain is inside its runs' noise band, is
    /// still accepted (reads gain: that mean, band, predicted_gain); absent, never
    std::optional<gate::Expression> accept_repeat;
    /// when the rules policy, its moves spent, runs a candidate reverted against this incumbent once
    /// more (reads runs, gain: the mean of its runs, predicted_gain, stepping_stone, prerequisite,
    /// budget_left_gpuh, trial_cost_gpuh); absent, never
    std::optional<gate::Expression> remeasure;
    gate::Expression confirm_best;           ///< when the final best is run again
};

struct SearchRules {
    Acceptance acceptance;
    std::vector<FailureRule> on_failure;
    std::vector<Phase> phases;
    std::vector<StopRule> stop;
    std::string source;

    /// Some move `requires` this lever: a change to it may be what makes a later move possible.
    [[nodiscard]] bool is_prerequisite(const std::string& lever) const;

    /// Reads a search rules file; throws InputError with `file:line: what was expected`.
    static SearchRules load(const std::filesystem::path& path);
};

/// <data_dir>/skills/rules/search.yaml, loaded once.
const SearchRules& default_search_rules();

}  // namespace attune::policy
