#include <attune/util/strings.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace attune::util {

std::string_view trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

std::vector<std::string> split(std::string_view text, char separator) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        const auto end = text.find(separator, start);
        parts.emplace_back(text.substr(start, end - start));
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    return parts;
}

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += separator;
        out += parts[i];
    }
    return out;
}

std::string to_lower(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::size_t levenshtein(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    std::iota(row.begin(), row.end(), 0);
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view name, const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
    for (const auto& candidate : candidates) {
        const auto distance = levenshtein(name, candidate);
        if (distance < best_distance) {
            best_distance = distance;
            best = candidate;
        }
    }
    return best;
}

std::optional<double> parse_number(std::string_view text) {
    std::string cleaned;
    for (char c : trim(text))
        if (c != '_') cleaned += c;
    if (cleaned.empty()) return std::nullopt;
    const std::string lower = to_lower(cleaned);
    if (lower == ".inf" || lower == "+.inf") return HUGE_VAL;
    if (lower == "-.inf") return -HUGE_VAL;
    if (lower.size() > 2 && lower[0] == '0' && lower[1] == 'x') {
        unsigned long long hex = 0;
        const auto* end = lower.data() + lower.size();
        if (std::from_chars(lower.data() + 2, end, hex, 16).ptr != end) return std::nullopt;
        return static_cast<double>(hex);
    }
    // from_chars rejects a leading '+' and a bare leading '.', both of which YAML accepts.
    std::string_view digits = cleaned;
    bool negative = false;
    if (digits.front() == '+' || digits.front() == '-') {
        negative = digits.front() == '-';
        digits.remove_prefix(1);
    }
    if (digits.empty() || (!std::isdigit(static_cast<unsigned char>(digits.front())) && digits.front() != '.'))
        return std::nullopt;
    std::string normalised = (digits.front() == '.') ? "0" + std::string(digits) : std::string(digits);
    double value = 0;
    const auto* end = normalised.data() + normalised.size();
    const auto result = std::from_chars(normalised.data(), end, value);
    if (result.ec != std::errc() || result.ptr != end) return std::nullopt;
    return negative ? -value : value;
}

std::string format_number(double value) {
    if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
    if (std::isnan(value)) return ".nan";
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        return std::to_string(static_cast<long long>(value));
    }
    char buffer[64];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
        if (std::strtod(buffer, nullptr) == value) break;
    }
    return buffer;
}

namespace {

bool glob_from(std::string_view pattern, std::string_view text, char separator) {
    while (!pattern.empty()) {
        if (pattern.substr(0, 2) == "**") {
            pattern.remove_prefix(2);
            for (std::size_t i = 0; i <= text.size(); ++i)
                if (glob_from(pattern, text.substr(i), separator)) return true;
            return false;
        }
        if (pattern.front() == '*') {
            pattern.remove_prefix(1);
            for (std::size_t i = 0; i <= text.size(); ++i) {
                if (glob_from(pattern, text.substr(i), separator)) return true;
                if (i < text.size() && text[i] == separator) return false;
            }
            return false;
        }
        if (text.empty() || pattern.front() != text.front()) return false;
        pattern.remove_prefix(1);
        text.remove_prefix(1);
    }
    return text.empty();
}

}  // namespace

bool valid_variable_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front())) != 0) return false;
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

bool glob_match(std::string_view pattern, std::string_view text, char separator) {
    return glob_from(pattern, text, separator);
}

}  // namespace attune::util
