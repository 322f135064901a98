#include <attune/gate/verdict.hpp>
#include <attune/util/hash.hpp>
#include <attune/util/strings.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace attune::gate {

namespace {

std::string origin_note(const recipe::Leaf* leaf) {
    if (leaf == nullptr) return {};
    if (leaf->origin == recipe::Origin::interpolation) return " (written as " + leaf->written + ")";
    if (leaf->origin == recipe::Origin::alias) return " (through a YAML alias or merge key, line " + std::to_string(leaf->mark.line) + ")";
    if (leaf->origin == recipe::Origin::base) return " (from the base config the command at line " + std::to_string(leaf->mark.line) + " names)";
    return {};
}

/// Judges one changed key by its rule's class; the invariants and the lever count come later.
void judge(Change& change, const KeyRule* rule, const Policy& policy, const CheckOptions& options,
           const recipe::Document& candidate, const Adapter& adapter, const cluster::Cluster& cluster) {
    const bool allow_unknown = options.allow_unknown || policy.allow_unknown;
    if (rule == nullptr) {
        change.allowed = allow_unknown;
        change.reason = allow_unknown ? "unknown key, allowed by --allow-unknown: attune cannot tell what it changes"
                                      : "unknown key: no rule in " + adapter.source() +
                                            " says what it changes; refused in strict mode (--allow-unknown accepts it)";
        return;
    }
    change.lever = rule->lever;
    change.key_class = rule->key_class;
    change.trial_only = rule->trial_only;
    if (rule->trial_only && options.purpose == Purpose::trial_run) {
        change.allowed = true;
        change.reason = "trial-only: " + rule->why;
        return;
    }
    switch (rule->key_class) {
        case KeyClass::objective:
            change.reason = "objective: " + rule->why + (rule->trial_only ? " (allowed only for trial runs)" : "");
            return;
        case KeyClass::numerics:
            change.allowed = policy.allows_numerics(rule->lever);
            change.reason = change.allowed ? "numerics, allowed by the gate policy: " + rule->why
                                           : "numerics: " + rule->why + "; allow it with 'allow_numerics: [" +
                                                 rule->lever + "]' in a --gate-policy file";
            break;
        case KeyClass::derived: {
            // Null (or no key) leaves the derivation to the framework; only a written value can disagree.
            if (!rule->derived_from || !change.to || change.to->is_null()) {
                change.allowed = true;
                change.reason = "derived: " + rule->why;
                return;
            }
            const auto expected = rule->derived_from->evaluate(
                [&](const std::string& name) { return adapter.quantity(candidate, name, cluster); });
            const auto actual = change.to ? change.to->as_number() : std::nullopt;
            change.allowed = !expected || (actual && std::fabs(*actual - *expected) < 1e-9);
            change.reason = change.allowed ? "derived: " + rule->why
                                           : "derived: must equal " + rule->derived_from->text() + " = " +
                                                 util::format_number(*expected);
            return;
        }
        case KeyClass::performance:
            change.allowed = true;
            change.reason = "performance: " + rule->why;
            break;
        case KeyClass::unknown: break;
    }
    if (change.allowed && change.to) {
        if (const auto violation = rule->domain.violation(*change.to); !violation.empty()) {
            change.allowed = false;
            change.reason = "outside the lever's domain: " + violation;
        }
    }
}

std::vector<Change> diff(const recipe::Document& baseline, const recipe::Document& candidate, const Adapter& adapter,
                         const Policy& policy, const CheckOptions& options, const cluster::Cluster& cluster) {
    std::vector<std::string> paths;
    std::set<std::string> seen;
    for (const auto* document : {&baseline, &candidate})
        for (const auto& leaf : document->leaves())
            if (seen.insert(leaf.path).second) paths.push_back(leaf.path);
    std::vector<Change> changes;
    for (const auto& path : paths) {
        const auto* before = baseline.find_leaf(path);
        const auto* after = candidate.find_leaf(path);
        const KeyRule* rule = adapter.classify(path);
        const auto numeric = rule != nullptr && rule->domain.numeric() ? recipe::Value::Numeric::coerce : recipe::Value::Numeric::strict;
        if (before != nullptr && after != nullptr && before->value.same_as(after->value, numeric)) continue;
        Change change;
        change.key = path;
        if (before != nullptr) change.from = before->value;
        if (after != nullptr) change.to = after->value;
        judge(change, rule, policy, options, candidate, adapter, cluster);
        change.reason += origin_note(after);
        changes.push_back(std::move(change));
    }
    return changes;
}

/// A key written twice is refused: loaders keep one silently, so the file says two things.
void refuse_duplicates(std::vector<Change>& changes, const recipe::Document& document, const char* which,
                       const Adapter& adapter) {
    for (const auto& duplicate : document.duplicates()) {
        auto found = std::find_if(changes.begin(), changes.end(), [&](const Change& c) { return c.key == duplicate.path; });
        if (found == changes.end()) {
            Change change;
            change.key = duplicate.path;
            if (const auto* value = document.find(duplicate.path)) change.from = change.to = *value;
            if (const auto* rule = adapter.classify(duplicate.path)) {
                change.lever = rule->lever;
                change.key_class = rule->key_class;
            }
            changes.push_back(std::move(change));
            found = changes.end() - 1;
        }
        found->allowed = false;
        found->reason = std::string("duplicate key in the ") + which + " (lines " + std::to_string(duplicate.first_line) +
                        " and " + std::to_string(duplicate.second_line) + "): the loader keeps one of them silently (YAML loaders one, argparse the last)";
    }
}

std::string show(const std::optional<double>& value) { return value ? util::format_number(*value) : "n/a"; }

/// Where an invariant could not be judged because a quantity it reads is unknown: refused when the
/// change moves one of its inputs (the gate never lets an invariant pass on what it cannot tell),
/// skipped as not applicable otherwise, or when the family has no such quantity at all.
std::optional<InvariantCheck> unjudged(const Invariant& invariant, const Expression& expression, const Adapter& adapter,
                                       const Expression::Lookup& on_baseline, const Expression::Lookup& on_candidate) {
    std::vector<std::string> unknown;
    std::vector<std::string> moved;
    for (const auto& name : expression.names()) {
        const auto before = on_baseline(name);
        const auto after = on_candidate(name);
        if (!after || (invariant.same && !before)) {
            if (!adapter.has_quantity(name)) return std::nullopt;
            unknown.push_back(name);
        }
        if (before.has_value() != after.has_value() || (before && *before != *after)) moved.push_back(name);
    }
    if (unknown.empty() || moved.empty()) return std::nullopt;
    std::vector<std::string> hints;
    for (const auto& name : unknown) hints.push_back(name + ": " + adapter.how_to_give(name));
    return InvariantCheck{invariant.name, "unknown", "unknown", false,
                          "the change moves " + util::join(moved, ", ") + ", and " + util::join(unknown, ", ") +
                              (unknown.size() > 1 ? " are" : " is") + " unknown, so attune cannot tell whether it holds (" +
                              util::join(hints, "; ") + "). " + invariant.why};
}

std::vector<InvariantCheck> check_invariants(const recipe::Document& baseline, const recipe::Document& candidate,
                                             const Adapter& adapter, const Rules& rules, const cluster::Cluster& cluster) {
    const auto lookup_in = [&](const recipe::Document& document) -> Expression::Lookup {
        return [&adapter, &document, &cluster](const std::string& name) { return adapter.quantity(document, name, cluster); };
    };
    const auto on_baseline = lookup_in(baseline);
    const auto on_candidate = lookup_in(candidate);
    std::vector<InvariantCheck> checks;
    for (const auto& invariant : rules.invariants()) {
        // A `when` over a value the recipe builds from a variable it does not give may hold: judged.
        const auto applies = [&](const auto& lookup, const recipe::Document& document) {
            if (!invariant.when) return true;
            if (const auto value = invariant.when->evaluate(lookup)) return *value != 0;
            const auto names = invariant.when->names();
            return std::any_of(names.begin(), names.end(), [&](const std::string& name) { return adapter.unresolved(document, name); });
        };
        const bool applies_before = applies(on_baseline, baseline);
        const bool applies_after = applies(on_candidate, candidate);
        // `same` compares the two sides, so it applies when either meets `when`; `holds` judges the
        // candidate, so the candidate must meet it (turning a feature off drops its requirement).
        if (invariant.same ? !(applies_before || applies_after) : !applies_after) continue;
        const auto& expression = invariant.same ? *invariant.same : *invariant.holds;
        const auto before = expression.evaluate(on_baseline);
        const auto after = expression.evaluate(on_candidate);
        if (!after || (invariant.same && !before)) {
            if (auto check = unjudged(invariant, expression, adapter, on_baseline, on_candidate)) checks.push_back(std::move(*check));
            continue;
        }
        InvariantCheck check{invariant.name, {}, {}, false, invariant.why};
        if (invariant.same) {
            check.baseline = show(before);
            check.candidate = show(after);
            check.ok = std::fabs(*before - *after) <= 1e-9 * std::max(1.0, std::fabs(*before));
        } else {
            // The original's result counts only where the invariant applied to it.
            const bool judged_before = applies_before && before.has_value();
            const bool held_before = judged_before && *before != 0;
            check.baseline = judged_before ? (held_before ? "holds" : "broken") : "n/a";
            check.candidate = *after != 0 ? "holds" : "broken";
            // Broken in the working original too: the job shape attune assumed is wrong, not the edit.
            check.ok = *after != 0 || (judged_before && !held_before);
            if (judged_before && !held_before && *after == 0) check.candidate = "broken in the original too (check --cluster)";
        }
        checks.push_back(std::move(check));
    }
    return checks;
}

/// The canonical levers a candidate changes; derived keys, trial-only keys and companions
/// (keys changed to keep an invariant when their primary lever changes) do not count.
std::vector<std::string> count_levers(const std::vector<Change>& changes, const Adapter& adapter) {
    const auto counts = [](const Change& change) {
        return change.key_class != KeyClass::derived && change.key_class != KeyClass::objective && !change.trial_only;
    };
    const auto lever_of = [](const Change& change) { return change.lever.empty() ? change.key : change.lever; };
    std::set<std::string> changed;
    for (const auto& change : changes)
        if (counts(change)) changed.insert(lever_of(change));
    // A lever counts when one of its keys changed for its own sake, not only as the companion of
    // another lever that changed (a key may name its own lever as primary: that is no excuse).
    std::set<std::string> counted;
    for (const auto& change : changes) {
        if (!counts(change)) continue;
        const std::string lever = lever_of(change);
        const auto* rule = adapter.classify(change.key);
        const bool companion = rule != nullptr &&
                               std::any_of(rule->companion_of.begin(), rule->companion_of.end(), [&](const std::string& primary) {
                                   return primary != lever && changed.count(primary) != 0;
                               });
        if (!companion) counted.insert(lever);
    }
    return {counted.begin(), counted.end()};
}

}  // namespace

