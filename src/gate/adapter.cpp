#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/files.hpp>
#include <attune/util/hash.hpp>
#include <attune/util/strings.hpp>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

namespace attune::gate {

using util::DataFile;

namespace {

// Quantities refer to each other; deeper chains than this are cycles.
constexpr int k_max_quantity_depth = 16;

KeyClass parse_class(const DataFile& file, const YAML::Node& node) {
    const auto text = file.string(node, "class");
    if (text == "performance") return KeyClass::performance;
    if (text == "numerics") return KeyClass::numerics;
    if (text == "objective") return KeyClass::objective;
    if (text == "derived") return KeyClass::derived;
    file.fail(node, "class '" + text + "' is not known; expected performance, numerics, objective or derived");
}

recipe::Value value_of(const YAML::Node& node) {
    if (node.IsNull()) return recipe::Value::null();
    if (node.IsSequence() && node.size() == 0) return recipe::Value::empty_list();
    return node.Tag() == "!" ? recipe::Value::string(node.Scalar()) : recipe::Value::from_plain(node.Scalar());
}

Domain parse_domain(const DataFile& file, const YAML::Node& rule) {
    Domain domain;
    if (rule["type"]) {
        domain.type = file.string(rule["type"], "type");
        static const std::vector<std::string> k_types = {"int", "float", "bool", "string", "enum", "any"};
        if (std::find(k_types.begin(), k_types.end(), domain.type) == k_types.end())
            file.fail(rule["type"], "type '" + domain.type + "' is not known; expected " + util::join(k_types, ", "));
    }
    if (const auto values = rule["values"]) {
        if (!values.IsSequence()) file.fail(values, "'values' must be a list");
        for (const auto& item : values) domain.values.push_back(value_of(item));
    }
    if (rule["min"]) domain.min = file.number(rule["min"], "min");
    if (rule["max"]) domain.max = file.number(rule["max"], "max");
    return domain;
}

KeyRule parse_key_rule(const DataFile& file, const YAML::Node& node, bool environment) {
    file.expect_fields(node, {"path", "name", "lever", "class", "type", "values", "min", "max", "companion_of",
                              "trial_only", "expr", "why"});
    KeyRule rule;
    rule.environment = environment;
    const char* pattern_field = environment ? "name" : "path";
    if (!node[pattern_field]) file.fail(node, std::string("a rule needs '") + pattern_field + "'");
    rule.pattern = file.string(node[pattern_field], pattern_field);
    if (!node["class"]) file.fail(node, "rule '" + rule.pattern + "' needs 'class'");
    rule.key_class = parse_class(file, node["class"]);
    rule.lever = node["lever"] ? file.string(node["lever"], "lever") : std::string();
    rule.domain = parse_domain(file, node);
    rule.companion_of = file.strings(node["companion_of"], "companion_of");
    rule.trial_only = node["trial_only"] && file.boolean(node["trial_only"], "trial_only");
    if (node["expr"]) rule.derived_from = Expression::parse(file.string(node["expr"], "expr"), file.where(node["expr"]));
    rule.why = node["why"] ? file.string(node["why"], "why") : std::string();
    rule.source = file.where(node);
    return rule;
}

QuantityRule parse_quantity(const DataFile& file, const std::string& name, const YAML::Node& node) {
    if (!node.IsMap()) file.fail(node, "quantity '" + name + "' must be a mapping of paths, model, cluster, default, expr and map");
    file.expect_fields(node, {"paths", "model", "cluster", "default", "expr", "map"});
    QuantityRule rule;
    rule.name = name;
    rule.paths = file.strings(node["paths"], "paths");
    if (node["cluster"]) {
        rule.cluster_field = file.string(node["cluster"], "cluster");
        if (rule.cluster_field != "nodes" && rule.cluster_field != "gpus_per_node")
            file.fail(node["cluster"], "cluster field '" + rule.cluster_field + "' is not known; expected nodes or gpus_per_node");
    }
    if (node["model"]) {
        const auto names = model::field_names();
        rule.model_field = names[file.one_of(node["model"], "model field", names)];
    }
    if (node["default"]) rule.default_value = file.number(node["default"], "default");
    if (node["expr"]) rule.expr = Expression::parse(file.string(node["expr"], "expr"), file.where(node["expr"]));
    if (const auto map = node["map"]) {
        if (!map.IsMap()) file.fail(map, "'map' must map values to numbers");
        for (const auto& item : map)
            rule.map[value_of(item.first).to_string()] = file.number(item.second, "map");
    }
    return rule;
}

std::optional<double> number_of(const recipe::Value& value, const QuantityRule& rule) {
    if (!rule.map.empty()) {
        const auto found = rule.map.find(value.to_string());
        if (found != rule.map.end()) return found->second;
    }
    if (value.is_null()) return std::nullopt;
    if (const auto flag = value.as_bool(); flag && value.kind() == recipe::Value::Kind::boolean) return *flag ? 1.0 : 0.0;
    return value.as_number();
}

bool is_exact(const std::string& pattern) { return recipe::is_key_path(pattern); }

/// Key paths as a message shows them: an any-section path as its key, in whichever section
/// (`--vocab-size (in any argument array or section)`).
std::string shown_paths(const std::vector<std::string>& paths) {
    std::vector<std::string> shown;
    for (const auto& path : paths)
        shown.push_back(recipe::is_any_section(path) ? path.substr(2) + " (in any argument array or section)" : path);
    return util::join(shown, " or ");
}

/// `$MOE_AUX_COEFF`, `${DATA_PATH}/x`: what the readers keep of a value they could not resolve.
bool built_from_variable(const recipe::Value& value) {
    return value.kind() == recipe::Value::Kind::string && value.to_string().find('$') != std::string::npos;
}

/// The value of the first of `keys` the recipe sets to something (a model or tokenizer name).
std::optional<std::string> first_named(const recipe::Document& recipe, const std::vector<std::string>& keys) {
    for (const auto& key : keys)
        if (const auto* value = recipe.find(key); value != nullptr && !value->is_null() && !value->to_string().empty())
            return value->to_string();
    return std::nullopt;
}

/// Where no catalogue is loaded (an adapter read on its own), only local config.json files resolve.
const model::Catalogue& no_catalogue() {
    static const model::Catalogue empty;
    return empty;
}

// The on/off levers the simulator reads from a recipe (src/sim/from_recipe.cpp).
const std::vector<std::string> k_runtime_flags{"sequence_parallel", "distributed_optimizer", "shard_grads", "activation_offload",
                                               "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                                               "fusions", "flash_attention", "cuda_graphs", "moe_grouped_gemm"};

Runtime parse_runtime(const DataFile& file, const YAML::Node& node, const std::vector<KeyRule>& keys) {
    file.expect_fields(node, {"engine", "log_dialect", "defaults", "recompute"});
    Runtime runtime;
    if (node["engine"]) runtime.engine = Engine(file.one_of(node["engine"], "engine", {"megatron-core", "fsdp"}));
    if (node["log_dialect"])
        runtime.log_dialect = LogDialect(file.one_of(node["log_dialect"], "log_dialect", {"megatron", "automodel", "torchtitan"}));
    if (const auto defaults = node["defaults"]) {
        if (!defaults.IsMap()) file.fail(defaults, "'defaults' must map on/off levers to true or false");
        for (const auto& item : defaults) {
            const auto lever = k_runtime_flags[file.one_of(item.first, "lever", k_runtime_flags)];
            runtime.defaults[lever] = file.boolean(item.second, lever);
        }
    }
    if (const auto recompute = node["recompute"]) {
        if (!recompute.IsMap()) file.fail(recompute, "'recompute' must map none, selective and full to the keys each writes");
        for (const auto& choice : recompute) {
            const std::vector<std::string> k_choices{"none", "selective", "full"};
            const auto name = k_choices[file.one_of(choice.first, "recompute choice", k_choices)];
            if (!choice.second.IsMap()) file.fail(choice.second, "'" + name + "' must map key paths to the values written");
            for (const auto& item : choice.second) {
                const auto path = item.first.Scalar();
                const bool recompute_key = std::any_of(keys.begin(), keys.end(), [&](const KeyRule& rule) {
                    return rule.lever == "recompute" && rule.pattern == path;
                });
                if (!recompute_key) file.fail(item.first, "'" + path + "' is no key of the recompute lever in this file's keys");
                runtime.recompute[name][path] = value_of(item.second);
            }
        }
    }
    return runtime;
}

}  // namespace

std::string to_string(KeyClass key_class) {
    switch (key_class) {
        case KeyClass::performance: return "performance";
        case KeyClass::numerics: return "numerics";
        case KeyClass::objective: return "objective";
        case KeyClass::derived: return "derived";
        case KeyClass::unknown: return "unknown";
    }
    return "unknown";
}

std::string Domain::violation(const recipe::Value& value) const {
    if (type == "bool" && value.kind() != recipe::Value::Kind::boolean) return "expected true or false";
    if (numeric()) {
        const auto number = value.as_number();
        if (!number) return value.is_null() && !values.empty() ? "" : "expected a number";
        if (type == "int" && *number != std::floor(*number)) return "expected a whole number";
        if (min && *number < *min) return "expected at least " + util::format_number(*min);
        if (max && *number > *max) return "expected at most " + util::format_number(*max);
    }
    if (!values.empty()) {
        const auto numeric_mode = numeric() ? recipe::Value::Numeric::coerce : recipe::Value::Numeric::strict;
        const bool listed = std::any_of(values.begin(), values.end(),
                                        [&](const recipe::Value& allowed) { return allowed.same_as(value, numeric_mode); });
        if (!listed) return "expected one of " + describe();
    }
    return {};
}

std::string Domain::describe() const {
    std::vector<std::string> parts;
    for (const auto& value : values) parts.push_back(value.to_string());
    if (!parts.empty()) return "{" + util::join(parts, ", ") + "}";
    std::string text = type;
    if (min) text += " >= " + util::format_number(*min);
    if (max) text += (min ? ", <= " : " <= ") + util::format_number(*max);
    return text;
}

Adapter Adapter::load(const std::filesystem::path& path, std::shared_ptr<const model::Catalogue> catalogue) {
    const DataFile file(path);
    const auto& root = file.root();
    file.expect_fields(root, {"framework", "title", "detect", "env_sections", "launcher_package", "model", "runtime", "launch",
                              "quantities", "keys", "env"});
    Adapter adapter;
    adapter.m_source = path.string();
    adapter.m_catalogue = std::move(catalogue);
    if (!root["framework"]) file.fail(root, "an adapter needs 'framework: NAME'");
    adapter.m_name = file.string(root["framework"], "framework");
    adapter.m_title = root["title"] ? file.string(root["title"], "title") : adapter.m_name;
    if (const auto detect = root["detect"]) {
        file.expect_fields(detect, {"require", "exclude", "prefer"});
        adapter.m_require = file.strings(detect["require"], "require");
        adapter.m_exclude = file.strings(detect["exclude"], "exclude");
        adapter.m_prefer = file.strings(detect["prefer"], "prefer");
    }
    if (adapter.m_require.empty()) file.fail(root, "an adapter needs detect.require: the keys that identify it");
    adapter.m_env_sections = file.strings(root["env_sections"], "env_sections");
    if (root["launcher_package"]) adapter.m_launcher_package = file.string(root["launcher_package"], "launcher_package");
    if (const auto model = root["model"]) {
        file.expect_fields(model, {"names", "tokenizers"});
        adapter.m_model_keys.names = file.strings(model["names"], "names");
        adapter.m_model_keys.tokenizers = file.strings(model["tokenizers"], "tokenizers");
    }
    if (const auto quantities = root["quantities"]) {
        if (!quantities.IsMap()) file.fail(quantities, "'quantities' must map names to rules");
        for (const auto& item : quantities)
            adapter.m_quantities.push_back(parse_quantity(file, item.first.Scalar(), item.second));
    }
    for (const auto& [field, environment] : {std::pair{"keys", false}, std::pair{"env", true}}) {
        const auto list = root[field];
        if (!list) continue;
        if (!list.IsSequence()) file.fail(list, std::string("'") + field + "' must be a list of rules");
        auto& rules = environment ? adapter.m_env : adapter.m_keys;
        for (const auto& item : list) rules.push_back(parse_key_rule(file, item, environment));
    }
    if (const auto runtime = root["runtime"]) adapter.m_runtime = parse_runtime(file, runtime, adapter.m_keys);
    if (const auto launch = root["launch"]) {
        file.expect_fields(launch, {"args"});
        adapter.m_launch_args = file.strings(launch["args"], "args");
        for (std::size_t i = 0; i < adapter.m_launch_args.size(); ++i)
            if (const auto problem = cluster::launch_word_problem(adapter.m_launch_args[i]); !problem.empty())
                file.fail(launch["args"][i], problem);
        if (std::none_of(adapter.m_launch_args.begin(), adapter.m_launch_args.end(), cluster::has_placeholder))
            file.fail(launch, "'launch.args' must pass the trial: use {recipe} or {overrides}");
    }
    return adapter;
}

std::optional<int> Adapter::detect(const recipe::Document& recipe) const {
    for (const auto& path : m_require)
        if (!recipe.has(path)) return std::nullopt;
    for (const auto& path : m_exclude)
        if (recipe.has(path)) return std::nullopt;
    const auto preferred = std::count_if(m_prefer.begin(), m_prefer.end(), [&](const auto& path) { return recipe.has(path); });
    return static_cast<int>(m_require.size() * 10 + static_cast<std::size_t>(preferred));
}

const KeyRule* Adapter::classify(std::string_view path) const {
    for (const auto& section : m_env_sections) {
        if (path.size() <= section.size() + 1 || !path.starts_with(section) || path[section.size()] != '.') continue;
        const auto name = path.substr(section.size() + 1);
        for (const auto& rule : m_env)
            if (util::glob_match(rule.pattern, name, '.')) return &rule;
        return nullptr;
    }
    for (const auto& rule : m_keys)
        if (util::glob_match(rule.pattern, path, '.')) return &rule;
    return nullptr;
}

const QuantityRule* Adapter::quantity_rule(std::string_view name) const {
    const auto rule = std::find_if(m_quantities.begin(), m_quantities.end(), [&](const auto& q) { return q.name == name; });
    return rule == m_quantities.end() ? nullptr : &*rule;
}

std::vector<std::string> Adapter::quantity_paths(std::string_view name) const {
    const auto* rule = quantity_rule(name);
    return rule == nullptr ? std::vector<std::string>{} : rule->paths;
}

std::string Adapter::how_to_give(std::string_view name) const {
    const auto* rule = quantity_rule(name);
    if (rule == nullptr) return "no key of " + m_name + " gives it";
    std::vector<std::string> ways;
    if (!rule->paths.empty()) ways.push_back("set " + shown_paths(rule->paths));
    if (!rule->model_field.empty()) ways.push_back(model_hint());
    if (rule->expr) ways.push_back("it is " + rule->expr->text() + ", so give those");
    return util::join(ways, "; or ");
}

bool Adapter::unresolved(const recipe::Document& recipe, std::string_view name) const {
    return unresolved_at_depth(recipe, name, 0);
}

bool Adapter::unresolved_at_depth(const recipe::Document& recipe, std::string_view name, int depth) const {
    const auto* rule = quantity_rule(name);
    if (rule == nullptr || depth > k_max_quantity_depth) return false;
    for (const auto& path : rule->paths)
        if (const auto* value = recipe.find(path); value != nullptr && !value->is_null()) return built_from_variable(*value);
    if (!rule->expr) return false;
    const auto names = rule->expr->names();
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& other) { return unresolved_at_depth(recipe, other, depth + 1); });
}

