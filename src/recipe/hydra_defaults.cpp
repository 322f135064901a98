// A YAML recipe's Hydra defaults list, composed as Hydra composes it (HyperPod's LLMFT recipes are a
// thin defaults list over config groups; NeMo's name an optional userbuffer config).

#include "tree.hpp"

#include <attune/core/error.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <algorithm>
#include <filesystem>

namespace attune::recipe {

namespace {

namespace fs = std::filesystem;

// Deeper than any real defaults tree; also ends a config that includes itself.
constexpr int k_max_depth = 16;

/// One entry of a defaults list, as Hydra reads it.
struct Entry {
    std::string config;            ///< the config's path below a search root, without `.yaml`
    std::optional<std::string> at; ///< `group@package`: a package relative to the including config's
    bool self = false;             ///< `_self_`: where the config's own keys go
    bool optional = false;         ///< `optional group: option`: no error when the file is absent
    std::string written;           ///< as written, for messages
};

std::string dotted(std::string path) {
    std::replace(path.begin(), path.end(), '/', '.');
    return path;
}

std::string joined(const std::string& a, const std::string& b) { return a.empty() ? b : b.empty() ? a : a + "." + b; }

std::string parent_of(const std::string& config) {
    const auto slash = config.rfind('/');
    return slash == std::string::npos ? std::string() : config.substr(0, slash);
}

/// Every node of a config the recipe composes: not written in the recipe, so an edit writes the key
/// into the recipe itself; its position is the line of the recipe's defaults entry that brought it.
void mark_composed(Node& node, int line, const std::string& refusal) {
    node.from_base = true;
    node.spanned = node.headed = false;
    node.mark = node.key_mark = {line, 0};
    node.last_line = line;
    node.edit_refusal = refusal;
    for (auto& child : node.children) mark_composed(child, line, refusal);
}

/// `top` laid over `bottom`, as OmegaConf merges configs: top's values win; two mappings merge key by
/// key. A mapping keeps the place of the one written in the recipe, and the recipe's keys come first,
/// so that a new key is added where the recipe's own keys are.
Node layered(Node bottom, Node top) {
    if (bottom.kind != Node::Kind::mapping || top.kind != Node::Kind::mapping) return top;
    const bool top_written = !top.from_base;
    Node& result = top_written || bottom.from_base ? top : bottom;
    Node& other = &result == &top ? bottom : top;
    for (std::size_t i = 0; i < other.keys.size(); ++i) {
        const auto found = std::find(result.keys.begin(), result.keys.end(), other.keys[i]);
        if (found == result.keys.end()) {
            result.keys.push_back(other.keys[i]);
            result.children.push_back(std::move(other.children[i]));
            continue;
        }
        Node& mine = result.children[static_cast<std::size_t>(found - result.keys.begin())];
        mine = &result == &top ? layered(std::move(other.children[i]), std::move(mine)) : layered(std::move(mine), std::move(other.children[i]));
    }
    return std::move(result);
}

/// A config's content placed at its package (`a.b` nests it under `a:` and `b:`).
Node placed(Node content, const std::string& package) {
    const auto segments = split_path(package);
    for (auto segment = segments.rbegin(); segment != segments.rend(); ++segment) {
        Node wrapper;
        wrapper.kind = Node::Kind::mapping;
        wrapper.from_base = content.from_base;
        wrapper.mark = wrapper.key_mark = content.mark;
        wrapper.keys.push_back(*segment);
        wrapper.children.push_back(std::move(content));
        content = std::move(wrapper);
    }
    return content;
}

/// The `# @package` directive of a config file's header, or nullopt.
std::optional<std::string> package_directive(const std::string& text) {
    std::size_t at = 0;
    while (at < text.size()) {
        const auto end = std::min(text.find('\n', at), text.size());
        const auto line = util::trim(std::string_view(text).substr(at, end - at));
        at = end + 1;
        if (line.empty()) continue;
        if (!line.starts_with("#")) break;
        const auto directive = line.find("@package");
        if (directive == std::string_view::npos) continue;
        auto rest = util::trim(line.substr(directive + 8));
        if (rest.starts_with(":")) rest = util::trim(rest.substr(1));
        return std::string(rest.substr(0, rest.find_first_of(" \t#")));
    }
    return std::nullopt;
}

class Composer {
public:
    Composer(const std::string& origin, std::string launcher_package, Tree& tree)
        : m_origin(origin), m_launcher_package(std::move(launcher_package)), m_tree(tree) {
        auto dir = fs::absolute(fs::path(origin)).parent_path();
        m_beside = dir;
        for (; !dir.empty(); dir = dir.parent_path()) {
            m_roots.push_back(dir);
            if (dir == dir.parent_path()) break;
        }
    }

