// Launch scripts of the shape Megatron-LM's examples use: variable assignments and argument arrays
// (`MODEL_ARGS=( --num-layers $NUM_LAYERS ... )`), read into a tree whose keys are the arrays and
// their flags (`MODEL_ARGS.--num-layers`), so that the gate, the simulator and edits treat them as
// any recipe. Variables resolve where the script assigns them literally; an `if` is followed where
// its test compares literal values; what cannot be followed is refused with its line. A command that
// runs Python reads its `key=value` words as Hydra/OmegaConf overrides (`model.tensor_model_parallel_size=2`),
// over the base config it names (`--config-path/--config-name`, `--config_file`, MaxText's `base.yml`).
#include <attune/core/error.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include "tree.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>

namespace attune::recipe {
namespace {

/// One shell word (or an operator: `(`, `)`, `;`, a newline), with where it is written.
struct Token {
    std::string raw;
    std::size_t begin = 0, end = 0;
    int line = 0;
    [[nodiscard]] bool separator() const { return raw == "\n" || raw == ";"; }
};

class Lexer {
public:
    Lexer(const std::string& text, const std::string& origin) : m_text(text), m_origin(origin) {}

    std::vector<Token> tokens() {
        std::vector<Token> out;
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c == '\\' && m_at + 1 < m_text.size() && m_text[m_at + 1] == '\n') {
                m_at += 2, ++m_line;
            } else if (c == ' ' || c == '\t' || c == '\r') {
                ++m_at;
            } else if (c == '#') {
                while (m_at < m_text.size() && m_text[m_at] != '\n') ++m_at;
            } else if (c == '\n' || c == ';' || c == '(' || c == ')') {
                out.push_back({std::string(1, c), m_at, m_at + 1, m_line});
                if (c == '\n') ++m_line;
                ++m_at;
            } else {
                out.push_back(word());
            }
        }
        return out;
    }

private:
    Token word() {
        Token token{{}, m_at, m_at, m_line};
        while (m_at < m_text.size()) {
            const char c = m_text[m_at];
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '(' || c == ')') break;
            if (c == '\\' && m_at + 1 < m_text.size()) {
                m_at += 2;
            } else if (c == '\'' || c == '"') {
                const auto close = closing_quote(c);
                m_at = close + 1;
            } else if (c == '$' && m_at + 1 < m_text.size() && (m_text[m_at + 1] == '(' || m_text[m_at + 1] == '{')) {
                m_at = balanced(m_at + 1) + 1;
            } else {
                ++m_at;
            }
        }
        token.end = m_at;
        token.raw = m_text.substr(token.begin, token.end - token.begin);
        return token;
    }

    std::size_t closing_quote(char quote) {
        for (std::size_t i = m_at + 1; i < m_text.size(); ++i) {
            if (quote == '"' && m_text[i] == '\\') ++i;
            else if (m_text[i] == quote) return i;
            else if (m_text[i] == '\n') ++m_line;
        }
        throw InputError(m_origin + ":" + std::to_string(m_line) + ": a quote that is never closed");
    }

    /// The bracket that closes the `(` or `{` at `open`.
    std::size_t balanced(std::size_t open) {
        const char opening = m_text[open];
        const char closing = opening == '(' ? ')' : '}';
        int depth = 0;
        for (std::size_t i = open; i < m_text.size(); ++i) {
            if (m_text[i] == opening) ++depth;
            else if (m_text[i] == closing && --depth == 0) return i;
            else if (m_text[i] == '\n') ++m_line;
        }
        throw InputError(m_origin + ":" + std::to_string(m_line) + ": a '" + std::string(1, opening) + "' that is never closed");
    }

    const std::string& m_text;
    const std::string& m_origin;
    std::size_t m_at = 0;
    int m_line = 1;
};

/// A shell variable as the script assigns it.
struct Variable {
    std::string value;
    bool literal = false;           ///< assigned a value with no expansion (or `${X:-default}`)
    std::size_t begin = 0, end = 0; ///< the value's bytes, when an edit can rewrite them
    bool editable = false;
    int uses = 0;                   ///< flag values that read it
};

/// A word with its quotes removed and `$NAME` / `${NAME}` expanded; nullopt when a name is not literal.
struct Expanded {
    std::string text;
    bool quoted = false;
    std::vector<std::string> names;
    bool resolved = true;
};

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Where a Hydra override's key ends (at its `=`): `a.b_c=1`, `+a=1`, `++a.b=1`, `~a=1`; npos for
/// any other word. A key is dotted names, as OmegaConf writes a path.
std::size_t override_equals(std::string_view raw) {
    std::size_t i = raw.starts_with("++") ? 2 : raw.starts_with("+") || raw.starts_with("~") ? 1 : 0;
    for (bool segment_start = true; i < raw.size(); ++i) {
        const char c = raw[i];
        if (c == '=') return segment_start ? std::string_view::npos : i;
        if (c == '.' && !segment_start) segment_start = true;
        else if ((std::isalpha(static_cast<unsigned char>(c)) || c == '_') || (!segment_start && (std::isdigit(static_cast<unsigned char>(c)) || c == '-')))
            segment_start = false;
        else return std::string_view::npos;
    }
    return std::string_view::npos;
}

