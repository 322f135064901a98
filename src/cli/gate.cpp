#include <attune/cli/command.hpp>
#include <attune/cli/validators.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/verdict.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace attune::cli {

namespace {

struct CheckRequest {
    std::string baseline;
    std::string candidate;
    std::string gate_policy;
    std::string cluster_file;
    std::string framework;
    std::string model_config;
    int max_levers = 0;
    bool allow_unknown = false;
    bool trial = false;
    bool json = false;
};

struct ExplainRequest {
    std::string key;
    std::string framework;
    bool json = false;
};

/// A candidate is a recipe, or a `.overrides` file of hydra overrides applied to the baseline.
recipe::Document load_candidate(const std::string& path, const recipe::Document& baseline) {
    if (!path.ends_with(".overrides")) {
        auto candidate = recipe::Document::load(path, baseline.env_sections());
        return baseline.launcher_package().empty() ? candidate : candidate.with_launcher_package(baseline.launcher_package());
    }
    std::vector<recipe::Edit> edits;
    const auto lines = util::split(util::read_text_file(path, 1u << 20), '\n');
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto line = util::trim(lines[i]);
        if (line.empty() || line.front() == '#') continue;
        edits.push_back(recipe::parse_override(line, path + ":" + std::to_string(i + 1)));
    }
    return baseline.with_edits(edits);
}

std::string show_value(const std::optional<recipe::Value>& value) {
    return value ? value->to_string() : std::string("(absent)");
}

void print_verdict(const gate::Verdict& verdict, const CheckRequest& request) {
    fmt::print("baseline   {} ({})\ncandidate  {}\nrules      {}\n\n", request.baseline, verdict.framework,
               request.candidate, verdict.rules_hash.substr(0, 23));
    if (verdict.changes.empty()) fmt::print("no changes\n");
    for (const auto& change : verdict.changes) {
        fmt::print("{} {}\n    lever {}, {}: {} -> {}\n    {}\n", change.allowed ? "allowed" : "REFUSED", change.key,
                   change.lever.empty() ? "-" : change.lever, gate::to_string(change.key_class),
                   show_value(change.from), show_value(change.to), change.reason);
    }
    if (!verdict.invariants.empty()) fmt::print("\ninvariants\n");
    for (const auto& invariant : verdict.invariants) {
        fmt::print("  {:<4} {:<34} {} -> {}\n", invariant.ok ? "ok" : "FAIL", invariant.name, invariant.baseline,
                   invariant.candidate);
        if (!invariant.ok) fmt::print("       {}\n", invariant.why);
    }
    const auto refused = std::count_if(verdict.changes.begin(), verdict.changes.end(), [](const auto& c) { return !c.allowed; });
    const auto broken = std::count_if(verdict.invariants.begin(), verdict.invariants.end(), [](const auto& c) { return !c.ok; });
    fmt::print("\nverdict: {} ({} change(s), {} refused; {} invariant(s) broken; {} lever(s) changed{})\n",
               verdict.allowed ? "allowed" : "refused", verdict.changes.size(), refused, broken, verdict.levers.size(),
               verdict.levers.empty() ? "" : ": " + util::join(verdict.levers, ", "));
}

int execute_check(const CheckRequest& request) {
    const auto data = data_dir();
    const auto& rules = gate::default_rules();
    const auto policy = gate::load_policy(data, request.gate_policy.empty() ? std::nullopt
                                                                            : std::optional<std::filesystem::path>(request.gate_policy));
    const auto cluster = request.cluster_file.empty() ? cluster::default_cluster() : cluster::load_cluster(request.cluster_file);
    const auto model_config =
        request.model_config.empty() ? std::nullopt : std::optional<std::filesystem::path>(request.model_config);
    const auto baseline = gate::load_recipe(request.baseline, rules, request.framework, model_config);
    auto candidate = load_candidate(request.candidate, baseline.document);
    if (model_config) candidate = candidate.with_model_config(*model_config);
    gate::CheckOptions options;
    options.purpose = request.trial ? gate::Purpose::trial_run : gate::Purpose::final_recipe;
    if (request.max_levers > 0) options.max_levers = request.max_levers;
    options.allow_unknown = request.allow_unknown;
    const auto verdict = gate::check(baseline.document, candidate, *baseline.adapter, rules, policy, cluster, options);
    if (request.json)
        fmt::print("{}\n", verdict.to_json().dump(2));
    else
        print_verdict(verdict, request);
    return static_cast<int>(verdict.allowed ? ExitCode::ok : ExitCode::refused);
}

nlohmann::json explain_rule(const gate::Adapter& adapter, const gate::KeyRule& rule) {
    return {{"framework", adapter.name()},
            {"rule", rule.pattern},
            {"environment", rule.environment},
            {"lever", rule.lever},
            {"class", gate::to_string(rule.key_class)},
            {"domain", rule.domain.describe()},
            {"trial_only", rule.trial_only},
            {"companion_of", rule.companion_of},
            {"why", rule.why},
            {"source", rule.source}};
}

