#pragma once

// The parse tree behind a recipe::Document: private to src/recipe/.

#include <attune/recipe/document.hpp>

#include <optional>
#include <string>
#include <vector>

namespace attune::recipe {

struct Node {
    enum class Kind { null, scalar, sequence, mapping };
    Kind kind = Kind::null;
    std::string text;        ///< a scalar's value
    bool plain = true;       ///< false when quoted or tagged as a string
    std::string tag;         ///< an explicit tag (`!!int`), empty when none
    Mark mark;               ///< where the node starts, as the YAML parser reports it
    Mark key_mark;           ///< for a mapping value: where its key starts
    bool flow = false;       ///< a container written in flow style (`[a, b]`, `{a: 1}`)
    bool from_alias = false; ///< copied from an anchor or merged in: not written at this place
    /// From the base config a launch command names: an edit writes a `key=value` override instead.
    bool from_base = false;
    /// A launch command's Hydra/OmegaConf `key=value` override (or a mapping its dotted key implies).
    bool hydra_override = false;
    /// On a launch script's root: where and how a new override is written (`end` is 0 when the script
    /// has no command that takes overrides).
    struct OverrideSpot {
        std::size_t end = 0;     ///< after the last override (or the base config's name)
        bool flags = false;      ///< dotted flags (`--a.b value`, tyro's and torchtitan's form), not Hydra's `a.b=value`
        bool own_line = false;   ///< the last override starts its line: a new one goes on a line of its own
        std::string indent;      ///< and is indented like it
    } overrides;
    /// A dotted flag written without a value (`--compile.enable`, `--metrics.no_enable_tensorboard`): a
    /// boolean whose edit rewrites the flag itself, `--a.b` for true and `--a.no_b` for false.
    std::string bool_flag;
    int last_line = 0;       ///< the last line the node's text reaches
    /// Where the written value lies in the text, when the reader knows (TOML): bytes [begin, end).
    std::size_t begin = 0, end = 0;
    bool spanned = false;
    /// A launch script's flag with its values: the bytes an edit removes to turn it off or unset it.
    std::size_t entry_begin = 0, entry_end = 0;
    /// A TOML table the text opens with its own `[header]` (keys can be added below it).
    bool headed = false;
    /// Why no edit may rewrite this value (a launch script's flag without a value, or one read
    /// through a variable several flags share); empty when it can be edited.
    std::string edit_refusal;
    std::vector<std::string> keys;  ///< a mapping's keys, parallel to children
    std::vector<Node> children;     ///< a mapping's values or a sequence's items
};

struct Tree {
    Node root;
    std::vector<Duplicate> duplicates;
    std::vector<BaseConfig> bases;
    std::vector<MissingDefault> missing_defaults;
};

/// Parses YAML text into a tree with positions; resolves anchors, aliases and merge keys;
/// records duplicate keys. Throws InputError naming `origin` and the line.
Tree read_yaml(const std::string& text, const std::string& origin);

/// Parses TOML text into a tree with positions (tables as mappings, arrays as sequences, in
/// document order). A key written twice is refused. Throws InputError naming `origin` and the line.
Tree read_toml(const std::string& text, const std::string& origin);

/// Parses a launch script (variable assignments and `NAME=( --flag value ... )` argument arrays)
/// into a tree of arrays and flags. Throws InputError naming `origin` and the line of what it cannot follow.
Tree read_shell(const std::string& text, const std::string& origin);

/// Composes a YAML recipe's Hydra `defaults:` list, read from `origin`, around its own keys, as Hydra
/// does: each config found below the recipe's folder or a folder above it, at its package (a package
/// starting with `launcher_package` lands at the recipe's own keys), `_self_` where the recipe's keys
/// go. The configs' keys are marked from_base; a config not found is listed in missing_defaults.
void compose_defaults(Tree& tree, const std::string& origin, const std::string& launcher_package);

/// Joins a key path: `parent.key`, or `parent[index]`.
std::string child_path(const std::string& parent, const std::string& key);
std::string item_path(const std::string& parent, std::size_t index);

/// Splits a key path into segments: `a.b[2].c` → `a`, `b`, `[2]`, `c`.
std::vector<std::string> split_path(std::string_view path);

/// The node at a path, or nullptr.
const Node* find_node(const Node& root, std::string_view path);

/// Where a scalar written at `mark` ends in `text` (a byte offset), skipping its anchor and tag.
/// `start` receives the offset of its first character. Returns false for block scalars.
bool scalar_span(const std::string& text, const Mark& mark, bool in_flow, std::size_t& start, std::size_t& end);

/// The byte offset of a 1-based line and 0-based column.
std::size_t offset_of(const std::string& text, int line, int column);

}  // namespace attune::recipe