bool Adapter::has_quantity(std::string_view name) const {
    return quantity_rule(name) != nullptr;
}

std::optional<double> Adapter::quantity(const recipe::Document& recipe, std::string_view name,
                                        const cluster::Cluster& cluster) const {
    return quantity_at_depth(recipe, name, cluster, 0);
}

std::optional<double> Adapter::quantity_at_depth(const recipe::Document& recipe, std::string_view name,
                                                 const cluster::Cluster& cluster, int depth) const {
    const auto* rule = quantity_rule(name);
    if (rule == nullptr || depth > k_max_quantity_depth) return std::nullopt;
    for (const auto& path : rule->paths) {
        const auto* value = recipe.find(path);
        if (value == nullptr) continue;
        // A value built from a variable the recipe does not give is set to something attune cannot
        // know: the quantity is unknown, not its default.
        if (built_from_variable(*value)) return std::nullopt;
        if (auto number = number_of(*value, *rule)) return number;
    }
    if (!rule->model_field.empty())
        if (const auto value = model_field(recipe, rule->model_field)) return value;
    if (rule->cluster_field == "nodes") return cluster.nodes;
    if (rule->cluster_field == "gpus_per_node") return cluster.gpus_per_node;
    if (rule->default_value) return rule->default_value;
    if (rule->expr)
        return rule->expr->evaluate(
            [&](const std::string& other) { return quantity_at_depth(recipe, other, cluster, depth + 1); });
    return std::nullopt;
}

