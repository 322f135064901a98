// TOML recipes (torchtitan job files) read with toml++ into the tree the YAML reader builds, so
// that flattening, the gate and format-preserving edits work the same way.
#include <attune/core/error.hpp>
#include <attune/util/strings.hpp>

#include "tree.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <charconv>

namespace attune::recipe {
namespace {

/// Byte offsets of toml++ positions (1-based lines, 1-based columns counted in code points).
class Offsets {
public:
    explicit Offsets(const std::string& text) : m_text(text) {
        m_lines.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') m_lines.push_back(i + 1);
    }

    [[nodiscard]] std::size_t of(const toml::source_position& at) const {
        if (at.line == 0 || at.line > m_lines.size()) return m_text.size();
        std::size_t offset = m_lines[at.line - 1];
        for (toml::source_index column = 1; column < at.column && offset < m_text.size() && m_text[offset] != '\n';
             ++column) {
            ++offset;
            while (offset < m_text.size() && (static_cast<unsigned char>(m_text[offset]) & 0xC0) == 0x80) ++offset;
        }
        return offset;
    }

private:
    const std::string& m_text;
    std::vector<std::size_t> m_lines;
};

/// The shortest text that reads back as the same double.
std::string number_text(double value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return std::string(buffer, result.ptr);
}

class Reader {
public:
    Reader(const std::string& text, const std::string& origin) : m_text(text), m_origin(origin), m_offsets(text) {}

    Node node(const toml::node& value, const std::string& path) const {
        Node out;
        const auto& region = value.source();
        out.mark = {int(region.begin.line), int(region.begin.column) - 1};
        out.last_line = int(region.end.line);
        out.begin = m_offsets.of(region.begin);
        out.end = m_offsets.of(region.end);
        out.spanned = true;
        if (const auto* table = value.as_table()) {
            out.kind = Node::Kind::mapping;
            out.flow = table->is_inline();
            out.headed = !out.flow && opens_with_header(out.begin, path);
            std::vector<std::pair<const toml::key*, const toml::node*>> members;
            for (auto&& [key, member] : *table) members.emplace_back(&key, &member);
            // toml++ keeps a table's keys sorted; a recipe is read in the order it is written.
            std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
                const auto& x = a.first->source().begin;
                const auto& y = b.first->source().begin;
                return x.line != y.line ? x.line < y.line : x.column < y.column;
            });
            for (const auto& [key, member] : members) {
                out.keys.emplace_back(key->str());
                out.children.push_back(node(*member, child_path(path, out.keys.back())));
                out.children.back().key_mark = {int(key->source().begin.line), int(key->source().begin.column) - 1};
                out.last_line = std::max(out.last_line, out.children.back().last_line);
            }
        } else if (const auto* array = value.as_array()) {
            out.kind = Node::Kind::sequence;
            out.flow = !array->is_array_of_tables();
            std::size_t index = 0;
            for (const auto& item : *array) {
                out.children.push_back(node(item, item_path(path, index++)));
                out.last_line = std::max(out.last_line, out.children.back().last_line);
            }
        } else {
            out.kind = Node::Kind::scalar;
            scalar(value, out);
            // Dates and times are strings to everything that reads a recipe: keep them as written.
            if (out.text.empty() && !value.is_string()) out.text = m_text.substr(out.begin, out.end - out.begin);
        }
        return out;
    }

private:
    /// Whether the table at `begin` is opened by `[path]` itself (not implied by `[path.sub]` or a dotted key).
    bool opens_with_header(std::size_t begin, const std::string& path) const {
        if (begin >= m_text.size() || m_text[begin] != '[' || path.empty()) return false;
        const auto close = m_text.find(']', begin);
        if (close == std::string::npos) return false;
        std::string name(util::trim(std::string_view(m_text).substr(begin + 1, close - begin - 1)));
        name.erase(std::remove_if(name.begin(), name.end(), [](char c) { return c == ' ' || c == '\t'; }), name.end());
        return name == path;
    }

    static void scalar(const toml::node& value, Node& out) {
        if (const auto* text = value.as_string()) {
            out.text = text->get();
            out.plain = false;
        } else if (const auto* integer = value.as_integer()) {
            out.text = std::to_string(integer->get());
        } else if (const auto* floating = value.as_floating_point()) {
            out.text = number_text(floating->get());
        } else if (const auto* boolean = value.as_boolean()) {
            out.text = boolean->get() ? "true" : "false";
        } else {
            out.plain = false;
        }
    }

    const std::string& m_text;
    const std::string& m_origin;
    Offsets m_offsets;
};

}  // namespace

Tree read_toml(const std::string& text, const std::string& origin) {
    toml::table table;
    try {
        table = toml::parse(text, origin);
    } catch (const toml::parse_error& e) {
        throw InputError(origin + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()) +
                         " (expected TOML)");
    }
    Tree tree;
    tree.root = Reader(text, origin).node(table, "");
    tree.root.headed = true;
    return tree;
}

}  // namespace attune::recipe
