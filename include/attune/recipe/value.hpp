#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace attune::recipe {

/// A leaf value of a recipe as YAML (and OmegaConf) types it: `1e-4` and `0.0001` are the same
/// number, `"8"` is a string, `True`/`yes` are booleans, `~` and an empty value are null.
class Value {
public:
    enum class Kind { null, boolean, number, string, empty_list, empty_map };

    Value() = default;
    static Value null();
    static Value boolean(bool value);
    static Value number(double value, std::string written = {});
    static Value string(std::string text);
    static Value empty_list();
    static Value empty_map();
    /// Types an unquoted scalar the way YAML 1.1 resolvers (PyYAML, OmegaConf) do.
    static Value from_plain(std::string_view text);

    [[nodiscard]] Kind kind() const { return m_kind; }
    [[nodiscard]] bool is_null() const { return m_kind == Kind::null; }
    [[nodiscard]] std::optional<double> as_number() const;   ///< numbers, and strings that read as one
    [[nodiscard]] std::optional<bool> as_bool() const;
    /// The value for a person: numbers in their shortest form, strings as they are.
    [[nodiscard]] std::string to_string() const;
    /// The value as YAML would need it written back (quoted when a plain scalar would read differently).
    [[nodiscard]] std::string to_yaml() const;
    [[nodiscard]] nlohmann::json to_json() const;
    static Value from_json(const nlohmann::json& json);

    /// Same value: numbers compare numerically; with `Numeric::coerce`, a string that reads as
    /// a number equals that number (for keys whose domain is numeric).
    enum class Numeric { strict, coerce };
    [[nodiscard]] bool same_as(const Value& other, Numeric numeric = Numeric::strict) const;
    friend bool operator==(const Value& a, const Value& b) { return a.same_as(b); }

private:
    Kind m_kind = Kind::null;
    bool m_boolean = false;
    double m_number = 0;
    std::string m_text;  ///< the string, or the number as written
};

}  // namespace attune::recipe
