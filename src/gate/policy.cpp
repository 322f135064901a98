#include <attune/gate/policy.hpp>

#include <attune/util/data_file.hpp>

#include <algorithm>

namespace attune::gate {

using util::DataFile;

namespace {

void apply_policy_file(Policy& policy, const std::filesystem::path& path) {
    const DataFile file(path);
    const auto& root = file.root();
    file.expect_fields(root, {"allow_numerics", "allow_unknown", "max_levers", "loss_parity"});
    if (root["allow_numerics"]) policy.allow_numerics = file.strings(root["allow_numerics"], "allow_numerics");
    if (root["allow_unknown"]) policy.allow_unknown = file.boolean(root["allow_unknown"], "allow_unknown");
    if (const auto max = root["max_levers"]) {
        if (max.IsNull()) {
            policy.max_levers.reset();
        } else {
            const double value = file.number(max, "max_levers");
            if (value < 1 || value != static_cast<int>(value)) file.fail(max, "'max_levers' must be a whole number >= 1, or null");
            policy.max_levers = static_cast<int>(value);
        }
    }
    if (const auto parity = root["loss_parity"]) {
        file.expect_fields(parity, {"steps", "tolerance"});
        if (parity["steps"]) policy.loss_parity_steps = static_cast<int>(file.number(parity["steps"], "steps"));
        if (parity["tolerance"]) policy.loss_parity_tolerance = file.number(parity["tolerance"], "tolerance");
        if (policy.loss_parity_steps < 1 || policy.loss_parity_tolerance <= 0)
            file.fail(parity, "loss_parity needs steps >= 1 and tolerance > 0");
    }
    policy.source += (policy.source.empty() ? "" : " + ") + path.string();
    policy.text += path.filename().string() + '\0' + file.text() + '\0';
}

}  // namespace

bool Policy::allows_numerics(const std::string& lever) const {
    return std::any_of(allow_numerics.begin(), allow_numerics.end(),
                       [&](const std::string& allowed) { return allowed == "*" || allowed == lever; });
}

Policy load_policy(const std::filesystem::path& data_dir, const std::optional<std::filesystem::path>& user_file) {
    Policy policy;
    apply_policy_file(policy, data_dir / "gate" / "policy.default.yaml");
    if (user_file) apply_policy_file(policy, *user_file);
    return policy;
}

}  // namespace attune::gate
