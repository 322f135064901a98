#pragma once

#include <attune/cluster/cluster.hpp>
#include <attune/gate/expression.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/recipe/document.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attune::gate {

/// What a key does to training (docs/gate.md, "Classes").
enum class KeyClass { performance, numerics, objective, derived, unknown };
std::string to_string(KeyClass key_class);

/// The values a key may take: a type plus allowed values or a range.
struct Domain {
    std::string type = "any";  ///< int | float | bool | string | enum | any
    std::vector<recipe::Value> values;
    std::optional<double> min;
    std::optional<double> max;

    [[nodiscard]] bool numeric() const { return type == "int" || type == "float"; }
    /// Empty when the value fits, else what was expected.
    [[nodiscard]] std::string violation(const recipe::Value& value) const;
    [[nodiscard]] std::string describe() const;
};

/// One rule of an adapter file: which keys it matches and what they are.
struct KeyRule {
    std::string pattern;  ///< key path or glob (`keys:`), or environment variable name or glob (`env:`)
    bool environment = false;
    std::string lever;
    KeyClass key_class = KeyClass::unknown;
    Domain domain;
    std::vector<std::string> companion_of;
    bool trial_only = false;
    std::optional<Expression> derived_from;  ///< for derived keys: the value they must have
    std::string why;
    std::string source;  ///< `file:line` of the rule
};

/// How a named number is read from a recipe (docs/adapters.md, "Quantities").
struct QuantityRule {
    std::string name;
    std::vector<std::string> paths;
    std::string cluster_field;
    std::optional<double> default_value;
    std::optional<Expression> expr;
    std::map<std::string, double> map;
    std::string model_field;  ///< else the field of the model the recipe names (`model: vocab`)
};

/// The keys by which a recipe names its model and its tokenizer (docs/adapters.md, "The model's identity").
struct ModelKeys {
    std::vector<std::string> names;       ///< a model id or a local folder with config.json
    std::vector<std::string> tokenizers;  ///< a tokenizer id (its vocabulary) or a local folder
};

/// How the simulator models a family's runtime: Megatron-Core (its own activation layout and
/// fused loss) or PyTorch FSDP (FSDP1 or FSDP2/DTensor, with Hugging Face models).
enum class Engine { megatron_core, fsdp };
/// The log format `attune sim train` writes for a family (diagnose reads both).
enum class LogDialect { megatron, automodel, torchtitan };

/// What the simulator, the search space and the rules need to know about a family's runtime
/// (docs/adapters.md, "Runtime").
struct Runtime {
    Engine engine = Engine::fsdp;
    LogDialect log_dialect = LogDialect::automodel;
    /// On/off levers the runtime sets where the recipe is silent (NeMo: no grad-reduce overlap).
    std::map<std::string, bool> defaults;
    /// How the family writes each recompute choice (`none`, `selective`, `full`): every key at once.
    std::map<std::string, std::map<std::string, recipe::Value>> recompute;
};

/// One recipe family, as its gate/frameworks/<name>.yaml file describes it.
class Adapter {
public:
    /// Reads an adapter file; throws InputError with `file:line: what was expected`. The
    /// catalogue resolves the models recipes name (none: only local config.json files do).
    static Adapter load(const std::filesystem::path& path, std::shared_ptr<const model::Catalogue> catalogue = nullptr);

    [[nodiscard]] const std::string& name() const { return m_name; }
    [[nodiscard]] const std::string& title() const { return m_title; }
    [[nodiscard]] const std::string& source() const { return m_source; }
    [[nodiscard]] const std::vector<std::string>& env_sections() const { return m_env_sections; }
    /// The Hydra package the family's launcher composes a recipe in (HyperPod's `recipes`), or empty.
    [[nodiscard]] const std::string& launcher_package() const { return m_launcher_package; }
    [[nodiscard]] const std::vector<KeyRule>& key_rules() const { return m_keys; }
    /// The rules for environment variables (their patterns are variable names).
    [[nodiscard]] const std::vector<KeyRule>& env_rules() const { return m_env; }

    /// How well the recipe matches this family: nullopt when it does not, else a score.
    [[nodiscard]] std::optional<int> detect(const recipe::Document& recipe) const;

    /// The rule for a key path (an environment variable when the path is inside an env
    /// section), or nullptr when no rule knows it.
    [[nodiscard]] const KeyRule* classify(std::string_view path) const;

    /// A named quantity of the recipe (tp, gbs, world, ...), or nullopt when the recipe,
    /// the cluster and the defaults do not give it.
    [[nodiscard]] std::optional<double> quantity(const recipe::Document& recipe, std::string_view name,
                                                 const cluster::Cluster& cluster) const;
    [[nodiscard]] bool has_quantity(std::string_view name) const;
    /// True when the recipe sets the quantity, or one it is computed from, to a value built from a
    /// variable it does not give (`$MOE_AUX_COEFF`): unknown, though written, unlike a key left out.
    [[nodiscard]] bool unresolved(const recipe::Document& recipe, std::string_view name) const;
    /// How a recipe gives a quantity (its keys, the model it names, or what it is computed from), for a message.
    [[nodiscard]] std::string how_to_give(std::string_view name) const;
    /// The key paths a quantity is read from, in order (empty for computed quantities).
    [[nodiscard]] std::vector<std::string> quantity_paths(std::string_view name) const;

