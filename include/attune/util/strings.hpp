#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::util {

std::string_view trim(std::string_view text);
std::vector<std::string> split(std::string_view text, char separator);
std::string join(const std::vector<std::string>& parts, std::string_view separator);
std::string to_lower(std::string_view text);

/// Edit distance, for did-you-mean suggestions.
std::size_t levenshtein(std::string_view a, std::string_view b);

/// The closest candidate within a small edit distance, if any.
std::optional<std::string> closest_match(std::string_view name, const std::vector<std::string>& candidates);

/// Parses the whole text as a number (int or float, YAML spellings such as `1e-4`, `.5`, `1_000`).
std::optional<double> parse_number(std::string_view text);

/// Formats a number the shortest way that reads back the same (`0.0001`, `8`, `1e+20`).
std::string format_number(double value);

/// Glob match where `*` matches any run of characters but `separator`, and `**` matches anything.
bool glob_match(std::string_view pattern, std::string_view text, char separator);

/// True for a shell variable's name: `[A-Za-z_][A-Za-z0-9_]*`.
bool valid_variable_name(std::string_view name);

}  // namespace attune::util