Node mapping_node() {
    Node node;
    node.kind = Node::Kind::mapping;
    return node;
}

/// A dotted command-line flag (`--parallelism.tensor_parallel_degree`, `--job.config_file=x.toml`):
/// its name without the dashes, up to any `=`; empty for any other word.
std::string dotted_flag(std::string_view raw) {
    if (!raw.starts_with("--")) return {};
    const std::string name(raw.substr(2, raw.find('=') == std::string_view::npos ? std::string_view::npos : raw.find('=') - 2));
    const bool dotted = name.find('.') != std::string::npos && name.front() != '.' && name.back() != '.';
    const bool plain = std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
    return dotted && plain ? name : std::string();
}

/// A dotted flag's key path: tyro reads `-` and `_` in a name alike; the path is the field's name.
std::string flag_path(std::string name) {
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

bool config_file_name(std::string_view name) {
    return name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".toml");
}

bool yaml_file_name(std::string_view name) { return name.ends_with(".yaml") || name.ends_with(".yml"); }

/// Every node below a base config: not written in the script, so an edit writes an override; its
/// position is the line of the command that names the base.
void mark_base(Node& node, int line) {
    node.from_base = true;
    node.spanned = node.headed = false;  // its bytes are the base file's, which no edit touches
    node.mark = node.key_mark = {line, 0};
    node.last_line = line;
    for (auto& child : node.children) mark_base(child, line);
}

/// The overrides laid over the base: a mapping merges key by key; anything else replaces what the base has.
void merge(Node& into, Node&& from) {
    for (std::size_t i = 0; i < from.keys.size(); ++i) {
        const auto found = std::find(into.keys.begin(), into.keys.end(), from.keys[i]);
        if (found == into.keys.end()) {
            into.keys.push_back(from.keys[i]);
            into.children.push_back(std::move(from.children[i]));
            continue;
        }
        Node& existing = into.children[static_cast<std::size_t>(found - into.keys.begin())];
        if (existing.kind == Node::Kind::mapping && from.children[i].kind == Node::Kind::mapping)
            merge(existing, std::move(from.children[i]));
        else
            existing = std::move(from.children[i]);
    }
}

/// One value word of a flag, at its place in the text.
struct Piece {
    std::string raw;
    std::size_t begin = 0, end = 0;
    int line = 0;
    bool quoted_group = false;  ///< split from a quoted element ("--fp8-format hybrid")
};

class Reader {
public:
    Reader(const std::string& text, const std::string& origin) : m_text(text), m_origin(origin) {}

    Tree read() {
        m_tokens = Lexer(m_text, m_origin).tokens();
        m_tree.root.kind = Node::Kind::mapping;
        m_tree.root.headed = false;
        std::vector<Frame> frames;
        for (m_at = 0; m_at < m_tokens.size();) {
            const Token& first = m_tokens[m_at];
            if (first.separator()) {
                ++m_at;
                continue;
            }
            if (first.raw == "if" || first.raw == "elif") {
                const auto condition = test(statement_end());
                if (first.raw == "if") {
                    frames.emplace_back(condition, first.line);
                } else {
                    auto& frame = top(frames, first);
                    frame.active = condition && !frame.taken ? *condition : false;
                    if (!condition && !frame.taken) frame.unknown = true;
                    frame.taken = frame.taken || frame.active;
                }
                continue;
            }
            if (first.raw == "else") {
                auto& frame = top(frames, first);
                frame.active = !frame.taken && !frame.unknown;
                ++m_at;
                continue;
            }
            if (first.raw == "fi") {
                (void)top(frames, first);
                frames.pop_back();
                ++m_at;
                continue;
            }
            if (first.raw == "then") {
                ++m_at;
                continue;
            }
            statement(frames);
        }
        if (!frames.empty()) throw InputError(m_origin + ":" + std::to_string(frames.back().line) + ": an 'if' with no 'fi'");
        finish();
        return std::move(m_tree);
    }

private:
    /// One `if` being read: whether a branch was taken, and whether the one being read is.
    struct Frame {
        bool taken = false;
        int line = 0;
        bool active = false;
        bool unknown = false;

        Frame(std::optional<bool> condition, int l)
            : taken(condition.value_or(false)), line(l), active(condition.value_or(false)), unknown(!condition) {}
    };