std::optional<model::Identity> Adapter::identity_by(const recipe::Document& recipe, const std::vector<std::string>& keys,
                                                    bool models_only) const {
    const auto name = first_named(recipe, keys);
    if (!name) return std::nullopt;
    return model::resolve(*name, std::filesystem::path(recipe.origin()).parent_path(), m_catalogue ? *m_catalogue : no_catalogue(),
                          models_only);
}

std::optional<model::Identity> Adapter::model_identity(const recipe::Document& recipe) const {
    if (const auto& given = recipe.model_config()) return model::resolve(given->string(), {}, no_catalogue(), true);
    if (auto named = identity_by(recipe, m_model_keys.names, true)) return named;
    // A recipe that writes its own shape trains that shape whatever tokenizer it names (a tokenizer
    // is often shared by models of several sizes): then the tokenizer gives the vocabulary only.
    for (const char* shape_quantity : {"layers", "hidden", "heads"})
        for (const auto& path : quantity_paths(shape_quantity))
            if (const auto* value = recipe.find(path); value != nullptr && !value->is_null()) return std::nullopt;
    return identity_by(recipe, m_model_keys.tokenizers, true);
}

std::optional<double> Adapter::model_field(const recipe::Document& recipe, const std::string& field) const {
    // The vocabulary is the tokenizer's where the recipe names one (NeMo, Megatron); a tokenizer
    // that is no model of its own gives nothing else.
    if (field == "vocab" && !recipe.model_config())
        if (const auto tokenizer = identity_by(recipe, m_model_keys.tokenizers, false)) return tokenizer->shape.vocab;
    const auto identity = model_identity(recipe);
    return identity ? model::field(identity->shape, field) : std::nullopt;
}

