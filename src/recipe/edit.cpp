#include <attune/core/error.hpp>
#include <attune/recipe/document.hpp>
#include <attune/util/strings.hpp>

#include "tree.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace attune::recipe {

namespace {

constexpr int k_indent_step = 2;

/// Bytes [start, end) of the text and what replaces them.
struct Splice {
    std::size_t start = 0;
    std::size_t end = 0;
    std::string text;
};

/// The text with non-overlapping splices applied, the last first so that earlier offsets hold.
std::string spliced(std::string text, std::vector<Splice> splices) {
    std::sort(splices.begin(), splices.end(), [](const Splice& a, const Splice& b) { return a.start > b.start; });
    for (const auto& s : splices) text.replace(s.start, s.end - s.start, s.text);
    return text;
}

bool overlap(const Splice& a, const Splice& b) { return a.start < b.end && b.start < a.end; }

/// A TOML key as written: bare where TOML allows it, else a quoted key.
std::string toml_key(const std::string& key) {
    const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    return bare ? key : nlohmann::json(key).dump();
}

/// Where the flow container (`{...}`, `[...]`) opening at `open` closes: the offset of its bracket.
std::size_t closing_bracket(const std::string& text, std::size_t open) {
    int depth = 0;
    for (std::size_t i = open; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '"') {
            for (++i; i < text.size() && text[i] != '"'; ++i)
                if (text[i] == '\\') ++i;
        } else if (c == '{' || c == '[') {
            ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
            return i;
        }
    }
    return std::string::npos;
}

/// Applies one edit to recipe text by rewriting only the bytes of the value it changes, so that
/// comments, key order and every other key stay exactly as written.
class TextEditor {
public:
    TextEditor(const std::string& text, const Node& root, const std::string& origin, Format format)
        : m_text(text), m_root(root), m_origin(origin), m_format(format) {}

    /// The bytes an edit of an existing key rewrites, or nullopt when the edit adds keys.
    std::optional<Splice> replacement(const Edit& edit) const {
        const auto [chain, missing] = walk(edit);
        if (edit.create && missing.empty()) fail(edit, "the key exists already; expected key=value instead of +key=value");
        if (!missing.empty() || chain.back()->from_base) return std::nullopt;
        return replace_value(edit, *chain.back(), chain.size() >= 2 ? chain[chain.size() - 2] : nullptr);
    }

    std::string apply(const Edit& edit) const {
        if (const auto splice = replacement(edit)) return spliced(m_text, {*splice});
        auto [chain, missing] = walk(edit);
        if (m_format != Format::shell) return insert_over_composed(edit, std::move(chain), std::move(missing));
        if (missing.empty()) return insert_override(edit, *chain.back(), true);  // a key of the base config
        return insert_keys(edit, *chain.back(), missing);
    }

private:
    /// The nodes along the edit's path that exist, and the segments that do not.
    std::pair<std::vector<const Node*>, std::vector<std::string>> walk(const Edit& edit) const {
        const auto segments = split_path(edit.path);
        if (segments.empty()) fail(edit, "an empty key path");
        std::vector<const Node*> chain{&m_root};
        std::size_t depth = 0;
        for (; depth < segments.size(); ++depth) {
            const Node* next = child(*chain.back(), segments[depth]);
            if (next == nullptr) break;
            chain.push_back(next);
        }
        return {chain, std::vector<std::string>(segments.begin() + static_cast<std::ptrdiff_t>(depth), segments.end())};
    }

    [[noreturn]] void fail(const Edit& edit, const std::string& why) const {
        throw InputError(m_origin + ": cannot set '" + edit.path + "': " + why);
    }

    static const Node* child(const Node& node, const std::string& segment) {
        if (segment.front() == '[') {
            if (node.kind != Node::Kind::sequence) return nullptr;
            const auto index = std::stoul(segment.substr(1));
            return index < node.children.size() ? &node.children[index] : nullptr;
        }
        if (node.kind != Node::Kind::mapping) return nullptr;
        const auto key = std::find(node.keys.begin(), node.keys.end(), segment);
        return key == node.keys.end() ? nullptr : &node.children[static_cast<std::size_t>(key - node.keys.begin())];
    }