    Frame& top(std::vector<Frame>& frames, const Token& at) const {
        if (frames.empty()) throw InputError(m_origin + ":" + std::to_string(at.line) + ": '" + at.raw + "' outside an 'if'");
        return frames.back();
    }

    /// Index after the current statement (up to `then` for a condition), leaving m_at on it.
    std::size_t statement_end() {
        std::size_t end = m_at;
        while (end < m_tokens.size() && !m_tokens[end].separator() && m_tokens[end].raw != "then") ++end;
        return end;
    }

    /// `[[ "$X" == "lit" ]]`, `[[ -z "$X" ]]`, joined by `||` and `&&`: true, false, or nullopt
    /// when a test reads something the script does not assign literally.
    std::optional<bool> test(std::size_t end) {
        std::vector<std::string> words;
        for (std::size_t i = m_at + 1; i < end; ++i) words.push_back(m_tokens[i].raw);
        m_at = end;
        std::optional<bool> result;
        std::string joiner;
        for (std::size_t i = 0; i < words.size();) {
            if (words[i] == "||" || words[i] == "&&") {
                joiner = words[i++];
                continue;
            }
            if (words[i] != "[[" && words[i] != "[") return std::nullopt;
            std::size_t close = i + 1;
            while (close < words.size() && words[close] != "]]" && words[close] != "]") ++close;
            const std::vector<std::string> inner(words.begin() + std::ptrdiff_t(i) + 1, words.begin() + std::ptrdiff_t(close));
            std::optional<bool> one;
            if (inner.size() == 3 && (inner[1] == "==" || inner[1] == "=" || inner[1] == "!=")) {
                const auto a = expand(inner[0]), b = expand(inner[2]);
                if (a.resolved && b.resolved) one = (a.text == b.text) == (inner[1] != "!=");
            } else if (inner.size() == 2 && (inner[0] == "-z" || inner[0] == "-n")) {
                const auto a = expand(inner[1]);
                if (a.resolved) one = a.text.empty() == (inner[0] == "-z");
            }
            if (!one) return std::nullopt;
            result = !result ? *one : (joiner == "&&" ? *result && *one : *result || *one);
            i = close + 1;
        }
        return result;
    }

    static bool active(const std::vector<Frame>& frames) {
        for (const auto& frame : frames)
            if (!frame.active) return false;
        return true;
    }

    static bool unknown(const std::vector<Frame>& frames) {
        for (const auto& frame : frames)
            if (frame.unknown) return true;
        return false;
    }

    void statement(const std::vector<Frame>& frames) {
        std::size_t at = m_at;
        bool exported = false;
        if (m_tokens[at].raw == "export" && at + 1 < m_tokens.size()) exported = true, ++at;
        const Token& word = m_tokens[at];
        const auto equals = word.raw.find('=');
        const bool assignment = equals != std::string::npos && equals > 0 &&
                                std::all_of(word.raw.begin(), word.raw.begin() + std::ptrdiff_t(equals), [](char c) {
                                    return name_char(c) || c == '+';
                                });
        if (!assignment) {  // a command: only a Python program's overrides and base config are part of the recipe
            command(at, frames);
            skip_statement();
            return;
        }
        const bool append = word.raw[equals - 1] == '+';
        const std::string name = word.raw.substr(0, equals - (append ? 1 : 0));
        const bool array = equals + 1 == word.raw.size() && at + 1 < m_tokens.size() && m_tokens[at + 1].raw == "(";
        if (array) {
            if (unknown(frames))
                throw InputError(m_origin + ":" + std::to_string(word.line) + ": '" + name +
                                 "' is set inside an 'if' whose test attune cannot evaluate; expected tests of literal values");
            array_elements(name, at + 2, active(frames));
            return;
        }
        if (active(frames)) assign(name, word, equals, exported);
        m_at = at + 1;
        skip_statement();
    }

    /// A command that runs a Python program (`python x.py`, `torchrun ... x.py`, `python -m pkg.mod`,
    /// `tune run RECIPE`): its `key=value` words are overrides, and a config file it names is their base.
    void command(std::size_t first, const std::vector<Frame>& frames) {
        std::size_t end = first;
        while (end < m_tokens.size() && !m_tokens[end].separator()) ++end;
        const std::size_t program = program_of(first, end);
        if (program == end) return;
        if (active(frames)) launcher_flags(first, program);
        if (active(frames)) base_arguments(program, end);
        for (std::size_t i = program + 1; i < end; ++i) {
            const Token& word = m_tokens[i];
            const std::string flag = dotted_flag(word.raw);
            const auto equals = flag.empty() ? override_equals(word.raw) : std::string::npos;
            if (flag.empty() && equals == std::string::npos) continue;
            if (unknown(frames))
                throw InputError(m_origin + ":" + std::to_string(word.line) + ": the override '" + word.raw +
                                 "' is inside an 'if' whose test attune cannot evaluate; expected tests of literal values");
            if (!flag.empty()) i = add_flag_override(i, end, flag, active(frames));
            else if (active(frames)) add_override(word, equals);
        }
    }