    [[nodiscard]] const Runtime& runtime() const { return m_runtime; }
    /// How the family's trainer is given a trial, appended to a cluster launcher that has no
    /// placeholder of its own: `[{recipe}]` unless the file's `launch.args` says otherwise.
    [[nodiscard]] const std::vector<std::string>& launch_args() const { return m_launch_args; }
    [[nodiscard]] const ModelKeys& model_keys() const { return m_model_keys; }
    /// The model the recipe trains: the `--model-config` it was given, else by its model keys (a
    /// local config.json, else the catalogue), else by its tokenizer keys. Nullopt when none resolves.
    [[nodiscard]] std::optional<model::Identity> model_identity(const recipe::Document& recipe) const;
    /// The name the recipe gives its model: the first of its model, then tokenizer keys it sets.
    [[nodiscard]] std::optional<std::string> model_name(const recipe::Document& recipe) const;
    /// How a recipe says which model it trains (for a message): its model and tokenizer keys.
    [[nodiscard]] std::string model_hint() const;
    /// A catalogued name close to `name`, for a did-you-mean.
    [[nodiscard]] std::optional<std::string> closest_model(std::string_view name) const;

    /// The effective value of a canonical lever, from the first key of that lever the recipe sets.
    [[nodiscard]] std::optional<recipe::Value> lever_value(const recipe::Document& recipe, std::string_view lever) const;
    /// The key path a lever is written at (the first exact rule of that lever).
    [[nodiscard]] std::optional<std::string> lever_path(std::string_view lever) const;
    /// The values a lever may take, from its first exact rule; empty when it is a range or free.
    [[nodiscard]] std::vector<recipe::Value> lever_domain(std::string_view lever) const;
    /// The rule of a lever's first exact key, or nullptr.
    [[nodiscard]] const KeyRule* lever_rule(std::string_view lever) const;

private:
    std::optional<double> model_field(const recipe::Document& recipe, const std::string& field) const;
    std::optional<model::Identity> identity_by(const recipe::Document& recipe, const std::vector<std::string>& keys,
                                               bool models_only) const;
    /// The rule of the quantity of that name, or nullptr.
    const QuantityRule* quantity_rule(std::string_view name) const;
    bool unresolved_at_depth(const recipe::Document& recipe, std::string_view name, int depth) const;
    std::optional<double> quantity_at_depth(const recipe::Document& recipe, std::string_view name,
                                            const cluster::Cluster& cluster, int depth) const;

    std::string m_name;
    std::string m_title;
    std::string m_source;
    std::vector<std::string> m_require;
    std::vector<std::string> m_exclude;
    std::vector<std::string> m_prefer;
    std::vector<std::string> m_env_sections;
    std::string m_launcher_package;
    std::vector<QuantityRule> m_quantities;
    std::vector<KeyRule> m_keys;
    std::vector<KeyRule> m_env;
    ModelKeys m_model_keys;
    Runtime m_runtime;
    std::vector<std::string> m_launch_args{"{recipe}"};
    std::shared_ptr<const model::Catalogue> m_catalogue;
};

/// A rule that must hold between the baseline and the candidate (gate/invariants.yaml).
struct Invariant {
    std::string name;
    std::optional<Expression> same;   ///< must evaluate equal on both
    std::optional<Expression> holds;  ///< must be true on the candidate
    std::optional<Expression> when;   ///< `same`: applies when true on either side; `holds`: when true on the candidate
    std::string why;
};

/// Every adapter and invariant, with the hash of the files they came from.
class Rules {
public:
    /// Loads gate/frameworks/*.yaml, gate/invariants.yaml and gate/models.yaml (when there) below `data_dir`.
    static Rules load(const std::filesystem::path& data_dir);

    [[nodiscard]] const std::vector<Adapter>& adapters() const { return m_adapters; }
    [[nodiscard]] const std::vector<Invariant>& invariants() const { return m_invariants; }
    /// SHA-256 over every rules file (name and bytes): a journal records which rules judged.
    [[nodiscard]] const std::string& hash() const { return m_hash; }

    /// The family of a recipe: `framework` when given, else the best-scoring detection.
    /// Throws InputError naming the recipe and the known families when none matches.
    [[nodiscard]] const Adapter& adapter_for(const recipe::Document& recipe, std::string_view framework = {}) const;
    [[nodiscard]] const Adapter* find(std::string_view framework) const;

private:
    std::vector<Adapter> m_adapters;
    std::vector<Invariant> m_invariants;
    std::string m_hash;
};

/// The rules in attune's data folder, loaded once.
const Rules& default_rules();

/// The adapter of a recipe under the default rules; throws InputError when none matches.
const Adapter& detect_adapter(const recipe::Document& recipe);

/// Loads a recipe as its family reads it: detected on the raw text, then resolved with the
/// family's environment sections. `framework` forces the family; `model_config` (`--model-config`)
/// is the Hugging Face config.json of the model the recipe trains, read now (InputError if it is none).
struct LoadedRecipe {
    recipe::Document document;
    const Adapter* adapter;
};
LoadedRecipe load_recipe(const std::filesystem::path& path, const Rules& rules, std::string_view framework = {},
                         const std::optional<std::filesystem::path>& model_config = std::nullopt);

}  // namespace attune::gate
