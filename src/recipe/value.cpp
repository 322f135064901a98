#include <attune/recipe/value.hpp>
#include <attune/util/strings.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>

namespace attune::recipe {

namespace {

// YAML 1.1 booleans as PyYAML resolves them (OmegaConf uses the same resolver).
constexpr std::array<std::string_view, 6> k_true = {"true", "True", "TRUE", "yes", "Yes", "YES"};
constexpr std::array<std::string_view, 6> k_false = {"false", "False", "FALSE", "no", "No", "NO"};
constexpr std::array<std::string_view, 3> k_on = {"on", "On", "ON"};
constexpr std::array<std::string_view, 3> k_off = {"off", "Off", "OFF"};
constexpr std::array<std::string_view, 5> k_null = {"", "~", "null", "Null", "NULL"};

template <std::size_t N>
bool one_of(const std::array<std::string_view, N>& words, std::string_view text) {
    for (auto word : words)
        if (word == text) return true;
    return false;
}

bool looks_numeric_start(std::string_view text) {
    if (text.empty()) return false;
    const char c = text.front();
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

}  // namespace

Value Value::null() { return Value{}; }

Value Value::boolean(bool value) {
    Value v;
    v.m_kind = Kind::boolean;
    v.m_boolean = value;
    return v;
}

Value Value::number(double value, std::string written) {
    Value v;
    v.m_kind = Kind::number;
    v.m_number = value;
    v.m_text = written.empty() ? util::format_number(value) : std::move(written);
    return v;
}

Value Value::string(std::string text) {
    Value v;
    v.m_kind = Kind::string;
    v.m_text = std::move(text);
    return v;
}

Value Value::empty_list() {
    Value v;
    v.m_kind = Kind::empty_list;
    return v;
}

Value Value::empty_map() {
    Value v;
    v.m_kind = Kind::empty_map;
    return v;
}

Value Value::from_plain(std::string_view text) {
    const auto trimmed = util::trim(text);
    if (one_of(k_null, trimmed)) return null();
    if (one_of(k_true, trimmed) || one_of(k_on, trimmed)) return boolean(true);
    if (one_of(k_false, trimmed) || one_of(k_off, trimmed)) return boolean(false);
    if (trimmed == "[]") return empty_list();
    if (trimmed == "{}") return empty_map();
    const std::string lower = util::to_lower(trimmed);
    if (lower == ".nan") return number(std::nan(""), std::string(trimmed));
    if (looks_numeric_start(trimmed) || lower == ".inf" || lower == "+.inf" || lower == "-.inf")
        if (auto parsed = util::parse_number(trimmed)) return number(*parsed, std::string(trimmed));
    return string(std::string(trimmed));
}

std::optional<double> Value::as_number() const {
    if (m_kind == Kind::number) return m_number;
    if (m_kind == Kind::string) return util::parse_number(m_text);
    return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
    if (m_kind == Kind::boolean) return m_boolean;
    if (m_kind == Kind::string) {
        const auto typed = from_plain(m_text);
        if (typed.m_kind == Kind::boolean) return typed.m_boolean;
    }
    return std::nullopt;
}

std::string Value::to_string() const {
    switch (m_kind) {
        case Kind::null: return "null";
        case Kind::boolean: return m_boolean ? "true" : "false";
        case Kind::number: return util::format_number(m_number);
        case Kind::string: return m_text;
        case Kind::empty_list: return "[]";
        case Kind::empty_map: return "{}";
    }
    return {};
}

std::string Value::to_yaml() const {
    if (m_kind != Kind::string) return to_string();
    const bool reads_back = !m_text.empty() && from_plain(m_text).m_kind == Kind::string &&
                            util::trim(m_text) == m_text &&
                            m_text.find_first_of(":#{}[],&*!|>'\"%@`\n\t") == std::string::npos &&
                            m_text.front() != '-' && m_text.front() != '?';
    if (reads_back) return m_text;
    // nlohmann's dump escapes like a YAML double-quoted scalar.
    return nlohmann::json(m_text).dump();
}

nlohmann::json Value::to_json() const {
    switch (m_kind) {
        case Kind::null: return nullptr;
        case Kind::boolean: return m_boolean;
        case Kind::number:
            if (std::isfinite(m_number) && m_number == std::floor(m_number) && std::fabs(m_number) < 9e15)
                return static_cast<long long>(m_number);
            if (!std::isfinite(m_number)) return to_string();
            return m_number;
        case Kind::string: return m_text;
        case Kind::empty_list: return nlohmann::json::array();
        case Kind::empty_map: return nlohmann::json::object();
    }
    return nullptr;
}

Value Value::from_json(const nlohmann::json& json) {
    if (json.is_null()) return null();
    if (json.is_boolean()) return boolean(json.get<bool>());
    if (json.is_number()) return number(json.get<double>());
    if (json.is_string()) return string(json.get<std::string>());
    if (json.is_array() && json.empty()) return empty_list();
    if (json.is_object() && json.empty()) return empty_map();
    return string(json.dump());
}

bool Value::same_as(const Value& other, Numeric numeric) const {
    if (numeric == Numeric::coerce) {
        const auto a = as_number();
        const auto b = other.as_number();
        if (a && b) return *a == *b || (std::isnan(*a) && std::isnan(*b));
    }
    if (m_kind != other.m_kind) return false;
    switch (m_kind) {
        case Kind::null:
        case Kind::empty_list:
        case Kind::empty_map: return true;
        case Kind::boolean: return m_boolean == other.m_boolean;
        case Kind::number: return m_number == other.m_number || (std::isnan(m_number) && std::isnan(other.m_number));
        case Kind::string: return m_text == other.m_text;
    }
    return false;
}

}  // namespace attune::recipe