    /// The word naming the Python program of the command from `first`: a `.py` file, the module after
    /// `-m`, or `tune run`'s recipe (after its own flags); `end` when the command runs none.
    std::size_t program_of(std::size_t first, std::size_t end) const {
        for (std::size_t i = first; i < end; ++i) {
            const std::string& previous = i > first ? m_tokens[i - 1].raw : std::string();
            if (expand(m_tokens[i].raw).text.ends_with(".py") || previous == "-m") return i;
            if (m_tokens[i].raw == "run" && m_tokens[first].raw == "tune") {
                std::size_t at = i + 1;
                while (at < end && m_tokens[at].raw.starts_with("-"))
                    at += m_tokens[at].raw.find('=') == std::string::npos && at + 1 < end ? 2 : 1;
                return std::min(at, end);
            }
        }
        return end;
    }

    /// The launcher's own flags before the program (`torchrun --nnodes 2 --nproc_per_node=8`, `tune run
    /// --nproc_per_node 8`): the job's shape, under `launcher.` (`launcher.--nnodes`). Arrays expanded
    /// there (`${DISTRIBUTED_ARGS[@]}`) keep their flags under their own names.
    void launcher_flags(std::size_t first, std::size_t program) {
        const std::size_t end = m_tokens[program - 1].raw == "-m" ? program - 1 : program;
        std::vector<Piece> pieces;
        std::size_t at = first + 1;
        while (at < end && !m_tokens[at].raw.starts_with("--")) ++at;  // `run` of `tune run`, `python3 -u`
        for (; at < end; ++at) {
            const Token& t = m_tokens[at];
            if (t.raw.find("[@]") != std::string::npos || t.raw.find("[*]") != std::string::npos) continue;
            pieces.push_back({t.raw, t.begin, t.end, t.line, false});
        }
        if (!pieces.empty()) read_flags("launcher", std::move(pieces), section("launcher", m_tokens[first]));
    }

    /// `--a.b value`, `--a.b=value`, or a boolean `--a.b` / `--a.no_b` (tyro's form, torchtitan's command
    /// line). A flag naming a config file (`--job.config_file x.toml`) names the base instead. Returns the
    /// index of the flag's last word.
    std::size_t add_flag_override(std::size_t at, std::size_t end, const std::string& name, bool taken) {
        const Token& word = m_tokens[at];
        const bool inline_value = word.raw.find('=') != std::string::npos;
        const bool next_value = !inline_value && at + 1 < end && !m_tokens[at + 1].raw.starts_with("--");
        const std::size_t last = next_value ? at + 1 : at;
        if (!taken) return last;
        std::string path = flag_path(name);
        if (path.ends_with(".config_file")) return last;  // named the base (base_arguments)
        Node node;
        if (inline_value || next_value) {
            const Token& value = m_tokens[last];
            const std::size_t skip = inline_value ? word.raw.find('=') + 1 : 0;
            node = scalar({value.raw.substr(skip), value.begin + skip, value.end, value.line, false}, word.line);
        } else {
            const auto dot = path.rfind('.');
            const bool negated = path.compare(dot + 1, 3, "no_") == 0;
            if (negated) path.erase(dot + 1, 3);
            node.kind = Node::Kind::scalar;
            node.text = negated ? "false" : "true";
            node.mark = node.key_mark = {word.line, 0};
            node.last_line = word.line;
            node.begin = word.begin, node.end = word.end, node.spanned = true;
            node.bool_flag = path;
        }
        node.hydra_override = true;
        node.key_mark = node.mark;
        place_override(path, std::move(node), word.line);
        m_spot.flags = true;
        after_override(word, m_tokens[last]);
        return last;
    }

    /// A base config named by `--config_file F`, `--config-file F`, `--config F` (`=F` too), Hydra's
    /// `--config-path D --config-name N` (in either order), or a YAML file right after the program
    /// (MaxText's base.yml). Returns the config's name and the token that ends it, if this word names one.
    struct Named {
        std::string file;
        const Token* last = nullptr;
    };
    std::optional<Named> config_argument(std::size_t at, std::size_t program, const std::string& flag) const {
        const Token& word = m_tokens[at];
        if (flag.empty()) {
            const std::string text = expand(word.raw).text;
            if (at == program + 1 && yaml_file_name(text)) return Named{text, &word};
            return std::nullopt;
        }
        if (word.raw.starts_with(flag + "=")) return Named{expand(word.raw.substr(flag.size() + 1)).text, &word};
        if (word.raw == flag && at + 1 < m_tokens.size() && !m_tokens[at + 1].separator())
            return Named{expand(m_tokens[at + 1].raw).text, &m_tokens[at + 1]};
        return std::nullopt;
    }

