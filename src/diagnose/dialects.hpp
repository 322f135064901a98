#pragma once
// Internal to src/diagnose: the table of log dialects and the field scanner that reads it.

#include <attune/diagnose/run_metrics.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose::detail {

enum class Field { step_time, tokens, tflops, loss, grad_norm, memory };

/// Where a tokens figure sits: the number after the key, or the per-GPU part in parentheses.
enum class Part { value, parenthesised_if_any };

/// A fixed string looked for in every line, with the offsets of its two least common bytes chosen
/// once: find_in() tests 32 positions at a time for both bytes (AVX2, chosen at run time; one at a
/// time otherwise) and compares the whole needle only where both match. On short log lines this is
/// several times faster than memmem, whose per-call set-up (a shift table) dominates, and than
/// memchr on one byte, which stops at every common letter; the hot loop of a multi-GB log runs it a
/// dozen times per line.
class Needle {
public:
    constexpr Needle() = default;
    constexpr Needle(std::string_view text)
        : m_text(text), m_rare(rarest(text, text.size())), m_rare2(second_rarest(text, m_rare)), m_head(head_of(text)) {}  // NOLINT(google-explicit-constructor): tables spell needles as literals
    constexpr Needle(const char* text) : Needle(std::string_view(text)) {}            // NOLINT(google-explicit-constructor)

    /// The offset of the first occurrence in `text`, or npos; an empty needle is found at 0.
    [[nodiscard]] std::size_t find_in(std::string_view text) const;
    /// The two bytes the search keys on: a text lacking either cannot hold the needle.
    [[nodiscard]] unsigned char rare_byte() const { return static_cast<unsigned char>(m_text.empty() ? 0 : m_text[m_rare]); }
    [[nodiscard]] unsigned char second_rare_byte() const { return static_cast<unsigned char>(m_text.empty() ? 0 : m_text[m_rare2]); }
    [[nodiscard]] std::string_view text() const { return m_text; }
    [[nodiscard]] std::size_t size() const { return m_text.size(); }
    [[nodiscard]] bool empty() const { return m_text.empty(); }

private:
    // How common a byte is in training logs (higher: more common); ties go to the earlier byte.
    static constexpr int commonness(unsigned char c) {
        constexpr std::string_view letters = "etaoinshrdlcumwfgypbvkjxqz";  // English letter order
        if (c == ' ') return 100;
        if (c >= '0' && c <= '9') return 90;
        if (c >= 'a' && c <= 'z') return 80 - static_cast<int>(letters.find(static_cast<char>(c))) * 2;
        if (c == '.' || c == ':' || c == '|' || c == ',' || c == '-') return 55;
        if (c == 'E' || c == '_' || c == '=' || c == '/' || c == '[' || c == ']') return 35;
        if (c >= 'A' && c <= 'Z') return 20;
        if (c == '(' || c == ')' || c == '{' || c == '}' || c == '\'' || c == '"') return 20;
        return 10;
    }
    // The offset of the least common byte, not counting offset `skip`.
    static constexpr std::size_t rarest(std::string_view text, std::size_t skip) {
        std::size_t best = text.size();
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (i != skip && (best == text.size() ||
                              commonness(static_cast<unsigned char>(text[i])) < commonness(static_cast<unsigned char>(text[best])))) {
                best = i;
            }
        }
        return best == text.size() ? 0 : best;
    }
    static constexpr std::size_t second_rarest(std::string_view text, std::size_t first) {
        return text.size() < 2 ? first : rarest(text, first);
    }

    // The first 8 bytes as a little-endian word (0 for a shorter needle): a candidate is checked
    // with one load and compare before memcmp looks at the rest.
    static constexpr std::uint64_t head_of(std::string_view text) {
        std::uint64_t head = 0;
        for (std::size_t i = 0; text.size() >= 8 && i < 8; ++i) {
            head |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[i])) << (8 * i);
        }
        return head;
    }

    std::string_view m_text;
    std::size_t m_rare = 0;
    std::size_t m_rare2 = 0;
    std::uint64_t m_head = 0;
};

/// The bytes a line holds, to pass over the needles it cannot contain (one pass over the line
/// instead of one search per needle; lines that are no record meet every failure sign's needle).
class ByteSet {
public:
    explicit ByteSet(std::string_view text) {
        for (const char c : text) {
            const auto byte = static_cast<unsigned char>(c);
            m_bits[byte >> 6] |= std::uint64_t{1} << (byte & 63);
        }
    }
    [[nodiscard]] bool has(unsigned char byte) const { return (m_bits[byte >> 6] >> (byte & 63)) & 1; }
    /// Whether `needle` may occur: both of its search bytes are present (an empty needle always may).
    [[nodiscard]] bool may_hold(const Needle& needle) const {
        return needle.empty() || (has(needle.rare_byte()) && has(needle.second_rare_byte()));
    }

private:
    std::uint64_t m_bits[4] = {};
};

