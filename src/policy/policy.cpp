#include <attune/policy/policy.hpp>

#include <nlohmann/json.hpp>

namespace attune::policy {

Edits merged(Edits base, const Edits& edits) {
    for (const auto& [path, value] : edits) base.insert_or_assign(path, value);
    return base;
}

std::vector<recipe::Edit> edit_list(const Edits& edits) {
    std::vector<recipe::Edit> out;
    for (const auto& [path, value] : edits) out.push_back({path, value, false});
    return out;
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
