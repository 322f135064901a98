#include <attune/core/paths.hpp>
#include <attune/util/data_file.hpp>
#include <attune/policy/search_rules.hpp>

#include <fmt/format.h>

namespace attune::policy {

namespace {

using util::DataFile;

gate::Expression expression(const DataFile& file, const YAML::Node& node, const std::string& what) {
    return gate::Expression::parse(file.string(node, what), file.where(node));
}

std::optional<gate::Expression> optional_expression(const DataFile& file, const YAML::Node& node,
                                                    const std::string& what) {
    if (!node) return std::nullopt;
    return expression(file, node, what);
}

recipe::Value scalar_value(const DataFile& file, const YAML::Node& node) {
    if (!node || node.IsNull()) return recipe::Value::null();
    if (!node.IsScalar()) file.fail(node, "a single value");
    if (node.Tag() == "!") return recipe::Value::string(node.Scalar());  // quoted in the file
    return recipe::Value::from_plain(node.Scalar());
}

std::vector<std::string> keys_of(const DataFile& file, const YAML::Node& node) {
    if (!node) return {};
    if (node.IsSequence()) return file.strings(node, "key names");
    return {file.string(node, "a key name")};
}

template <typename T, typename Read>
std::vector<std::pair<std::string, T>> pairs(const DataFile& file, const YAML::Node& node, Read read) {
    std::vector<std::pair<std::string, T>> out;
    if (!node) return out;
    if (!node.IsMap()) file.fail(node, "a mapping of key: value");
    for (const auto& item : node) out.emplace_back(item.first.Scalar(), read(item.second));
    return out;
}

Move move_of(const DataFile& file, const YAML::Node& node, const std::string& id) {
    file.expect_fields(node, {"lever", "key", "set", "step", "guard", "with", "adjust", "requires", "why"});
    Move move;
    move.id = id;
    move.lever = file.string(node["lever"], "a lever name");
    move.keys = keys_of(file, node["key"]);
    if (node["set"]) move.set = scalar_value(file, node["set"]);
    if (node["step"]) {
        const auto step = file.string(node["step"], "up or down");
        if (step != "up" && step != "down") file.fail(node["step"], "up or down");
        move.step = step == "up" ? 1 : -1;
    }
    if (move.set.has_value() == (move.step != 0)) file.fail(node, "exactly one of set: or step:");
    move.guard = optional_expression(file, node["guard"], "a guard expression");
    move.with = pairs<recipe::Value>(file, node["with"], [&](const YAML::Node& v) { return scalar_value(file, v); });
    move.adjust = pairs<gate::Expression>(file, node["adjust"],
                                          [&](const YAML::Node& v) { return expression(file, v, "an expression"); });
    move.requires_values =
        pairs<recipe::Value>(file, node["requires"], [&](const YAML::Node& v) { return scalar_value(file, v); });
    move.why = file.string(node["why"], "the reason for the move");
    return move;
}

Phase phase_of(const DataFile& file, const YAML::Node& node) {
    file.expect_fields(node, {"name", "when", "why", "planned_only", "explore_when", "moves"});
    Phase phase;
    phase.name = file.string(node["name"], "a phase name");
    phase.when = optional_expression(file, node["when"], "a condition");
    phase.planned_only = node["planned_only"] && file.boolean(node["planned_only"], "planned_only");
    phase.explore_when = optional_expression(file, node["explore_when"], "a condition");
    if (phase.explore_when && !phase.planned_only) file.fail(node["explore_when"], "explore_when is for a planned_only phase");
    phase.why = file.string(node["why"], "the reason for the phase");
    if (!node["moves"] || !node["moves"].IsSequence()) file.fail(node, "a list of moves");
    for (std::size_t i = 0; i < node["moves"].size(); ++i)
        phase.moves.push_back(move_of(file, node["moves"][i], fmt::format("{}/{}", phase.name, i + 1)));
    return phase;
}

FailureRule failure_rule_of(const DataFile& file, const YAML::Node& node) {
    file.expect_fields(node, {"when", "action", "why"});
    const auto action = file.string(node["action"], "an action");
    if (action != "retry_once" && action != "revert") file.fail(node["action"], "action '" + action + "': expected retry_once or revert");
    return {expression(file, node["when"], "a condition"), action == "retry_once", file.string(node["why"], "the reason")};
}

Acceptance acceptance_of(const DataFile& file, const YAML::Node& node) {
    file.expect_fields(node, {"min_gain", "keep_neutral", "accept_repeat", "remeasure", "confirm_best"});
    return {.min_gain = expression(file, node["min_gain"], "a gain expression"),
            .keep_neutral = optional_expression(file, node["keep_neutral"], "a condition"),
            .accept_repeat = optional_expression(file, node["accept_repeat"], "a condition"),
            .remeasure = optional_expression(file, node["remeasure"], "a condition"),
            .confirm_best = expression(file, node["confirm_best"], "a condition")};
}

}  // namespace

SearchRules SearchRules::load(const std::filesystem::path& path) {
    const DataFile file{path};
    const auto& root = file.root();
    file.expect_fields(root, {"version", "acceptance", "on_failure", "phases", "stop"});
    if (!root["version"] || file.string(root["version"], "version") != "1")
        file.fail(root["version"] ? root["version"] : root, "expected 'version: 1' (the search-rules format this attune reads)");
    if (!root["acceptance"]) file.fail(root, "expected an 'acceptance' mapping");
    SearchRules rules{.acceptance = acceptance_of(file, root["acceptance"]), .on_failure = {}, .phases = {}, .stop = {}, .source = file.path()};
    for (const auto& node : root["on_failure"]) rules.on_failure.push_back(failure_rule_of(file, node));
    for (const auto& node : root["phases"]) rules.phases.push_back(phase_of(file, node));
    for (const auto& node : root["stop"]) {
        file.expect_fields(node, {"when", "why"});
        rules.stop.push_back({expression(file, node["when"], "a condition"), file.string(node["why"], "the reason")});
    }
    return rules;
}

bool SearchRules::is_prerequisite(const std::string& lever) const {
    for (const Phase& phase : phases)
        for (const Move& move : phase.moves)
            for (const auto& required : move.requires_values)
                if (required.first == lever) return true;
    return false;
}

const SearchRules& default_search_rules() {
    static const SearchRules rules = SearchRules::load(data_dir() / "skills" / "rules" / "search.yaml");
    return rules;
}

}  // namespace attune::policy