/// One `key <sep> number` field of a record and the factor that converts it to attune's unit.
struct FieldSpec {
    Needle key;
    Field field;
    double scale = 1.0;
    Part part = Part::value;
};

/// A line that adds fields to the most recent record (a separate TFLOP/s line, a memory report).
struct Attachment {
    Needle anchor;
    std::vector<FieldSpec> fields;
};

/// One record format. A line is a record when it contains every anchor and none of the excludes;
/// the step is the number after `step_key`, the tqdm counter when `step_key` is empty and
/// `step_from_bar` is set, or the record's ordinal otherwise.
struct DialectSpec {
    std::string_view name;
    std::vector<Needle> anchors = {};
    Needle step_key = {};
    bool step_from_bar = false;
    std::vector<Needle> excludes = {};
    std::vector<FieldSpec> fields = {};
    std::vector<Attachment> attachments = {};
    std::vector<Needle> markers = {};  ///< text that names the framework even without records
    std::vector<Needle> chatter = {};  ///< lines holding these carry no record and no failure (timer blocks)
    /// A runtime's own step line (DeepSpeed's engine timer), not the training loop's: its records
    /// count only while the loop prints none. The loop's first record replaces them, and from then
    /// on the runtime's lines are no records.
    bool engine = false;
};

/// The offset of `needle` in `text` or npos.
inline std::size_t find(std::string_view text, const Needle& needle) { return needle.find_in(text); }

/// Whether `text` contains `needle`.
inline bool contains(std::string_view text, const Needle& needle) { return needle.find_in(text) != std::string_view::npos; }

/// Whether `text` contains every one of `needles`.
inline bool contains_all(std::string_view text, const std::vector<Needle>& needles) {
    return std::all_of(needles.begin(), needles.end(), [&](const Needle& n) { return contains(text, n); });
}

/// Whether `text` contains any of `needles`.
inline bool contains_any(std::string_view text, const std::vector<Needle>& needles) {
    return std::any_of(needles.begin(), needles.end(), [&](const Needle& n) { return contains(text, n); });
}

/// Whether `line` is a record of `spec`: it holds every anchor and no exclude.
inline bool is_record(std::string_view line, const DialectSpec& spec) {
    return contains_all(line, spec.anchors) && !contains_any(line, spec.excludes);
}

/// `line` without its colour escapes (ESC [ params letter), which sit between keys and values; the
/// text is built in `buffer`, which the result points into.
std::string_view without_ansi(std::string_view line, std::string& buffer);

/// Whether `spec` numbers its records by their order in the log (no step key, no tqdm counter).
inline bool numbers_by_order(const DialectSpec& spec) { return spec.step_key.empty() && !spec.step_from_bar; }

/// The step a record line of `spec` prints (after `step_key`, or the tqdm counter); nullopt when it
/// prints none, or no finite one. Not for formats that number records by order.
std::optional<long long> printed_step(const DialectSpec& spec, std::string_view line);

/// Every record format, in detection order.
const std::vector<DialectSpec>& dialect_specs();

/// The number after the first `key` (separators ` :=\t'"` skipped): `13,785`, `2.198845E+00`,
/// `nan`, `inf`; nullopt when the key is absent or no number follows.
std::optional<double> number_after(std::string_view line, const Needle& key, Part part = Part::value);

/// number_after for the hot path: true and `value` set when a number follows the key. A bool and an
/// out-parameter, because an optional<double> return cost store-forwarding stalls on every field.
bool read_number_after(std::string_view line, const Needle& key, Part part, double& value);

/// The `N` of a tqdm counter `N/TOTAL [` on the line, if any.
std::optional<long long> bar_counter(std::string_view line);

/// Seconds since 1970-01-01 (as if UTC) of the first `YYYY-MM-DD HH:MM:SS` (or `...THH:MM:SS`) on
/// the line: Megatron `[2025-03-11 17:04:50]`, Python logging, NeMo `[NeMo I ...]`, Slurm's
/// `CANCELLED AT 2025-03-11T17:04:50`, Kubernetes RFC 3339 stamps. Fractions and zones are ignored.
std::optional<long long> timestamp_of(std::string_view line);

/// The rank that printed the line (`[rankN]:`, srun label `N: `), if it says.
std::optional<int> line_rank(std::string_view line);

}  // namespace attune::diagnose::detail