int execute_explain(const ExplainRequest& request) {
    const auto& rules = gate::default_rules();
    std::vector<const gate::Adapter*> adapters;
    if (!request.framework.empty()) {
        const auto* adapter = rules.find(request.framework);
        if (adapter == nullptr) {
            std::vector<std::string> names;
            for (const auto& known : rules.adapters()) names.push_back(known.name());
            throw InputError("--framework " + request.framework + ": not a known framework; expected one of " + util::join(names, ", "));
        }
        adapters.push_back(adapter);
    } else {
        for (const auto& adapter : rules.adapters()) adapters.push_back(&adapter);
    }
    nlohmann::json found = nlohmann::json::array();
    std::vector<std::string> known_keys;
    for (const auto* adapter : adapters) {
        // An environment variable is explained through the adapter's first env section.
        std::vector<std::string> candidates{request.key};
        for (const auto& section : adapter->env_sections()) candidates.push_back(section + "." + request.key);
        for (const auto& key : candidates) {
            if (const auto* rule = adapter->classify(key)) {
                found.push_back(explain_rule(*adapter, *rule));
                break;
            }
        }
        for (const auto& rule : adapter->key_rules()) known_keys.push_back(rule.pattern);
    }
    if (found.empty()) {
        const auto suggestion = util::closest_match(request.key, known_keys);
        throw InputError("'" + request.key + "': no adapter knows this key" +
                         (suggestion ? "; did you mean '" + *suggestion + "'?" : ""));
    }
    if (request.json) {
        fmt::print("{}\n", found.dump(2));
        return 0;
    }
    for (const auto& rule : found) {
        fmt::print("{}: {}\n  lever:  {}\n  class:  {}\n  domain: {}\n", rule["framework"].get<std::string>(), request.key,
                   rule["lever"].get<std::string>().empty() ? "-" : rule["lever"].get<std::string>(),
                   rule["class"].get<std::string>(), rule["domain"].get<std::string>());
        if (rule["trial_only"].get<bool>()) fmt::print("  trial-only: a trial run may set it\n");
        if (!rule["companion_of"].empty())
            fmt::print("  companion of: {}\n", util::join(rule["companion_of"].get<std::vector<std::string>>(), ", "));
        fmt::print("  why:    {}\n  rule:   {} ({})\n", rule["why"].get<std::string>(), rule["rule"].get<std::string>(),
                   rule["source"].get<std::string>());
    }
    return 0;
}

const Registration k_registration{20, [](CLI::App& app, Action& chosen) {
    auto* gate = app.add_subcommand("gate", "The correctness gate: judge an edited recipe against the original");
    gate->require_subcommand(1);

    auto check = std::make_shared<CheckRequest>();
    auto* check_command = gate->add_subcommand("check", "Say, key by key, whether CANDIDATE is safe for the training objective");
    check_command->add_option("BASELINE", check->baseline, "The original recipe")->required();
    check_command->add_option("CANDIDATE", check->candidate, "The edited recipe, or a .overrides file of key=value lines")->required();
    check_command->add_option("--gate-policy", check->gate_policy, "A policy file over gate/policy.default.yaml");
    check_command->add_option("--max-levers", check->max_levers, "Refuse candidates that change more canonical levers")->check(positive_number());
    check_command->add_flag("--allow-unknown", check->allow_unknown, "Warn about unknown keys instead of refusing them");
    check_command->add_option("--cluster", check->cluster_file, "Cluster file giving the job's shape when the recipe does not");
    check_command->add_option("--framework", check->framework, "The recipe family, when detection is not wanted");
    check_command->add_option("--model-config", check->model_config,
                              "Hugging Face config.json of the model the recipe trains, where the recipe does not name a known one");
    check_command->add_flag("--trial", check->trial, "Judge a trial run: trial-only keys (steps, validation, checkpoints) may change");
    check_command->add_flag("--json", check->json, "Print one JSON document on stdout");
    check_command->callback([check, &chosen] { chosen = [check] { return execute_check(*check); }; });

    auto explain = std::make_shared<ExplainRequest>();
    auto* explain_command = gate->add_subcommand("explain", "Print a key's lever, class, domain and why");
    explain_command->add_option("KEY", explain->key, "A key path (model.micro_batch_size) or an environment variable")->required();
    explain_command->add_option("--framework", explain->framework, "Only this recipe family");
    explain_command->add_flag("--json", explain->json, "Print one JSON document on stdout");
    explain_command->callback([explain, &chosen] { chosen = [explain] { return execute_explain(*explain); }; });
}};

}  // namespace

}  // namespace attune::cli