    Splice replace_value(const Edit& edit, const Node& node, const Node* parent) const {
        if (m_format == Format::shell && node.entry_end > 0) {
            if (turns_off(edit.value)) return removal(node);
            // A flag without a value is on by being written.
            if (node.kind == Node::Kind::scalar && node.text == "true" && !node.spanned && edit.value.as_bool() == true)
                return {node.entry_begin, node.entry_begin, ""};
        }
        if (!node.bool_flag.empty()) return {node.begin, node.end, bool_flag_word(edit, node.bool_flag, edit.value)};
        if (!node.edit_refusal.empty()) fail(edit, node.edit_refusal);
        if (node.from_alias)
            fail(edit, "its value comes from a YAML alias or merge key at line " + std::to_string(node.mark.line) +
                           "; edit the anchored value instead");
        if (node.kind == Node::Kind::mapping || node.kind == Node::Kind::sequence)
            fail(edit, "it is a " + std::string(node.kind == Node::Kind::mapping ? "mapping" : "list") +
                           "; expected a key with a single value");
        const std::string written = node.hydra_override ? override_value(edit, edit.value) : render(edit, edit.value);
        if (node.spanned) return {node.begin, node.end, written};
        if (node.kind == Node::Kind::null && parent != nullptr && parent->kind == Node::Kind::mapping && !parent->flow) {
            const auto [start, end] = value_region_after_key(edit, node);
            return {start, end, " " + written};
        }
        std::size_t start = 0;
        std::size_t end = 0;
        if (!scalar_span(m_text, node.mark, parent != nullptr && parent->flow, start, end))
            fail(edit, "it is a block scalar (| or >); edit it by hand");
        return {start, end, written};
    }

    /// The bytes after `key:` up to a comment or the end of the line.
    std::pair<std::size_t, std::size_t> value_region_after_key(const Edit& edit, const Node& value) const {
        std::size_t key_start = 0;
        std::size_t key_end = 0;
        scalar_span(m_text, value.key_mark, false, key_start, key_end);
        const auto colon = m_text.find(':', key_end);
        const auto line_end = std::min(m_text.find('\n', key_end), m_text.size());
        if (colon == std::string::npos || colon > line_end) fail(edit, "its key has no ':' on its line");
        std::size_t end = colon + 1;
        while (end < line_end && !(m_text[end] == '#' && (m_text[end - 1] == ' ' || m_text[end - 1] == '\t'))) ++end;
        while (end > colon + 1 && (m_text[end - 1] == ' ' || m_text[end - 1] == '\t')) --end;
        return {colon + 1, end};
    }

    /// A value as the recipe's format writes it.
    std::string render(const Edit& edit, const Value& value) const {
        switch (m_format) {
            case Format::yaml: return value.to_yaml();
            case Format::json: return value.to_json().dump();
            case Format::shell: return shell_word(edit, value);
            case Format::toml: {
                if (value.is_null()) fail(edit, "TOML has no null; remove the key by hand to unset it");
                if (const auto number = value.kind() == Value::Kind::number ? value.as_number() : std::nullopt; number && !std::isfinite(*number))
                    return *number != *number ? "nan" : (*number > 0 ? "inf" : "-inf");
                return value.to_json().dump();
            }
        }
        return value.to_yaml();
    }

    /// A key a config of the recipe's Hydra defaults sets is written into the recipe itself, whose own
    /// keys win, below the deepest mapping the recipe writes on the key's path.
    std::string insert_over_composed(const Edit& edit, std::vector<const Node*> chain, std::vector<std::string> missing) const {
        const auto composed = std::find_if(chain.begin(), chain.end(), [](const Node* node) { return node->from_base; });
        if (composed != chain.end()) {
            const auto refused = std::find_if(composed, chain.end(), [](const Node* node) { return !node->edit_refusal.empty(); });
            if (refused != chain.end()) fail(edit, (*refused)->edit_refusal);
            const auto segments = split_path(edit.path);
            const auto own = static_cast<std::size_t>(composed - chain.begin());
            missing.assign(segments.begin() + static_cast<std::ptrdiff_t>(own - 1), segments.end());
            chain.resize(own);
        }
        return insert_keys(edit, *chain.back(), missing);
    }

