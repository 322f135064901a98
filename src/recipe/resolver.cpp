#include "resolver.hpp"

#include <attune/core/error.hpp>
#include <attune/util/strings.hpp>

#include <map>
#include <optional>
#include <set>

namespace attune::recipe {

namespace {

// Deeper chains than this are cycles in practice.
constexpr int k_max_interpolation_depth = 32;

Value typed_value(const Node& node) {
    switch (node.kind) {
        case Node::Kind::null: return Value::null();
        case Node::Kind::sequence: return Value::empty_list();
        case Node::Kind::mapping: return Value::empty_map();
        case Node::Kind::scalar: break;
    }
    if (node.tag.empty()) return node.plain ? Value::from_plain(node.text) : Value::string(node.text);
    const Value typed = Value::from_plain(node.text);
    if (node.tag.ends_with(":int") || node.tag.ends_with(":float"))
        if (auto number = typed.as_number()) return Value::number(*number, node.text);
    if (node.tag.ends_with(":bool") && typed.kind() == Value::Kind::boolean) return typed;
    if (node.tag.ends_with(":null")) return Value::null();
    return Value::string(node.text);
}

void collect_leaves(const Node& node, const std::string& path, std::vector<Leaf>& leaves) {
    const bool container = node.kind == Node::Kind::mapping || node.kind == Node::Kind::sequence;
    if (container && !node.children.empty()) {
        for (std::size_t i = 0; i < node.children.size(); ++i) {
            const auto next = node.kind == Node::Kind::mapping ? child_path(path, node.keys[i]) : item_path(path, i);
            collect_leaves(node.children[i], next, leaves);
        }
        return;
    }
    Leaf leaf;
    leaf.path = path;
    leaf.value = typed_value(node);
    leaf.written = node.kind == Node::Kind::scalar ? node.text : leaf.value.to_string();
    leaf.origin = node.from_alias ? Origin::alias : node.from_base ? Origin::base : Origin::written;
    leaf.mark = node.mark;
    leaves.push_back(std::move(leaf));
}

std::string container_of(const std::string& path) {
    const auto segments = split_path(path);
    std::string parent;
    for (std::size_t i = 0; i + 1 < segments.size(); ++i)
        parent = segments[i].front() == '[' ? parent + segments[i] : child_path(parent, segments[i]);
    return parent;
}

/// Resolves `${...}` in leaf values, memoising each path and refusing cycles.
class Resolver {
public:
    Resolver(const Node& root, std::vector<Leaf>& leaves, const std::vector<std::string>& env_sections, std::string origin)
        : m_root(root), m_leaves(leaves), m_env_sections(env_sections), m_origin(std::move(origin)) {
        for (std::size_t i = 0; i < leaves.size(); ++i) m_index[leaves[i].path] = i;
    }

    void resolve_all() {
        for (std::size_t i = 0; i < m_leaves.size(); ++i) resolve_leaf(i, 0);
    }

private:
    struct Part {
        bool resolved = true;
        Value value;
    };

    const Value& resolve_leaf(std::size_t index, int depth) {
        Leaf& leaf = m_leaves[index];
        if (m_done.count(index) != 0 || leaf.value.kind() != Value::Kind::string ||
            leaf.written.find("${") == std::string::npos) {
            m_done.insert(index);
            return leaf.value;
        }
        if (m_active.count(index) != 0 || depth > k_max_interpolation_depth)
            throw InputError(m_origin + ":" + std::to_string(leaf.mark.line) + ": interpolation cycle through '" +
                             leaf.path + "'");
        m_active.insert(index);
        const auto resolved = interpolate(leaf.written, leaf.path, depth + 1);
        m_active.erase(index);
        m_done.insert(index);
        if (resolved) {
            leaf.value = *resolved;
            leaf.origin = Origin::interpolation;
        }
        return leaf.value;
    }

    /// The whole string with every `${...}` replaced; nullopt when any part stays unresolved.
    std::optional<Value> interpolate(const std::string& text, const std::string& at, int depth) {
        std::vector<Part> parts;
        std::string literal;
        bool single = true;
        std::size_t i = 0;
        while (i < text.size()) {
            if (text.compare(i, 2, "${") != 0) {
                literal += text[i++];
                continue;
            }
            const auto close = matching_brace(text, i + 2);
            if (close == std::string::npos) return std::nullopt;
            if (!literal.empty()) {
                parts.push_back({true, Value::string(literal)});
                literal.clear();
            }
            parts.push_back(evaluate(text.substr(i + 2, close - i - 2), at, depth));
            i = close + 1;
        }
        if (!literal.empty()) parts.push_back({true, Value::string(literal)});
        single = parts.size() == 1;
        std::string joined;
        for (const auto& part : parts) {
            if (!part.resolved) return std::nullopt;
            joined += part.value.to_string();
        }
        if (single) return parts.front().value;
        return Value::string(joined);
    }