    void base_arguments(std::size_t program, std::size_t end) {
        std::optional<Named> base, dir, name;
        for (std::size_t i = program + 1; i < end; ++i) {
            const std::string dotted = dotted_flag(m_tokens[i].raw);
            if (!dotted.empty() && flag_path(dotted).ends_with(".config_file"))
                if (auto file = config_argument(i, program, "--" + dotted); file && config_file_name(file->file)) base = file;
            for (const char* flag : {"--config_file", "--config-file", "--config"})
                if (auto file = config_argument(i, program, flag); file && yaml_file_name(file->file)) base = file;
            if (auto file = config_argument(i, program, ""); file && !base) base = file;
            if (auto found = config_argument(i, program, "--config-path")) dir = found;
            if (auto found = config_argument(i, program, "--config-name")) name = found;
        }
        if (name) {
            const std::string file = yaml_file_name(name->file) ? name->file : name->file + ".yaml";
            base = Named{(std::filesystem::path(dir ? dir->file : std::string()) / file).string(),
                         dir && dir->last->end > name->last->end ? dir->last : name->last};
        }
        if (!base) return;
        if (m_base)
            throw InputError(m_origin + ":" + std::to_string(base->last->line) + ": a second base config (" + base->file + ") after " +
                             m_base->first + " at line " + std::to_string(m_base->second) + "; expected one command with overrides");
        m_base = {base->file, base->last->line};
        after_override(*base->last, *base->last);
    }

    /// `a.b=value` as the mapping `a` holding `b`, with the value's bytes for an edit.
    void add_override(const Token& word, std::size_t equals) {
        if (word.raw.starts_with("~"))
            throw InputError(m_origin + ":" + std::to_string(word.line) + ": '" + word.raw +
                             "' deletes a key, which attune does not read; expected key=value, +key=value or ++key=value");
        std::string key = word.raw.substr(0, equals);
        key.erase(0, key.find_first_not_of('+'));  // `+key` adds a key the base lacks, `++key` adds or sets it
        Node node = scalar({word.raw.substr(equals + 1), word.begin + equals + 1, word.end, word.line, false}, word.line);
        node.hydra_override = true;
        node.key_mark = node.mark;
        place_override(key, std::move(node), word.line);
        after_override(word, word);
    }

    /// Where the next override goes: after this one (from `first` to `last`), on a line of its own if it has one.
    void after_override(const Token& first, const Token& last) {
        if (last.end <= m_spot.end) return;
        m_spot.end = last.end;
        const auto line = m_text.rfind('\n', first.begin == 0 ? 0 : first.begin - 1);
        const std::size_t start = first.begin == 0 || line == std::string::npos ? 0 : line + 1;
        const std::string before = m_text.substr(start, first.begin - start);
        m_spot.own_line = before.find_first_not_of(" \t") == std::string::npos;
        m_spot.indent = m_spot.own_line ? before : std::string();
    }

    /// An override's value at its dotted key path, below the mappings the path implies.
    void place_override(const std::string& key, Node node, int line) {
        Node* parent = &m_overrides;
        std::string path;
        std::size_t start = 0;
        for (auto dot = key.find('.'); dot != std::string::npos; start = dot + 1, dot = key.find('.', start)) {
            const std::string name = key.substr(start, dot - start);
            const auto found = std::find(parent->keys.begin(), parent->keys.end(), name);
            if (found == parent->keys.end() || parent->children[static_cast<std::size_t>(found - parent->keys.begin())].kind != Node::Kind::mapping) {
                Node mapping = mapping_node();
                mapping.hydra_override = true;
                mapping.mark = mapping.key_mark = node.mark;
                add(*parent, path, name, std::move(mapping), line);
            }
            parent = &parent->children[static_cast<std::size_t>(
                std::find(parent->keys.begin(), parent->keys.end(), name) - parent->keys.begin())];
            path = child_path(path, name);
        }
        add(*parent, path, key.substr(start), std::move(node), line);
    }