std::optional<std::string> Adapter::model_name(const recipe::Document& recipe) const {
    if (auto name = first_named(recipe, m_model_keys.names)) return name;
    return first_named(recipe, m_model_keys.tokenizers);
}

std::string Adapter::model_hint() const {
    std::vector<std::string> keys = m_model_keys.names;
    keys.insert(keys.end(), m_model_keys.tokenizers.begin(), m_model_keys.tokenizers.end());
    if (keys.empty()) return "pass --model-config CONFIG.json (no key of " + m_name + " names the model)";
    return "set " + shown_paths(keys) +
           " to a catalogued model (gate/models.yaml) or a local folder with a config.json, or pass --model-config CONFIG.json";
}

std::optional<std::string> Adapter::closest_model(std::string_view name) const {
    return m_catalogue ? m_catalogue->closest(name) : std::nullopt;
}

const KeyRule* Adapter::lever_rule(std::string_view lever) const {
    const auto rule = std::find_if(m_keys.begin(), m_keys.end(),
                                   [&](const KeyRule& r) { return r.lever == lever && is_exact(r.pattern); });
    return rule == m_keys.end() ? nullptr : &*rule;
}

std::optional<recipe::Value> Adapter::lever_value(const recipe::Document& recipe, std::string_view lever) const {
    for (const auto& rule : m_keys) {
        if (rule.lever != lever || !is_exact(rule.pattern)) continue;
        if (const auto* value = recipe.find(rule.pattern)) return *value;
    }
    return std::nullopt;
}