    std::string insert_keys(const Edit& edit, const Node& parent, const std::vector<std::string>& missing) const {
        for (const auto& segment : missing)
            if (segment.front() == '[') fail(edit, "list item " + segment + " does not exist");
        // `a.b` names both a key `b` below `a` and a key written `a.b`: never create the first
        // where the second exists.
        for (const auto& key : parent.keys)
            if (key.find('.') != std::string::npos && (key + ".").starts_with(missing.front() + "."))
                fail(edit, "the key '" + key + "' holds a '.', so its path cannot be told from a new key's; edit it by hand");
        if (m_format == Format::json) return insert_json(edit, parent, missing);
        if (m_format == Format::toml) return insert_toml(edit, parent, missing);
        if (m_format == Format::shell) {
            if (is_exports(parent)) return insert_export(edit, parent, missing);
            return takes_override(parent, missing.front()) ? insert_override(edit, parent, false) : insert_flag(edit, parent, missing);
        }
        if (parent.from_alias) fail(edit, "its parent comes from a YAML alias; edit the anchored mapping instead");
        if (parent.kind == Node::Kind::mapping && parent.flow)
            fail(edit, "its parent is a flow mapping ({...}); expected a block mapping to add a key to");
        if (parent.kind == Node::Kind::mapping) {
            // The recipe's own keys come before those its defaults compose (which carry no column).
            const int indent = parent.children.empty() || parent.children.front().from_base ? 0 : parent.children.front().key_mark.column;
            const auto at = &parent == &m_root ? m_text.size() : offset_of(m_text, parent.last_line + 1, 0);
            std::string prefix = (at > 0 && m_text[at - 1] != '\n') ? "\n" : "";
            return spliced(m_text, {{at, at, prefix + key_lines(missing, indent, edit.value)}});
        }
        if (parent.kind == Node::Kind::null) {
            const auto [start, end] = value_region_after_key(edit, parent);
            const auto line_end = std::min(m_text.find('\n', end), m_text.size());
            const std::string lines = key_lines(missing, parent.key_mark.column + k_indent_step, edit.value);
            std::string text = m_text;
            text.insert(line_end, "\n" + lines.substr(0, lines.size() - 1));
            text.erase(start, end - start);
            return text;
        }
        fail(edit, "'" + missing.front() + "' would go below a value that is not a mapping");
    }

    /// `"a": {"b": value}` added to a JSON object, after its last member and indented like it.
    std::string insert_json(const Edit& edit, const Node& parent, const std::vector<std::string>& missing) const {
        if (parent.kind != Node::Kind::mapping) fail(edit, "'" + missing.front() + "' would go below a value that is not an object");
        std::string member = render(edit, edit.value);
        for (auto key = missing.rbegin(); key != missing.rend(); ++key)
            member = nlohmann::json(*key).dump() + ": " + (key == missing.rbegin() ? member : "{" + member + "}");
        const auto open = m_text.find('{', offset_of(m_text, parent.mark.line, parent.mark.column));
        const auto close = open == std::string::npos ? std::string::npos : closing_bracket(m_text, open);
        if (close == std::string::npos) fail(edit, "its object has no closing brace");
        if (parent.children.empty()) return spliced(m_text, {{open + 1, open + 1, member}});
        auto last = close;
        while (last > open && std::isspace(static_cast<unsigned char>(m_text[last - 1]))) --last;
        const bool multiline = m_text.find('\n', open) < close;
        const std::string separator =
            multiline ? "\n" + std::string(static_cast<std::size_t>(parent.children.back().key_mark.column), ' ') : " ";
        return spliced(m_text, {{last, last, "," + separator + member}});
    }

