#pragma once
// Internal to src/diagnose: the table of log dialects and the field scanner that reads it.

#include <attune/diagnose/run_metrics.hpp>

#include <optional>
#include <string_view>
#include <vector>

namespace attune::diagnose::detail {

enum class Field { step_time, tokens, tflops, loss, grad_norm, memory };

/// Where a tokens figure sits: the number after the key, or the per-GPU part in parentheses.
enum class Part { value, parenthesised_if_any };

/// One `key <sep> number` field of a record and the factor that converts it to attune's unit.
struct FieldSpec {
    std::string_view key;
    Field field;
    double scale = 1.0;
    Part part = Part::value;
};

/// A line that adds fields to the most recent record (a separate TFLOP/s line, a memory report).
struct Attachment {
    std::string_view anchor;
    std::vector<FieldSpec> fields;
};

/// One record format. A line is a record when it contains every anchor and none of the excludes;
/// the step is the number after `step_key`, the tqdm counter when `step_key` is empty and
/// `step_from_bar` is set, or the record's ordinal otherwise.
struct DialectSpec {
    std::string_view name;
    std::vector<std::string_view> anchors = {};
    std::string_view step_key = {};
    bool step_from_bar = false;
    std::vector<std::string_view> excludes = {};
    std::vector<FieldSpec> fields = {};
    std::vector<Attachment> attachments = {};
    std::vector<std::string_view> markers = {};  ///< text that names the framework even without records
    std::vector<std::string_view> chatter = {};  ///< lines holding these carry no record and no failure (timer blocks)
};

/// The offset of `needle` in `text` or npos; glibc's memmem, much faster than string_view::find
/// when the needle starts with a common byte (a space, a dot).
std::size_t find(std::string_view text, std::string_view needle);

/// Whether `text` contains `needle`.
inline bool contains(std::string_view text, std::string_view needle) { return find(text, needle) != std::string_view::npos; }

/// Every record format, in detection order.
const std::vector<DialectSpec>& dialect_specs();

/// The number after the first `key` (separators ` :=\t'"` skipped): `13,785`, `2.198845E+00`,
/// `nan`, `inf`; nullopt when the key is absent or no number follows.
std::optional<double> number_after(std::string_view line, std::string_view key, Part part = Part::value);

/// The `N` of a tqdm counter `N/TOTAL [` on the line, if any.
std::optional<long long> bar_counter(std::string_view line);

/// The rank that printed the line (`[rankN]:`, srun label `N: `), if it says.
std::optional<int> line_rank(std::string_view line);

}  // namespace attune::diagnose::detail