std::optional<std::string> Adapter::lever_path(std::string_view lever) const {
    const auto* rule = lever_rule(lever);
    return rule == nullptr ? std::nullopt : std::optional<std::string>(rule->pattern);
}

std::vector<recipe::Value> Adapter::lever_domain(std::string_view lever) const {
    const auto* rule = lever_rule(lever);
    return rule == nullptr ? std::vector<recipe::Value>{} : rule->domain.values;
}

Rules Rules::load(const std::filesystem::path& data_dir) {
    const auto frameworks = data_dir / "gate" / "frameworks";
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(frameworks, ec))
        if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    if (ec || files.empty()) throw InputError(frameworks.string() + ": no adapter files (*.yaml); expected attune's gate/ data");
    std::sort(files.begin(), files.end());
    Rules rules;
    std::string hashed;
    // The catalogue gives the vocabulary and the shape the invariants check, so it is part of the rules.
    std::shared_ptr<const model::Catalogue> catalogue;
    if (const auto models = data_dir / "gate" / "models.yaml"; std::filesystem::is_regular_file(models, ec)) {
        catalogue = std::make_shared<const model::Catalogue>(model::Catalogue::load(models));
        hashed += std::string("models.yaml") + '\0' + catalogue->text() + '\0';
    }
    for (const auto& file : files) {
        rules.m_adapters.push_back(Adapter::load(file, catalogue));
        hashed += "frameworks/" + file.filename().string() + '\0' + util::read_text_file(file) + '\0';
    }
    const auto invariants_path = data_dir / "gate" / "invariants.yaml";
    const DataFile invariants(invariants_path);
    hashed += std::string("invariants.yaml") + '\0' + invariants.text();
    invariants.expect_fields(invariants.root(), {"invariants"});
    for (const auto& node : invariants.root()["invariants"]) {
        invariants.expect_fields(node, {"name", "same", "holds", "when", "why"});
        Invariant invariant;
        invariant.name = invariants.string(node["name"], "name");
        const auto where = invariants.where(node);
        if (node["same"]) invariant.same = Expression::parse(invariants.string(node["same"], "same"), where);
        if (node["holds"]) invariant.holds = Expression::parse(invariants.string(node["holds"], "holds"), where);
        if (node["when"]) invariant.when = Expression::parse(invariants.string(node["when"], "when"), where);
        if (invariant.same.has_value() == invariant.holds.has_value())
            invariants.fail(node, "invariant '" + invariant.name + "' needs exactly one of 'same' or 'holds'");
        invariant.why = node["why"] ? invariants.string(node["why"], "why") : std::string();
        rules.m_invariants.push_back(std::move(invariant));
    }
    rules.m_hash = "sha256:" + util::sha256_hex(hashed);
    return rules;
}