    /// The base config's keys under the overrides, as Hydra composes them. A relative base is found
    /// beside the script, else in the working directory (where the command would run).
    void compose() {
        if (m_base) {
            const std::filesystem::path named(m_base->first);
            std::filesystem::path file = named;
            if (named.is_relative()) {
                const auto beside = std::filesystem::path(m_origin).parent_path() / named;
                if (std::filesystem::exists(beside)) file = beside;
            }
            if (!std::filesystem::is_regular_file(file))
                throw InputError(m_origin + ":" + std::to_string(m_base->second) + ": the base config " + m_base->first +
                                 " is not found beside the script or in the working directory; attune reads the overrides over it");
            const std::string text = util::read_text_file(file, 16u << 20);
            Tree base = file.extension() == ".toml" ? read_toml(text, file.string()) : read_yaml(text, file.string());
            if (base.root.kind != Node::Kind::mapping)
                throw InputError(file.string() + ": expected a mapping of keys as the base config of " + m_origin);
            mark_base(base.root, m_base->second);
            m_tree.bases.push_back(BaseConfig{m_base->first, file});
            for (auto& duplicate : base.duplicates) m_tree.duplicates.push_back(std::move(duplicate));
            merge(m_tree.root, std::move(base.root));
        }
        merge(m_tree.root, std::move(m_overrides));
        m_tree.root.overrides = m_spot;
    }

    void skip_statement() {
        int depth = 0;
        while (m_at < m_tokens.size()) {
            const auto& raw = m_tokens[m_at].raw;
            if (raw == "(") ++depth;
            if (raw == ")") --depth;
            if (depth <= 0 && m_tokens[m_at].separator()) break;
            ++m_at;
        }
    }

    void assign(const std::string& name, const Token& word, std::size_t equals, bool exported) {
        Variable v;
        const std::string raw = word.raw.substr(equals + 1);
        const std::size_t begin = word.begin + equals + 1;
        // `${1:-default}` and `${NAME:-default}`: what the script runs with when nothing is passed.
        if (raw.starts_with("${") && raw.ends_with("}") && raw.find(":-") != std::string::npos) {
            const auto inner = raw.substr(2, raw.size() - 3);
            const auto dash = inner.find(":-");
            const auto fallback = expand(inner.substr(dash + 2));
            v.value = fallback.text, v.literal = fallback.resolved && fallback.names.empty();
        } else {
            const auto expanded = expand(raw);
            v.value = expanded.text, v.literal = expanded.resolved && expanded.names.empty();
            v.editable = v.literal;
            v.begin = begin, v.end = word.end;
        }
        m_variables[name] = v;
        if (exported) environment(name, v, word);
    }

    void environment(const std::string& name, const Variable& v, const Token& word) {
        Node& env = section("env", word);
        Node value;
        value.kind = Node::Kind::scalar;
        value.text = v.value;
        value.mark = {word.line, 0};
        value.key_mark = value.mark;
        value.last_line = word.line;
        if (v.editable) value.begin = v.begin, value.end = v.end, value.spanned = true;
        else value.edit_refusal = "its value is not written literally (" + m_text.substr(word.begin, word.end - word.begin) + ")";
        add(env, "env", name, std::move(value), word.line);
    }

    Node& section(const std::string& name, const Token& at) {
        for (std::size_t i = 0; i < m_tree.root.keys.size(); ++i)
            if (m_tree.root.keys[i] == name) return m_tree.root.children[i];
        Node node;
        node.kind = Node::Kind::mapping;
        node.mark = {at.line, 0};
        node.last_line = at.line;
        m_tree.root.keys.push_back(name);
        m_tree.root.children.push_back(std::move(node));
        return m_tree.root.children.back();
    }

    void add(Node& parent, const std::string& parent_path, const std::string& key, Node value, int line) {
        for (std::size_t i = 0; i < parent.keys.size(); ++i)
            if (parent.keys[i] == key) {
                m_tree.duplicates.push_back({child_path(parent_path, key), parent.children[i].mark.line, line});
                parent.children[i] = std::move(value);
                return;
            }
        parent.keys.push_back(key);
        parent.children.push_back(std::move(value));
        parent.last_line = std::max(parent.last_line, line);
    }

    /// The elements of `NAME=( ... )` from token `first`; flags and their values become keys.
    void array_elements(const std::string& name, std::size_t first, bool taken) {
        std::vector<Piece> pieces;
        std::size_t at = first;
        for (; at < m_tokens.size() && m_tokens[at].raw != ")"; ++at) {
            const Token& t = m_tokens[at];
            if (t.separator()) continue;
            if (t.raw.starts_with("\"${") && t.raw.ends_with("[@]}\"")) continue;  // another array's elements
            // A quoted element is split into words where the script expands the array unquoted
            // (`${ARGS[@]}`), as Megatron-LM's examples do.
            if (t.raw.size() >= 2 && (t.raw.front() == '"' || t.raw.front() == '\'') && t.raw.back() == t.raw.front())
                split_group(t, pieces);
            else
                pieces.push_back({t.raw, t.begin, t.end, t.line, false});
        }
        if (at >= m_tokens.size()) throw InputError(m_origin + ":" + std::to_string(m_tokens[first - 1].line) + ": array '" + name + "' is never closed");
        m_at = at + 1;
        if (!taken) return;
        Node& array = section(name, m_tokens[first - 1]);
        array.end = m_tokens[at].begin;  // where a new flag is added: before the last `)` that fills it
        read_flags(name, pieces, array);
    }