    /// `a.b = value` added to a TOML table: below its header's key-value lines, before the first
    /// table header for the top level, or inside an inline table's braces.
    std::string insert_toml(const Edit& edit, const Node& parent, const std::vector<std::string>& missing) const {
        if (parent.kind != Node::Kind::mapping) fail(edit, "'" + missing.front() + "' would go below a value that is not a table");
        std::string line;
        for (const auto& key : missing) line += (line.empty() ? "" : ".") + toml_key(key);
        line += " = " + render(edit, edit.value);
        if (parent.flow) {
            auto last = parent.end - 1;  // the closing brace
            while (!parent.children.empty() && last > parent.begin && m_text[last - 1] == ' ') --last;
            return spliced(m_text, {{last, last, parent.children.empty() ? " " + line + " " : ", " + line}});
        }
        if (!parent.headed)
            fail(edit, "its table is only implied (by a dotted key, a sub-table's header or [[...]]); add the key by hand");
        int after_line = &parent == &m_root ? 0 : parent.mark.line;
        std::size_t first_header = m_text.size();
        for (const auto& child : parent.children) {
            if (!child.flow && (child.kind == Node::Kind::mapping || child.kind == Node::Kind::sequence))
                first_header = std::min(first_header, line_start(child.begin));
            else
                after_line = std::max(after_line, child.last_line);
        }
        const auto at = after_line == 0 ? first_header : std::min(offset_of(m_text, after_line + 1, 0), m_text.size());
        const std::string prefix = (at > 0 && m_text[at - 1] != '\n') ? "\n" : "";
        return spliced(m_text, {{at, at, prefix + line + "\n"}});
    }

    static bool turns_off(const Value& value) { return value.is_null() || value.as_bool() == false; }

    /// A launch script's flag removed with its values, and its line when nothing else is on it.
    Splice removal(const Node& node) const {
        std::size_t start = node.entry_begin;
        std::size_t end = node.entry_end;
        while (end < m_text.size() && (m_text[end] == ' ' || m_text[end] == '\t')) ++end;
        const std::size_t line = line_start(start);
        const bool alone = util::trim(std::string_view(m_text).substr(line, start - line)).empty() &&
                           (end == m_text.size() || m_text[end] == '\n');
        if (alone) start = line, end = std::min(end + 1, m_text.size());
        return {start, end, ""};
    }

    /// A value as a launch script's word. Only characters no shell treats specially are written:
    /// a value from a policy or an LLM must never become shell syntax.
    std::string shell_word(const Edit& edit, const Value& value) const {
        if (value.kind() == Value::Kind::boolean || value.is_null())
            fail(edit, "a launch script turns a flag on or off by writing it or not; add or remove the flag by hand");
        return safe_word(edit, value.to_string());
    }

    /// A dotted boolean flag as tyro reads it: `--a.b` for true, `--a.no_b` for false.
    std::string bool_flag_word(const Edit& edit, const std::string& path, const Value& value) const {
        if (value.kind() != Value::Kind::boolean) fail(edit, "it is a flag without a value: it takes true or false");
        const auto dot = path.rfind('.');
        return "--" + (*value.as_bool() ? path : path.substr(0, dot + 1) + "no_" + path.substr(dot + 1));
    }

    /// A value as an override's right-hand side, which OmegaConf types as YAML does (`true`, `null`).
    std::string override_value(const Edit& edit, const Value& value) const {
        if (m_root.overrides.flags && (value.is_null() || value.kind() == Value::Kind::boolean))
            fail(edit, "a command-line flag with a value takes neither null nor a boolean; edit it by hand");
        if (value.is_null()) return "null";
        if (value.kind() == Value::Kind::boolean) return *value.as_bool() ? "true" : "false";
        return safe_word(edit, value.to_string());
    }