const Adapter* Rules::find(std::string_view framework) const {
    const auto found = std::find_if(m_adapters.begin(), m_adapters.end(), [&](const Adapter& a) { return a.name() == framework; });
    return found == m_adapters.end() ? nullptr : &*found;
}

const Adapter& Rules::adapter_for(const recipe::Document& recipe, std::string_view framework) const {
    std::vector<std::string> names;
    for (const auto& adapter : m_adapters) names.push_back(adapter.name());
    if (!framework.empty()) {
        if (const auto* adapter = find(framework)) return *adapter;
        const auto suggestion = util::closest_match(framework, names);
        throw InputError("--framework " + std::string(framework) + ": not a known framework" +
                         (suggestion ? "; did you mean '" + *suggestion + "'?" : "; expected one of " + util::join(names, ", ")));
    }
    const Adapter* best = nullptr;
    int best_score = -1;
    for (const auto& adapter : m_adapters) {
        const auto score = adapter.detect(recipe);
        if (score && *score > best_score) {
            best = &adapter;
            best_score = *score;
        }
    }
    if (best == nullptr)
        throw InputError(recipe.origin() + ": not a recipe of a known framework (" + util::join(names, ", ") +
                         "); pass --framework NAME or add an adapter in gate/frameworks/");
    return *best;
}

const Rules& default_rules() {
    static const Rules rules = Rules::load(data_dir());
    return rules;
}

const Adapter& detect_adapter(const recipe::Document& recipe) { return default_rules().adapter_for(recipe); }

LoadedRecipe load_recipe(const std::filesystem::path& path, const Rules& rules, std::string_view framework,
                         const std::optional<std::filesystem::path>& model_config) {
    auto raw = recipe::Document::load(path);
    const Adapter& adapter = rules.adapter_for(raw, framework);
    if (!adapter.env_sections().empty()) raw = raw.with_env_sections(adapter.env_sections());
    if (!adapter.launcher_package().empty()) raw = raw.with_launcher_package(adapter.launcher_package());
    for (const auto& missing : raw.missing_defaults())
        spdlog::warn("{}:{}: defaults entry '{}' names a config attune did not find below the recipe's folder or a folder "
                     "above it: the keys it sets are unknown to the gate and the simulator",
                     path.string(), missing.line, missing.entry);
    if (model_config) {
        // A file that is not a model's config is the user's error: said now, not at the first estimate.
        if (!model::resolve(model_config->string(), {}, no_catalogue(), true))
            throw InputError("--model-config " + model_config->string() +
                             ": expected a Hugging Face config.json (a .json file, or a folder holding one)");
        raw = raw.with_model_config(*model_config);
    }
    return {std::move(raw), &adapter};
}

}  // namespace attune::gate
