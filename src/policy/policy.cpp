#include <attune/policy/policy.hpp>

#include <nlohmann/json.hpp>

namespace attune::policy {

std::optional<double> peak_over_estimate(const TrialView& trial) {
    const auto& m = trial.measured;
    const auto& p = trial.preflight;
    if (!m || m->status != "ok" || !m->peak_memory_gib || !p || !p->valid || p->memory_gib <= 0) return std::nullopt;
    return *m->peak_memory_gib / p->memory_gib;
}

std::optional<double> predicted_gain(const TrialView& trial, const TrialView& incumbent) {
    const auto usable = [](const std::optional<Preflight>& p) {
        return p && p->estimated && p->valid && p->tokens_per_s_per_gpu > 0;
    };
    if (!usable(trial.preflight) || !usable(incumbent.preflight)) return std::nullopt;
    return trial.preflight->tokens_per_s_per_gpu / incumbent.preflight->tokens_per_s_per_gpu - 1;
}

Edits merged(Edits base, const Edits& edits) {
    for (const auto& [path, value] : edits) base.insert_or_assign(path, value);
    return base;
}

std::vector<recipe::Edit> edit_list(const Edits& edits) {
    std::vector<recipe::Edit> out;
    for (const auto& [path, value] : edits) out.push_back({path, value, false});
    return out;
}

std::optional<double> number_of(const recipe::Value& value) {
    if (const auto b = value.as_bool(); b && value.kind() == recipe::Value::Kind::boolean) return *b ? 1.0 : 0.0;
    return value.as_number();
}

nlohmann::json edits_to_json(const Edits& edits) {
    nlohmann::json json = nlohmann::json::object();
    for (const auto& [path, value] : edits) json[path] = value.to_json();
    return json;
}

Edits edits_from_json(const nlohmann::json& json) {
    Edits edits;
    for (const auto& [path, value] : json.items()) edits.emplace(path, recipe::Value::from_json(value));
    return edits;
}

}  // namespace attune::policy