    static std::size_t matching_brace(const std::string& text, std::size_t from) {
        int open = 1;
        for (std::size_t i = from; i < text.size(); ++i) {
            if (text.compare(i, 2, "${") == 0) {
                ++open;
                ++i;
            } else if (text[i] == '}' && --open == 0) {
                return i;
            }
        }
        return std::string::npos;
    }

    Part evaluate(const std::string& inner, const std::string& at, int depth) {
        const auto colon = inner.find(':');
        const std::string name(util::trim(inner.substr(0, colon)));
        const bool is_resolver = colon != std::string::npos &&
                                 name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.") ==
                                     std::string::npos;
        if (!is_resolver) return reference(std::string(util::trim(inner)), at, depth);
        const auto arguments = split_arguments(inner.substr(colon + 1));
        if (name == "oc.env" || name == "env") return environment(arguments, at, depth);
        if (name == "multiply") return multiply(arguments, at, depth);
        if (name == "oc.select" && !arguments.empty()) {
            auto found = reference(arguments[0], at, depth);
            if (found.resolved || arguments.size() < 2) return found;
            return argument(arguments[1], at, depth);
        }
        return {false, {}};
    }

    static std::vector<std::string> split_arguments(const std::string& text) {
        std::vector<std::string> arguments;
        std::string current;
        int nesting = 0;
        for (char c : text) {
            if (c == '{') ++nesting;
            if (c == '}') --nesting;
            if (c == ',' && nesting == 0) {
                arguments.emplace_back(util::trim(current));
                current.clear();
                continue;
            }
            current += c;
        }
        arguments.emplace_back(util::trim(current));
        return arguments;
    }

    Part argument(const std::string& text, const std::string& at, int depth) {
        std::string unquoted = text;
        if (unquoted.size() >= 2 && (unquoted.front() == '\'' || unquoted.front() == '"') &&
            unquoted.back() == unquoted.front())
            return {true, Value::string(unquoted.substr(1, unquoted.size() - 2))};
        if (unquoted.find("${") != std::string::npos) {
            auto value = interpolate(unquoted, at, depth);
            return value ? Part{true, *value} : Part{false, {}};
        }
        return {true, Value::from_plain(unquoted)};
    }

    Part multiply(const std::vector<std::string>& arguments, const std::string& at, int depth) {
        double product = 1;
        for (const auto& text : arguments) {
            const auto part = argument(text, at, depth);
            const auto number = part.resolved ? part.value.as_number() : std::nullopt;
            if (!number) return {false, {}};
            product *= *number;
        }
        return {true, Value::number(product)};
    }

    Part environment(const std::vector<std::string>& arguments, const std::string& at, int depth) {
        if (arguments.empty()) return {false, {}};
        for (const auto& section : m_env_sections) {
            const auto found = m_index.find(child_path(section, arguments[0]));
            if (found != m_index.end()) return {true, resolve_leaf(found->second, depth)};
        }
        if (arguments.size() >= 2) return argument(arguments[1], at, depth);
        return {false, {}};
    }

    Part reference(const std::string& target, const std::string& at, int depth) {
        const auto path = absolute_path(target, at);
        if (!path) return {false, {}};
        const auto found = m_index.find(*path);
        if (found == m_index.end()) return {false, {}};
        return {true, resolve_leaf(found->second, depth)};
    }

    /// `.x` is a sibling, `..x` a sibling of the parent; a launcher prefix such as `recipes.` or
    /// `training.` that names no top-level key is dropped, as the launcher nests the recipe under it.
    [[nodiscard]] std::optional<std::string> absolute_path(const std::string& target, const std::string& at) const {
        if (target.empty()) return std::nullopt;
        if (target.front() == '.') {
            std::size_t dots = target.find_first_not_of('.');
            if (dots == std::string::npos) return std::nullopt;
            std::string base = container_of(at);
            for (std::size_t up = 1; up < dots; ++up) base = container_of(base);
            return child_path(base, target.substr(dots));
        }
        if (find_node(m_root, target) != nullptr) return target;
        const auto first_dot = target.find('.');
        if (first_dot == std::string::npos) return std::nullopt;
        const auto rest = target.substr(first_dot + 1);
        const auto head = target.substr(0, first_dot);
        if (find_node(m_root, head) == nullptr && find_node(m_root, rest) != nullptr) return rest;
        return std::nullopt;
    }

    const Node& m_root;
    std::vector<Leaf>& m_leaves;
    const std::vector<std::string>& m_env_sections;
    std::string m_origin;
    std::map<std::string, std::size_t> m_index;
    std::set<std::size_t> m_done;
    std::set<std::size_t> m_active;
};

}  // namespace

std::vector<Leaf> flatten_and_resolve(const Node& root, const std::vector<std::string>& env_sections,
                                      const std::string& origin) {
    std::vector<Leaf> leaves;
    collect_leaves(root, "", leaves);
    Resolver(root, leaves, env_sections, origin).resolve_all();
    return leaves;
}

}  // namespace attune::recipe