    std::string safe_word(const Edit& edit, const std::string& word) const {
        const bool safe = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("._/:=,+-@%").find(c) != std::string_view::npos;
        });
        if (!safe) fail(edit, "'" + word + "' would need shell quoting; write it by hand");
        return word;
    }

    /// Whether a key missing below `parent` is written as a `key=value` override: the script has a
    /// command that takes them, and the key belongs to the composed config, not to an argument array.
    bool takes_override(const Node& parent, const std::string& first_missing) const {
        if (m_root.overrides.end == 0) return false;
        return parent.from_base || parent.hydra_override || (&parent == &m_root && !first_missing.starts_with("-"));
    }

    /// `key=value` added after the command's last override (or its base config): on a line of its
    /// own when the last one is, else on the same line. A key the base config lacks takes Hydra's `+`.
    std::string insert_override(const Edit& edit, const Node& node, bool in_base) const {
        if (in_base && node.kind != Node::Kind::scalar && node.kind != Node::Kind::null)
            fail(edit, "it is a " + std::string(node.kind == Node::Kind::mapping ? "mapping" : "list") +
                           " of the base config; expected a key with a single value");
        const bool has_base = std::any_of(m_root.children.begin(), m_root.children.end(), [](const Node& n) { return n.from_base; });
        const std::string word = m_root.overrides.flags ? flag_override(edit)
                                 : (edit.create || (has_base && !in_base) ? "+" : "") + edit.path + "=" + override_value(edit, edit.value);
        const std::size_t at = m_root.overrides.end;
        if (!m_root.overrides.own_line) return spliced(m_text, {{at, at, " " + word}});
        return spliced(m_text, {{at, at, " \\\n" + m_root.overrides.indent + word}});
    }

    /// `--a.b value`, or a boolean's `--a.b` / `--a.no_b`: tyro's command line has no null.
    std::string flag_override(const Edit& edit) const {
        if (edit.value.kind() == Value::Kind::boolean) return bool_flag_word(edit, edit.path, edit.value);
        if (edit.value.is_null()) fail(edit, "a command-line flag cannot say null; remove the flag by hand");
        return "--" + edit.path + " " + safe_word(edit, edit.value.to_string());
    }

    /// A launch script's `export`ed variables (the reader's `env` section).
    bool is_exports(const Node& node) const {
        const auto env = std::find(m_root.keys.begin(), m_root.keys.end(), "env");
        return env != m_root.keys.end() && &m_root.children[std::size_t(env - m_root.keys.begin())] == &node;
    }

    /// `export NAME=value` on a line of its own after the script's last export.
    std::string insert_export(const Edit& edit, const Node& exports, const std::vector<std::string>& missing) const {
        if (missing.size() != 1 || !util::valid_variable_name(missing.front()))
            fail(edit, "an environment variable's name is letters, digits and _, not starting with a digit");
        if (edit.value.is_null()) return m_text;  // an unset variable is not exported already
        const std::string value = edit.value.kind() == Value::Kind::boolean ? (*edit.value.as_bool() ? "true" : "false")
                                                                              : safe_word(edit, edit.value.to_string());
        const auto at = std::min(offset_of(m_text, exports.last_line + 1, 0), m_text.size());
        const std::string prefix = (at > 0 && m_text[at - 1] != '\n') ? "\n" : "";
        return spliced(m_text, {{at, at, prefix + "export " + missing.front() + "=" + value + "\n"}});
    }

    /// `--flag value` added to its argument array, on a line of its own before the array's `)`.
    std::string insert_flag(const Edit& edit, const Node& parent, const std::vector<std::string>& missing) const {
        if (missing.size() != 1 || &parent == &m_root || parent.kind != Node::Kind::mapping || parent.end == 0 ||
            !missing.front().starts_with("-"))
            fail(edit, "a launch script gets new flags in an existing argument array (ARRAY.--flag)");
        if (turns_off(edit.value)) return m_text;  // a flag not written is off already
        std::string words = missing.front();
        if (!(edit.value.kind() == Value::Kind::boolean && *edit.value.as_bool())) words += " " + shell_word(edit, edit.value);
        const auto at = line_start(parent.end);
        const bool own_line = util::trim(std::string_view(m_text).substr(at, parent.end - at)).empty();
        if (!own_line) return spliced(m_text, {{parent.end, parent.end, " " + words + " "}});
        const Node* last = parent.children.empty() ? nullptr : &parent.children.back();
        std::size_t indent = 4;
        if (last != nullptr) {
            const auto line = offset_of(m_text, last->mark.line, 0);
            indent = m_text.find_first_not_of(" \t", line) - line;
        }
        return spliced(m_text, {{at, at, std::string(indent, ' ') + words + "\n"}});
    }

    std::size_t line_start(std::size_t offset) const {
        const auto newline = m_text.rfind('\n', offset == 0 ? 0 : offset - 1);
        return offset == 0 || newline == std::string::npos ? 0 : newline + 1;
    }

    static std::string key_lines(const std::vector<std::string>& keys, int indent, const Value& value) {
        std::string lines;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            lines += std::string(static_cast<std::size_t>(indent + static_cast<int>(i) * k_indent_step), ' ') + keys[i] + ":";
            lines += (i + 1 == keys.size()) ? " " + value.to_yaml() + "\n" : "\n";
        }
        return lines;
    }

    const std::string& m_text;
    const Node& m_root;
    const std::string& m_origin;
    Format m_format;
};