    /// `--flag value ...` pieces into `section`'s keys (`--flag=value` too); anything before the first
    /// flag is refused.
    void read_flags(const std::string& name, std::vector<Piece> pieces, Node& section) {
        split_inline_values(pieces);
        for (std::size_t i = 0; i < pieces.size();) {
            const Piece& flag = pieces[i];
            if (!flag.raw.starts_with("-")) {
                throw InputError(m_origin + ":" + std::to_string(flag.line) + ": '" + flag.raw + "' in " + name +
                                 " follows no flag; expected --flag [value ...]");
            }
            std::size_t j = i + 1;
            while (j < pieces.size() && !is_flag(pieces[j].raw)) ++j;
            Node value = value_node(flag, std::vector<Piece>(pieces.begin() + std::ptrdiff_t(i) + 1, pieces.begin() + std::ptrdiff_t(j)));
            set_entry(value, pieces, i, j);
            add(section, name, flag.raw, std::move(value), flag.line);
            section.last_line = std::max(section.last_line, pieces[j - 1].line);
            i = j;
        }
    }

    /// `--flag=value` as the flag and its value, each at its bytes (argparse reads both forms alike).
    static void split_inline_values(std::vector<Piece>& pieces) {
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const auto equals = pieces[i].raw.find('=');
            if (!pieces[i].raw.starts_with("--") || equals == std::string::npos || pieces[i].quoted_group) continue;
            Piece value{pieces[i].raw.substr(equals + 1), pieces[i].begin + equals + 1, pieces[i].end, pieces[i].line, false};
            pieces[i].raw.resize(equals), pieces[i].end = pieces[i].begin + equals;
            pieces.insert(pieces.begin() + std::ptrdiff_t(i) + 1, std::move(value));
        }
    }

    /// The bytes of flag `pieces[first]` with its values, when an edit can remove them: unquoted
    /// words, or a quoted element that holds exactly this flag ("--fp8-param-gather").
    void set_entry(Node& node, const std::vector<Piece>& pieces, std::size_t first, std::size_t end) const {
        const Piece& flag = pieces[first];
        const Piece& last = pieces[end - 1];
        const bool quoted = std::any_of(pieces.begin() + std::ptrdiff_t(first), pieces.begin() + std::ptrdiff_t(end),
                                        [](const Piece& p) { return p.quoted_group; });
        if (!quoted) {
            node.entry_begin = flag.begin, node.entry_end = last.end;
            return;
        }
        const auto quote = flag.begin > 0 ? m_text[flag.begin - 1] : ' ';
        const bool whole_element = (quote == '"' || quote == '\'') && last.end < m_text.size() && m_text[last.end] == quote &&
                                   std::all_of(pieces.begin() + std::ptrdiff_t(first), pieces.begin() + std::ptrdiff_t(end),
                                               [](const Piece& p) { return p.quoted_group; });
        if (whole_element) node.entry_begin = flag.begin - 1, node.entry_end = last.end + 1;
    }

    static bool is_flag(const std::string& raw) {
        return raw.size() > 1 && raw[0] == '-' && !std::isdigit(static_cast<unsigned char>(raw[1])) && raw[1] != '.';
    }

    void split_group(const Token& t, std::vector<Piece>& pieces) const {
        std::size_t i = 1;
        while (i + 1 < t.raw.size()) {
            while (i + 1 < t.raw.size() && t.raw[i] == ' ') ++i;
            std::size_t j = i;
            while (j + 1 < t.raw.size() && t.raw[j] != ' ') ++j;
            if (j > i) pieces.push_back({t.raw.substr(i, j - i), t.begin + i, t.begin + j, t.line, true});
            i = j;
        }
    }

    Node value_node(const Piece& flag, const std::vector<Piece>& values) {
        Node node;
        node.mark = {flag.line, 0};
        node.key_mark = node.mark;
        node.last_line = flag.line;
        if (values.empty()) {
            node.kind = Node::Kind::scalar;
            node.text = "true";
            node.edit_refusal = "it is a flag without a value: it takes true, or false to remove it";
            return node;
        }
        if (values.size() == 1) return scalar(values.front(), flag.line);
        node.kind = Node::Kind::sequence;
        node.flow = true;
        for (const auto& value : values) node.children.push_back(scalar(value, flag.line));
        return node;
    }

    Node scalar(const Piece& piece, int line) {
        Node node;
        node.kind = Node::Kind::scalar;
        node.mark = {line, 0};
        node.last_line = piece.line;
        const auto expanded = expand(piece.raw);
        node.text = expanded.text;
        node.plain = !expanded.quoted || piece.quoted_group;
        if (!expanded.resolved) {
            node.text = piece.raw;
            node.plain = false;
            node.edit_refusal = "its value reads a variable the script does not assign literally (" + piece.raw + ")";
        } else if (expanded.names.empty()) {
            node.begin = piece.begin, node.end = piece.end, node.spanned = true;
        } else if (expanded.names.size() == 1 && m_variables.at(expanded.names.front()).editable &&
                   (piece.raw == "$" + expanded.names.front() || piece.raw == "${" + expanded.names.front() + "}" ||
                    piece.raw == "\"$" + expanded.names.front() + "\"" || piece.raw == "\"${" + expanded.names.front() + "}\"")) {
            // An edit rewrites where the script assigns the value: `TP_SIZE=1`.
            auto& variable = m_variables.at(expanded.names.front());
            ++variable.uses;
            node.begin = variable.begin, node.end = variable.end, node.spanned = true;
        } else {
            node.edit_refusal = "its value is built from variables (" + piece.raw + "); edit them by hand";
        }
        return node;
    }

    /// After reading: a variable that several flags read cannot be edited through one of them, and
    /// a flag that two arrays give is a duplicate (argparse keeps the last one silently).
    void finish() {
        std::map<std::string, std::pair<std::string, int>> seen;  // flag -> (path, line)
        for (std::size_t a = 0; a < m_tree.root.keys.size(); ++a) {
            const Node& array = m_tree.root.children[a];
            if (m_tree.root.keys[a] == "env") continue;
            for (std::size_t f = 0; f < array.keys.size(); ++f) {
                const auto path = child_path(m_tree.root.keys[a], array.keys[f]);
                const auto [at, first] = seen.emplace(array.keys[f], std::make_pair(path, array.children[f].mark.line));
                if (!first) m_tree.duplicates.push_back({path, at->second.second, array.children[f].mark.line});
            }
        }
        compose();
        refuse_shared(m_tree.root);
    }

    void refuse_shared(Node& node) {
        for (auto& child : node.children) refuse_shared(child);
        if (!node.spanned) return;
        for (const auto& [name, variable] : m_variables)
            if (variable.editable && variable.uses > 1 && node.begin == variable.begin && node.end == variable.end) {
                node.spanned = false;
                node.edit_refusal = "its value is the variable " + name + ", which other flags read too; edit " + name + " by hand";
            }
    }

    Expanded expand(const std::string& raw) const {
        Expanded out;
        for (std::size_t i = 0; i < raw.size();) {
            const char c = raw[i];
            if (c == '\'') {
                // A word split out of a quoted element may hold one quote of a pair: the rest is text.
                const auto close = std::min(raw.find('\'', i + 1), raw.size());
                out.text += raw.substr(i + 1, close - i - 1);
                out.quoted = true;
                i = close + 1;
            } else if (c == '"') {
                out.quoted = true;
                ++i;
            } else if (c == '\\' && i + 1 < raw.size()) {
                out.text += raw[i + 1];
                i += 2;
            } else if (c == '$' && i + 1 < raw.size() && (name_char(raw[i + 1]) || raw[i + 1] == '{')) {
                std::string name;
                std::size_t j = i + 1;
                if (raw[j] == '{') {
                    const auto close = std::min(raw.find('}', j), raw.size());
                    name = raw.substr(j + 1, close - j - 1);
                    j = close + 1;
                } else {
                    while (j < raw.size() && name_char(raw[j])) name += raw[j++];
                }
                const auto found = m_variables.find(name);
                if (found == m_variables.end() || !found->second.literal) out.resolved = false;
                else out.text += found->second.value;
                out.names.push_back(name);
                i = j;
            } else if (c == '$') {
                out.resolved = false;  // $(...), $((...)), $@ and the like
                out.text += c;
                ++i;
            } else {
                out.text += c;
                ++i;
            }
        }
        return out;
    }

    const std::string& m_text;
    const std::string& m_origin;
    std::vector<Token> m_tokens;
    std::size_t m_at = 0;
    Tree m_tree;
    std::map<std::string, Variable> m_variables;
    Node m_overrides = mapping_node();
    Node::OverrideSpot m_spot;
    std::optional<std::pair<std::string, int>> m_base;  ///< the base config as named, and its line
};

}  // namespace

Tree read_shell(const std::string& text, const std::string& origin) { return Reader(text, origin).read(); }

}  // namespace attune::recipe