    /// The recipe with its defaults composed around its own keys.
    void compose_recipe() {
        Node& root = m_tree.root;
        const auto defaults = std::find(root.keys.begin(), root.keys.end(), "defaults");
        const Node list = root.children[static_cast<std::size_t>(defaults - root.keys.begin())];
        Node own = std::move(root);
        Node result;
        result.kind = Node::Kind::mapping;
        result.from_base = true;
        bool after_self = false;
        bool self_seen = false;
        for (std::size_t i = 0; i < list.children.size(); ++i) {
            const Node& item = list.children[i];
            for (const Entry& entry : entries_of(item, m_origin)) {
                if (entry.self) {
                    result = layered(std::move(result), std::move(own));
                    after_self = self_seen = true;
                    continue;
                }
                // A key a config after `_self_` sets wins over the recipe's own: writing it in the
                // recipe would change nothing.
                const std::string refusal = after_self ? "'" + entry.written + "', listed after _self_ in the defaults list (line " +
                                                             std::to_string(item.mark.line) + "), sets it; edit that config"
                                                       : std::string();
                if (auto content = composed(entry, "", "", item.mark.line, 0)) {
                    mark_composed(*content, item.mark.line, refusal);
                    result = layered(std::move(result), std::move(*content));
                }
            }
        }
        // Hydra (1.1 and later) composes a config's own keys last when its list does not name `_self_`.
        if (!self_seen) result = layered(std::move(result), std::move(own));
        root = std::move(result);
    }

private:
    /// The entries one item of a defaults list stands for (a group may select several options).
    static std::vector<Entry> entries_of(const Node& item, const std::string& file) {
        auto fail = [&](const std::string& what) -> std::vector<Entry> {
            throw InputError(file + ":" + std::to_string(item.mark.line) + ": defaults entry " + what);
        };
        if (item.kind == Node::Kind::scalar) {
            Entry entry;
            entry.written = item.text;
            entry.self = item.text == "_self_";
            const auto at = item.text.find('@');
            entry.config = item.text.substr(0, at);
            if (at != std::string::npos) entry.at = item.text.substr(at + 1);
            return {entry};
        }
        if (item.kind != Node::Kind::mapping || item.keys.size() != 1)
            return fail("is neither a config path nor `group: option`; expected Hydra's defaults list syntax");
        std::string key = item.keys.front();
        if (key.starts_with("override "))
            return fail("'" + key + "': an override of a group another config selects is not read; select the option in that config");
        Entry base;
        if (key.starts_with("optional ")) {
            base.optional = true;
            key = std::string(util::trim(std::string_view(key).substr(9)));
        }
        const auto at = key.find('@');
        const std::string group = key.substr(0, at);
        if (at != std::string::npos) base.at = key.substr(at + 1);
        const Node& value = item.children.front();
        std::vector<const Node*> options;
        if (value.kind == Node::Kind::sequence)
            for (const auto& option : value.children) options.push_back(&option);
        else
            options.push_back(&value);
        std::vector<Entry> entries;
        for (const Node* option : options) {
            // `group: null` selects nothing; `???` is an option the command line must give.
            if (option->kind == Node::Kind::null || option->text == "???") continue;
            if (option->kind != Node::Kind::scalar) return fail("'" + key + "': expected an option name or a list of them");
            Entry entry = base;
            entry.config = group + "/" + option->text;
            entry.written = key + ": " + option->text;
            entries.push_back(std::move(entry));
        }
        return entries;
    }

