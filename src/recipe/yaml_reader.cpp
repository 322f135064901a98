#include "tree.hpp"

#include <attune/core/error.hpp>
#include <attune/util/strings.hpp>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <map>
#include <sstream>

namespace attune::recipe {

namespace {

// Deeper nesting than any real recipe; also keeps recursion over the tree bounded.
constexpr std::size_t k_max_depth = 200;

Mark to_mark(const YAML::Mark& mark) { return Mark{mark.line + 1, mark.column}; }

void mark_as_alias(Node& node) {
    node.from_alias = true;
    for (auto& child : node.children) mark_as_alias(child);
}

/// Builds a Tree from yaml-cpp's parse events, keeping what its Node API drops: positions of
/// every scalar, duplicate keys, quoting, and which content came from an alias.
class TreeBuilder : public YAML::EventHandler {
public:
    TreeBuilder(const std::string& text, std::string origin) : m_text(text), m_origin(std::move(origin)) {}

    Tree take() { return std::move(m_tree); }
    [[nodiscard]] bool finished() const { return m_done; }

    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override { m_done = true; }

    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        Node node;
        node.mark = to_mark(mark);
        node.last_line = node.mark.line;
        complete(std::move(node), anchor);
    }

    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const auto found = m_anchors.find(anchor);
        if (found == m_anchors.end()) fail(to_mark(mark), "alias to an unknown anchor");
        Node node = found->second;
        mark_as_alias(node);
        node.mark = to_mark(mark);
        node.last_line = node.mark.line;
        complete(std::move(node), 0);
    }

    void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  const std::string& value) override {
        Node node;
        node.kind = Node::Kind::scalar;
        node.text = value;
        node.mark = to_mark(mark);
        // yaml-cpp reports "!" for a quoted scalar and "?" for a plain one.
        node.plain = tag == "?";
        if (tag != "?" && tag != "!") node.tag = tag;
        if (node.tag == "tag:yaml.org,2002:str") node.plain = false;
        node.last_line = node.mark.line + static_cast<int>(std::count(value.begin(), value.end(), '\n'));
        complete(std::move(node), anchor);
    }

    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value style) override {
        open(Node::Kind::sequence, mark, anchor, style);
    }
    void OnSequenceEnd() override { close(); }

    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value style) override {
        open(Node::Kind::mapping, mark, anchor, style);
    }
    void OnMapEnd() override {
        apply_merge_keys(m_stack.back().node);
        close();
    }

private:
    struct Frame {
        Node node;
        YAML::anchor_t anchor = 0;
        std::string path;
        bool has_key = false;
        std::string key;
        Mark key_mark;
    };

    [[noreturn]] void fail(const Mark& mark, const std::string& what) const {
        throw InputError(m_origin + ":" + std::to_string(mark.line) + ": " + what);
    }

    void open(Node::Kind kind, const YAML::Mark& mark, YAML::anchor_t anchor, YAML::EmitterStyle::value style) {
        if (m_stack.size() >= k_max_depth)
            fail(to_mark(mark), "nesting deeper than " + std::to_string(k_max_depth) + " levels; expected a recipe");
        Frame frame;
        frame.node.kind = kind;
        frame.node.mark = to_mark(mark);
        frame.node.flow = style == YAML::EmitterStyle::Flow;
        frame.node.last_line = frame.node.mark.line;
        frame.anchor = anchor;
        frame.path = path_of_next_child();
        m_stack.push_back(std::move(frame));
    }

    void close() {
        Frame frame = std::move(m_stack.back());
        m_stack.pop_back();
        complete(std::move(frame.node), frame.anchor);
    }

    [[nodiscard]] std::string path_of_next_child() const {
        if (m_stack.empty()) return {};
        const Frame& top = m_stack.back();
        if (top.node.kind == Node::Kind::mapping) return top.has_key ? child_path(top.path, top.key) : std::string();
        return item_path(top.path, top.node.children.size());
    }

    void complete(Node node, YAML::anchor_t anchor) {
        if (anchor != 0) m_anchors[anchor] = node;
        if (m_stack.empty()) {
            m_tree.root = std::move(node);
            return;
        }
        Frame& top = m_stack.back();
        top.node.last_line = std::max(top.node.last_line, node.last_line);
        if (top.node.kind == Node::Kind::sequence) {
            top.node.children.push_back(std::move(node));
            return;
        }
        if (!top.has_key) {
            if (node.kind != Node::Kind::scalar && node.kind != Node::Kind::null)
                fail(node.mark, "a mapping or list used as a key; expected a plain key");
            top.key = node.text;
            top.key_mark = node.mark;
            top.has_key = true;
            return;
        }
        node.key_mark = top.key_mark;
        add_entry(top, std::move(node));
        top.has_key = false;
    }

    void add_entry(Frame& frame, Node value) {
        auto& keys = frame.node.keys;
        const auto existing = std::find(keys.begin(), keys.end(), frame.key);
        if (existing == keys.end() || frame.key == "<<") {
            keys.push_back(frame.key);
            frame.node.children.push_back(std::move(value));
            return;
        }
        auto& slot = frame.node.children[static_cast<std::size_t>(existing - keys.begin())];
        m_tree.duplicates.push_back({child_path(frame.path, frame.key), slot.key_mark.line, value.key_mark.line});
        slot = std::move(value);  // the last one wins, as PyYAML reads it
    }

    // `<<: *base` (or a list of them) copies the keys the mapping does not set itself.
    static void apply_merge_keys(Node& mapping) {
        std::vector<Node> sources;
        for (std::size_t i = 0; i < mapping.keys.size();) {
            if (mapping.keys[i] != "<<" || !mapping.children[i].plain) {
                ++i;
                continue;
            }
            Node merged = std::move(mapping.children[i]);
            mapping.keys.erase(mapping.keys.begin() + static_cast<std::ptrdiff_t>(i));
            mapping.children.erase(mapping.children.begin() + static_cast<std::ptrdiff_t>(i));
            if (merged.kind == Node::Kind::mapping) sources.push_back(std::move(merged));
            if (merged.kind == Node::Kind::sequence)
                for (auto& item : merged.children) sources.push_back(std::move(item));
        }
        for (auto& source : sources) {
            if (source.kind != Node::Kind::mapping) continue;
            for (std::size_t j = 0; j < source.keys.size(); ++j) {
                if (std::find(mapping.keys.begin(), mapping.keys.end(), source.keys[j]) != mapping.keys.end()) continue;
                mapping.keys.push_back(source.keys[j]);
                Node copy = source.children[j];
                mark_as_alias(copy);
                mapping.children.push_back(std::move(copy));
            }
        }
    }

    const std::string& m_text;
    std::string m_origin;
    Tree m_tree;
    std::vector<Frame> m_stack;
    std::map<YAML::anchor_t, Node> m_anchors;
    bool m_done = false;
};

}  // namespace