Verdict check(const recipe::Document& baseline, const recipe::Document& candidate, const Adapter& adapter,
              const Rules& rules, const Policy& policy, const cluster::Cluster& cluster, const CheckOptions& options) {
    Verdict verdict;
    verdict.framework = adapter.name();
    verdict.rules_hash = "sha256:" + util::sha256_hex(rules.hash() + '\0' + policy.text);
    verdict.changes = diff(baseline, candidate, adapter, policy, options, cluster);
    refuse_duplicates(verdict.changes, baseline, "original recipe", adapter);
    refuse_duplicates(verdict.changes, candidate, "candidate", adapter);
    verdict.invariants = check_invariants(baseline, candidate, adapter, rules, cluster);
    verdict.levers = count_levers(verdict.changes, adapter);
    const auto max_levers = options.max_levers ? options.max_levers : policy.max_levers;
    if (max_levers) {
        const auto count = static_cast<int>(verdict.levers.size());
        verdict.invariants.push_back({"max_levers", "at most " + std::to_string(*max_levers),
                                      std::to_string(count) + (count > 0 ? " (" + util::join(verdict.levers, ", ") + ")" : ""),
                                      count <= *max_levers, "one step changes at most this many canonical levers"});
    }
    verdict.allowed = std::all_of(verdict.changes.begin(), verdict.changes.end(), [](const Change& c) { return c.allowed; }) &&
                      std::all_of(verdict.invariants.begin(), verdict.invariants.end(), [](const InvariantCheck& c) { return c.ok; });
    return verdict;
}

