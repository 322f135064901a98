#pragma once

#include <attune/recipe/value.hpp>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::recipe {

/// A position in a recipe file, 1-based; 0 when unknown.
struct Mark {
    int line = 0;
    int column = 0;
};

/// How a leaf got its effective value.
enum class Origin {
    written,        ///< the scalar written at this key
    alias,          ///< copied from a YAML anchor (`*name`) or a merge key (`<<:`)
    interpolation,  ///< an OmegaConf `${...}` resolved to another key's value or an environment variable
    base,           ///< from the base config a launch command's overrides apply to (not written in the script)
};

/// One leaf of the flattened recipe: `model.optim.lr`, `model.optim.betas[0]`, `ci.env_vars.NCCL_DEBUG`.
struct Leaf {
    std::string path;
    Value value;        ///< the effective value, after aliases and interpolations
    std::string written;  ///< the scalar as written (e.g. `${model.encoder_seq_length}`)
    Origin origin = Origin::written;
    Mark mark;
};

/// A key written twice in one mapping; YAML loaders keep one silently, the gate refuses it.
struct Duplicate {
    std::string path;
    int first_line = 0;
    int second_line = 0;
};

/// One change to a recipe: set the key path to a value, creating the key when asked.
struct Edit {
    std::string path;
    Value value;
    bool create = false;  ///< hydra's `+key=value`: the key must not exist yet
};

/// Parses a hydra-style override (`key=value`, `+key=value`, `++key=value`). The value is typed
/// as YAML types a plain scalar. Throws InputError naming `origin` on a malformed override.
Edit parse_override(std::string_view text, std::string_view origin);

/// A config file the recipe composes (a launch command's base config, a Hydra defaults entry's config):
/// the path a copy needs beside a copy of the recipe to be found the same way, and where it was found.
struct BaseConfig {
    std::string named;
    std::filesystem::path file;
};

/// A Hydra defaults entry whose config is not found: the keys it would set are unknown to attune.
struct MissingDefault {
    std::string entry;
    int line = 0;
};

class Tree;

/// A path any top-level section may hold, `*.--num-layers`: a Megatron-LM flag in whichever
/// argument array (or MODEL_ARGS mapping) the recipe writes it. Only its first segment is `*`.
bool is_any_section(std::string_view path);
/// True for the paths a Document finds and edits: exact ones and any-section ones (no other wildcard).
bool is_key_path(std::string_view pattern);

/// How a recipe file is written. The format follows the file's extension: `.json` (DeepSpeed
/// configs), `.toml` (torchtitan job files), `.sh` (launch scripts with argument arrays, as
/// Megatron-LM's examples, and commands with Hydra/OmegaConf `key=value` overrides over a base
/// config they name), anything else YAML.
enum class Format { yaml, json, toml, shell };
Format format_of(const std::filesystem::path& path);
/// True for a file a recipe may be written in: `.yaml`, `.yml`, `.json`, `.toml`, `.sh`, `.bash`.
bool is_recipe_file(const std::filesystem::path& path);
/// The extension a copy of a recipe in that format is written with (`.yaml`, `.json`, `.toml`).
std::string extension_of(Format format);

/// A recipe file: the text as written, its parse tree with positions, and the flattened,
/// resolved leaves the gate and the simulator read. Immutable; edits produce a new Document.
class Document {
public:
    /// Loads a recipe in the format its extension names. `env_sections` name the mappings whose keys are environment
    /// variables, for `${oc.env:VAR}`. Throws InputError with `path:line: what was expected`.
    static Document load(const std::filesystem::path& path, const std::vector<std::string>& env_sections = {});
    /// Parses recipe text; `origin` names it in messages.
    static Document parse(std::string text, std::string origin, const std::vector<std::string>& env_sections = {});

    /// The same text, resolved again with other environment sections.
    [[nodiscard]] Document with_env_sections(const std::vector<std::string>& env_sections) const;
    /// The same text, composed again for a launcher that composes the recipe in the Hydra package
    /// `package` (HyperPod's `recipes`): a defaults config at `package.x` sets the recipe's `x`.
    [[nodiscard]] Document with_launcher_package(std::string package) const;
    /// The same recipe, training the model a Hugging Face config.json describes (`--model-config`):
    /// what the user says the model is, where the recipe cannot say it. Edits keep it.
    [[nodiscard]] Document with_model_config(std::filesystem::path config_json) const;
    [[nodiscard]] const std::optional<std::filesystem::path>& model_config() const { return m_model_config; }

    /// A new document with the edits applied to the text: untouched keys, comments and order
    /// stay as written. Throws InputError when an edit cannot be written (a list item that does
    /// not exist, a key inside a flow mapping that must be created, a block scalar, an alias). Setting
    /// null a key the recipe does not write changes nothing.
    [[nodiscard]] Document with_edits(const std::vector<Edit>& edits) const;

    [[nodiscard]] const std::string& origin() const { return m_origin; }
    [[nodiscard]] Format format() const { return m_format; }
    [[nodiscard]] const std::string& text() const { return m_text; }
    [[nodiscard]] const std::vector<Leaf>& leaves() const { return m_leaves; }
    [[nodiscard]] const std::vector<Duplicate>& duplicates() const { return m_duplicates; }
    [[nodiscard]] const std::vector<std::string>& env_sections() const { return m_env_sections; }
    [[nodiscard]] const std::string& launcher_package() const { return m_launcher_package; }
    /// The configs the recipe composes: a launch script's base config, a YAML recipe's Hydra defaults
    /// (in the order read); read, never edited.
    [[nodiscard]] const std::vector<BaseConfig>& base_configs() const;
    /// The Hydra defaults entries whose configs were not found.
    [[nodiscard]] const std::vector<MissingDefault>& missing_defaults() const;

    /// The path an edit of `path` writes: itself, or for an any-section path the section that holds
    /// it, else the section holding the most keys (where the recipe's arguments are).
    [[nodiscard]] std::string placed(std::string_view path) const;
    /// The leaf at a key path (exact or any-section), or nullptr.
    [[nodiscard]] const Leaf* find_leaf(std::string_view path) const;
    /// The effective value at a key path, or nullptr.
    [[nodiscard]] const Value* find(std::string_view path) const;
    /// True when the path is a leaf or a mapping/list with leaves below it.
    [[nodiscard]] bool has(std::string_view path) const;

    ~Document();
    Document(const Document&);
    Document& operator=(const Document&);
    Document(Document&&) noexcept;
    Document& operator=(Document&&) noexcept;

private:
    Document(std::string text, std::string origin, std::vector<std::string> env_sections, std::string launcher_package = {});

    std::string m_text;
    std::string m_origin;
    Format m_format = Format::yaml;
    std::vector<std::string> m_env_sections;
    std::string m_launcher_package;
    std::optional<std::filesystem::path> m_model_config;
    std::shared_ptr<const Tree> m_tree;
    std::vector<Leaf> m_leaves;
    std::vector<Duplicate> m_duplicates;
};

}  // namespace attune::recipe