/// What with_edits's result depends on: the text, its origin and environment sections, and each
/// edit's path, create flag and value as written.
std::string edits_key(const std::string& text, const std::string& origin, const std::vector<std::string>& env_sections,
                      const std::string& launcher_package, const std::optional<std::filesystem::path>& model_config,
                      const std::vector<Edit>& edits) {
    std::string key = origin + '\0' + text + '\0' + launcher_package + '\0' + (model_config ? model_config->string() : std::string()) + '\0';
    for (const auto& section : env_sections) key += section + '\n';
    for (const auto& edit : edits) {
        key += '\0';
        key += edit.path;
        key += edit.create ? "\n+" : "\n=";
        key += edit.value.to_yaml();
    }
    return key;
}

}  // namespace

Document Document::with_edits(const std::vector<Edit>& given) const {
    std::vector<Edit> edits;
    for (const Edit& edit : given) {
        // Unsetting a key the recipe does not write leaves it as it is, in every format.
        if (edit.value.is_null() && !edit.create && !has(edit.path)) continue;
        edits.push_back(edit);
        edits.back().path = placed(edit.path);
    }
    // A campaign applies the same edits to the same recipe several times per trial (gate, preflight,
    // launch, measurement): remember recent results. Documents are immutable, so a remembered one is
    // as good as a new one.
    constexpr std::size_t k_remembered = 64;
    thread_local std::unordered_map<std::string, Document> remembered;
    const std::string key = edits_key(m_text, m_origin, m_env_sections, m_launcher_package, m_model_config, edits);
    if (const auto found = remembered.find(key); found != remembered.end()) return found->second;
    // Edits that rewrite existing values go in one pass and one parse (parsing dominates the cost
    // of a candidate configuration); an edit that adds keys, or touches a key or bytes an earlier
    // edit of the pass did, starts the next pass.
    Document current = *this;
    std::size_t next = 0;
    while (next < edits.size()) {
        const TextEditor editor(current.m_text, current.m_tree->root, m_origin, m_format);
        std::vector<Splice> pass;
        std::vector<std::string_view> paths;
        for (; next < edits.size(); ++next) {
            const Edit& edit = edits[next];
            if (std::find(paths.begin(), paths.end(), edit.path) != paths.end()) break;
            auto splice = editor.replacement(edit);
            if (!splice || std::any_of(pass.begin(), pass.end(), [&](const Splice& s) { return overlap(s, *splice); })) break;
            pass.push_back(std::move(*splice));
            paths.push_back(edit.path);
        }
        std::string text = pass.empty() ? editor.apply(edits[next++]) : spliced(current.m_text, std::move(pass));
        // Values written as they already are leave the text, hence the document, as it was.
        if (text == current.m_text) continue;
        current = Document(std::move(text), m_origin, m_env_sections, m_launcher_package);
        current.m_model_config = m_model_config;
    }
    if (remembered.size() >= k_remembered) remembered.clear();
    remembered.emplace(key, current);
    return current;
}

}  // namespace attune::recipe
