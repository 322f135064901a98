#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::gate {

/// An arithmetic/boolean expression over named quantities, as adapter and invariant files
/// write them: `gbs * seq_len`, `isint(dp) && tp * pp * cp * dp == world`, `ceil(v / m) * m`.
/// Booleans are 1 and 0. A name the lookup cannot give makes the whole result absent.
class Expression {
public:
    /// Parses `text`; throws InputError naming `origin` and what was expected.
    static Expression parse(std::string_view text, std::string_view origin);

    using Lookup = std::function<std::optional<double>(const std::string& name)>;
    [[nodiscard]] std::optional<double> evaluate(const Lookup& lookup) const;
    /// As a condition over named facts: true when non-zero; a name it needs and `facts` lacks makes it false.
    [[nodiscard]] bool holds(const std::map<std::string, double>& facts) const;

    /// The quantity names it reads.
    [[nodiscard]] std::vector<std::string> names() const;
    [[nodiscard]] const std::string& text() const { return m_text; }

    struct Node;

private:
    std::string m_text;
    std::shared_ptr<const Node> m_root;
};

}  // namespace attune::gate