nlohmann::json Verdict::to_json() const {
    nlohmann::json changes_json = nlohmann::json::array();
    for (const auto& change : changes) {
        changes_json.push_back({{"key", change.key},
                                {"lever", change.lever.empty() ? nlohmann::json(nullptr) : nlohmann::json(change.lever)},
                                {"class", to_string(change.key_class)},
                                {"from", change.from ? change.from->to_json() : nlohmann::json(nullptr)},
                                {"to", change.to ? change.to->to_json() : nlohmann::json(nullptr)},
                                {"from_present", change.from.has_value()},
                                {"to_present", change.to.has_value()},
                                {"trial_only", change.trial_only},
                                {"verdict", change.allowed ? "allowed" : "refused"},
                                {"reason", change.reason}});
    }
    nlohmann::json invariants_json = nlohmann::json::array();
    for (const auto& invariant : invariants)
        invariants_json.push_back({{"name", invariant.name}, {"baseline", invariant.baseline},
                                   {"candidate", invariant.candidate}, {"ok", invariant.ok}});
    return {{"verdict", allowed ? "allowed" : "refused"},
            {"framework", framework},
            {"rules_hash", rules_hash},
            {"changes", changes_json},
            {"invariants", invariants_json},
            {"levers", levers},
            {"levers_changed", levers.size()}};
}

}  // namespace attune::gate