    /// An entry's config, composed with its own defaults, at its package; nullopt when it is absent.
    std::optional<Node> composed(const Entry& entry, const std::string& including_group, const std::string& including_package,
                                 int line, int depth) {
        if (depth >= k_max_depth)
            throw InputError(m_origin + ":" + std::to_string(line) + ": the defaults list nests deeper than " +
                             std::to_string(k_max_depth) + " configs; expected no config to include itself");
        const bool absolute = entry.config.starts_with("/");
        const std::string config = absolute ? entry.config.substr(1) : joined_path(including_group, entry.config);
        const auto found = find(config);
        if (!found) {
            if (!entry.optional) m_tree.missing_defaults.push_back({entry.written, line});
            return std::nullopt;
        }
        const std::string text = util::read_text_file(found->first, 16u << 20);
        Tree file = read_yaml(text, found->first.string());
        m_tree.bases.push_back(BaseConfig{found->second, found->first});
        // Hydra's order of precedence: the package the defaults list gives (relative to the including
        // config's), the file's @package directive (absolute), else the config's group.
        const std::string group = parent_of(config);
        std::string package = dotted(group);
        if (const auto directive = package_directive(text)) {
            package = *directive == "_global_" ? std::string() : *directive == "_group_" ? dotted(group) : *directive;
        }
        if (entry.at) package = joined(including_package, *entry.at == "_global_" ? std::string() : *entry.at);
        package = without_launcher_package(package);
        return composed_file(std::move(file.root), found->first.string(), group, package, line, depth);
    }

    Node composed_file(Node own, const std::string& file, const std::string& group, const std::string& package, int line, int depth) {
        Node list;
        if (const auto defaults = std::find(own.keys.begin(), own.keys.end(), "defaults"); defaults != own.keys.end()) {
            const auto index = static_cast<std::size_t>(defaults - own.keys.begin());
            list = std::move(own.children[index]);
            own.keys.erase(own.keys.begin() + static_cast<std::ptrdiff_t>(index));
            own.children.erase(own.children.begin() + static_cast<std::ptrdiff_t>(index));
        }
        Node mine = placed(std::move(own), package);
        Node result;
        result.kind = Node::Kind::mapping;
        bool self_seen = false;
        for (const auto& item : list.children) {
            for (const Entry& entry : entries_of(item, file)) {
                if (entry.self) {
                    result = layered(std::move(result), std::move(mine));
                    self_seen = true;
                } else if (auto content = composed(entry, group, package, line, depth + 1)) {
                    result = layered(std::move(result), std::move(*content));
                }
            }
        }
        if (!self_seen) result = layered(std::move(result), std::move(mine));
        return result;
    }

    static std::string joined_path(const std::string& group, const std::string& config) {
        return group.empty() ? config : group + "/" + config;
    }

    /// The package a launcher composes the recipe in (HyperPod's `recipes`): its configs' keys are the recipe's.
    [[nodiscard]] std::string without_launcher_package(const std::string& package) const {
        if (m_launcher_package.empty()) return package;
        if (package == m_launcher_package) return {};
        if (package.starts_with(m_launcher_package + ".")) return package.substr(m_launcher_package.size() + 1);
        return package;
    }

    /// The file of a config path, searched below the recipe's folder and each folder above it (Hydra's
    /// search path is the recipe's folder plus the launcher's config roots, which hold it), then by its
    /// name beside the recipe (a recipe copied out of its tree with the configs it needs). Returns the
    /// file and the path a copy must have, relative to where the recipe lies, to be found the same way.
    [[nodiscard]] std::optional<std::pair<fs::path, std::string>> find(const std::string& config) const {
        const std::string relative = config + ".yaml";
        for (const auto& root : m_roots) {
            const auto file = root / relative;
            if (fs::is_regular_file(file)) return std::pair{file, relative};
        }
        const std::string name = fs::path(relative).filename().string();
        if (fs::is_regular_file(m_beside / name)) return std::pair{m_beside / name, name};
        return std::nullopt;
    }

    const std::string& m_origin;
    std::string m_launcher_package;
    Tree& m_tree;
    fs::path m_beside;
    std::vector<fs::path> m_roots;
};

}  // namespace

void compose_defaults(Tree& tree, const std::string& origin, const std::string& launcher_package) {
    const Node& root = tree.root;
    const auto defaults = std::find(root.keys.begin(), root.keys.end(), "defaults");
    if (defaults == root.keys.end() || root.children[static_cast<std::size_t>(defaults - root.keys.begin())].kind != Node::Kind::sequence)
        return;
    Composer(origin, launcher_package, tree).compose_recipe();
}

}  // namespace attune::recipe