Tree read_yaml(const std::string& text, const std::string& origin) {
    std::istringstream input(text);
    TreeBuilder builder(text, origin);
    try {
        YAML::Parser parser(input);
        if (!parser.HandleNextDocument(builder))
            throw InputError(origin + ":1: empty file; expected a YAML mapping of recipe keys");
        if (parser.HandleNextDocument(builder))
            throw InputError(origin + ": more than one YAML document; expected one recipe");
    } catch (const YAML::Exception& e) {
        throw InputError(origin + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
    }
    Tree tree = builder.take();
    if (tree.root.kind != Node::Kind::mapping)
        throw InputError(origin + ":" + std::to_string(std::max(1, tree.root.mark.line)) +
                         ": expected a YAML mapping of recipe keys at the top level");
    return tree;
}

std::string child_path(const std::string& parent, const std::string& key) {
    return parent.empty() ? key : parent + "." + key;
}

std::string item_path(const std::string& parent, std::size_t index) {
    return parent + "[" + std::to_string(index) + "]";
}

std::vector<std::string> split_path(std::string_view path) {
    std::vector<std::string> segments;
    std::string current;
    for (std::size_t i = 0; i < path.size(); ++i) {
        const char c = path[i];
        if (c == '.') {
            if (!current.empty()) segments.push_back(std::move(current));
            current.clear();
        } else if (c == '[') {
            if (!current.empty()) segments.push_back(std::move(current));
            const auto close = path.find(']', i);
            segments.emplace_back(path.substr(i, close == std::string_view::npos ? std::string_view::npos : close - i + 1));
            current.clear();
            if (close == std::string_view::npos) break;
            i = close;
        } else {
            current += c;
        }
    }
    if (!current.empty()) segments.push_back(std::move(current));
    return segments;
}

const Node* find_node(const Node& root, std::string_view path) {
    const Node* node = &root;
    for (const auto& segment : split_path(path)) {
        if (segment.front() == '[' && node->kind == Node::Kind::sequence) {
            const auto index = util::parse_number(segment.substr(1, segment.size() - 2));
            if (!index || *index < 0 || *index >= static_cast<double>(node->children.size())) return nullptr;
            node = &node->children[static_cast<std::size_t>(*index)];
            continue;
        }
        if (node->kind != Node::Kind::mapping) return nullptr;
        const auto key = std::find(node->keys.begin(), node->keys.end(), segment);
        if (key == node->keys.end()) return nullptr;
        node = &node->children[static_cast<std::size_t>(key - node->keys.begin())];
    }
    return node;
}

std::size_t offset_of(const std::string& text, int line, int column) {
    std::size_t offset = 0;
    for (int current = 1; current < line && offset < text.size(); ++current) {
        const auto newline = text.find('\n', offset);
        if (newline == std::string::npos) return text.size();
        offset = newline + 1;
    }
    return std::min(text.size(), offset + static_cast<std::size_t>(std::max(column, 0)));
}

bool scalar_span(const std::string& text, const Mark& mark, bool in_flow, std::size_t& start, std::size_t& end) {
    std::size_t at = offset_of(text, mark.line, mark.column);
    // Skip an anchor (`&name`) and a tag (`!!int`) written before the value.
    while (at < text.size() && (text[at] == '&' || text[at] == '!')) {
        while (at < text.size() && text[at] != ' ' && text[at] != '\n') ++at;
        while (at < text.size() && text[at] == ' ') ++at;
    }
    start = at;
    if (at >= text.size()) {
        end = at;
        return true;
    }
    const char first = text[at];
    if (first == '|' || first == '>') return false;
    if (first == '"' || first == '\'') {
        for (std::size_t i = at + 1; i < text.size(); ++i) {
            if (first == '"' && text[i] == '\\') {
                ++i;
                continue;
            }
            if (text[i] != first) continue;
            if (first == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
                ++i;
                continue;
            }
            end = i + 1;
            return true;
        }
        end = text.size();
        return true;
    }
    std::size_t i = at;
    while (i < text.size() && text[i] != '\n') {
        if (text[i] == '#' && i > at && (text[i - 1] == ' ' || text[i - 1] == '\t')) break;
        if (in_flow && (text[i] == ',' || text[i] == ']' || text[i] == '}')) break;
        // ": " ends a plain key; a plain value cannot contain it.
        if (text[i] == ':' && (i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) break;
        ++i;
    }
    while (i > at && (text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\r')) --i;
    end = i;
    return true;
}

}  // namespace attune::recipe
