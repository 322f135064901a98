#include <attune/core/error.hpp>
#include <attune/gate/expression.hpp>
#include <attune/util/strings.hpp>

#include <cctype>
#include <cmath>

namespace attune::gate {

struct Expression::Node {
    enum class Kind { number, name, unary, binary, call };
    Kind kind = Kind::number;
    double number = 0;
    std::string text;  ///< name, operator or function
    std::vector<std::shared_ptr<const Node>> operands;
};

namespace {

using NodePtr = std::shared_ptr<const Expression::Node>;
using Kind = Expression::Node::Kind;

NodePtr make(Kind kind, std::string text, std::vector<NodePtr> operands = {}, double number = 0) {
    auto node = std::make_shared<Expression::Node>();
    node->kind = kind;
    node->text = std::move(text);
    node->operands = std::move(operands);
    node->number = number;
    return node;
}

/// Recursive descent, lowest precedence first: || && comparison additive multiplicative unary.
class Parser {
public:
    Parser(std::string_view text, std::string_view origin) : m_text(text), m_origin(origin) {}

    NodePtr parse() {
        auto root = parse_or();
        skip_space();
        if (m_at != m_text.size()) fail("unexpected '" + std::string(m_text.substr(m_at, 1)) + "'");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(std::string(m_origin) + ": expression '" + std::string(m_text) + "': " + what +
                         " at column " + std::to_string(m_at + 1));
    }

    void skip_space() {
        while (m_at < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_at])) != 0) ++m_at;
    }

    bool take(std::string_view token) {
        skip_space();
        if (m_text.substr(m_at, token.size()) != token) return false;
        // Keep "<" from eating "<=", and "!" from eating "!=".
        if ((token == "<" || token == ">" || token == "!") && m_text.substr(m_at + 1, 1) == "=") return false;
        m_at += token.size();
        return true;
    }

    template <typename Next>
    NodePtr binary_level(std::initializer_list<std::string_view> operators, Next next) {
        auto left = (this->*next)();
        while (true) {
            bool matched = false;
            for (auto op : operators) {
                if (take(op)) {
                    left = make(Kind::binary, std::string(op), {left, (this->*next)()});
                    matched = true;
                    break;
                }
            }
            if (!matched) return left;
        }
    }

    NodePtr parse_or() { return binary_level({"||"}, &Parser::parse_and); }
    NodePtr parse_and() { return binary_level({"&&"}, &Parser::parse_comparison); }
    NodePtr parse_comparison() { return binary_level({"==", "!=", "<=", ">=", "<", ">"}, &Parser::parse_additive); }
    NodePtr parse_additive() { return binary_level({"+", "-"}, &Parser::parse_multiplicative); }
    NodePtr parse_multiplicative() { return binary_level({"*", "/", "%"}, &Parser::parse_unary); }

    NodePtr parse_unary() {
        if (take("!")) return make(Kind::unary, "!", {parse_unary()});
        if (take("-")) return make(Kind::unary, "-", {parse_unary()});
        return parse_primary();
    }

    NodePtr parse_primary() {
        skip_space();
        if (take("(")) {
            auto inner = parse_or();
            if (!take(")")) fail("expected ')'");
            return inner;
        }
        if (m_at < m_text.size() && (std::isdigit(static_cast<unsigned char>(m_text[m_at])) != 0 || m_text[m_at] == '.'))
            return parse_number();
        if (m_at < m_text.size() && (std::isalpha(static_cast<unsigned char>(m_text[m_at])) != 0 || m_text[m_at] == '_'))
            return parse_name();
        fail("expected a number, a name or '('");
    }

    NodePtr parse_number() {
        const auto start = m_at;
        while (m_at < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_at])) != 0 || m_text[m_at] == '.'))
            ++m_at;
        const auto number = util::parse_number(m_text.substr(start, m_at - start));
        if (!number) fail("malformed number");
        return make(Kind::number, {}, {}, *number);
    }

    NodePtr parse_name() {
        const auto start = m_at;
        while (m_at < m_text.size() && (std::isalnum(static_cast<unsigned char>(m_text[m_at])) != 0 || m_text[m_at] == '_'))
            ++m_at;
        std::string name(m_text.substr(start, m_at - start));
        if (!take("(")) return make(Kind::name, name);
        static const std::vector<std::pair<std::string, std::size_t>> k_functions = {
            {"ceil", 1}, {"floor", 1}, {"isint", 1}, {"min", 2}, {"max", 2}};
        const auto function = std::find_if(k_functions.begin(), k_functions.end(), [&](const auto& f) { return f.first == name; });
        if (function == k_functions.end()) fail("unknown function '" + name + "'; expected ceil, floor, isint, min or max");
        std::vector<NodePtr> arguments{parse_or()};
        while (take(",")) arguments.push_back(parse_or());
        if (!take(")")) fail("expected ')'");
        if (arguments.size() != function->second)
            fail(name + "() takes " + std::to_string(function->second) + " argument(s)");
        return make(Kind::call, name, std::move(arguments));
    }

    std::string_view m_text;
    std::string_view m_origin;
    std::size_t m_at = 0;
};

std::optional<double> apply_binary(const std::string& op, double a, double b) {
    if (op == "+") return a + b;
    if (op == "-") return a - b;
    if (op == "*") return a * b;
    if (op == "/") return b == 0 ? std::nullopt : std::optional<double>(a / b);
    if (op == "%") return b == 0 ? std::nullopt : std::optional<double>(std::fmod(a, b));
    if (op == "==") return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(a)) ? 1.0 : 0.0;
    if (op == "!=") return std::fabs(a - b) > 1e-9 * std::max(1.0, std::fabs(a)) ? 1.0 : 0.0;
    if (op == "<") return a < b ? 1.0 : 0.0;
    if (op == ">") return a > b ? 1.0 : 0.0;
    if (op == "<=") return a <= b ? 1.0 : 0.0;
    if (op == ">=") return a >= b ? 1.0 : 0.0;
    return std::nullopt;
}

std::optional<double> evaluate_node(const Expression::Node& node, const Expression::Lookup& lookup) {
    switch (node.kind) {
        case Kind::number: return node.number;
        case Kind::name: return lookup(node.text);
        case Kind::unary: {
            const auto value = evaluate_node(*node.operands[0], lookup);
            if (!value) return std::nullopt;
            return node.text == "!" ? (*value == 0 ? 1.0 : 0.0) : -*value;
        }
        case Kind::binary: {
            const auto left = evaluate_node(*node.operands[0], lookup);
            // && and || short-circuit, so `ep > 1 && experts % ep == 0` needs no experts for dense models.
            if (node.text == "&&" && left && *left == 0) return 0.0;
            if (node.text == "||" && left && *left != 0) return 1.0;
            const auto right = evaluate_node(*node.operands[1], lookup);
            if (!left || !right) return std::nullopt;
            if (node.text == "&&" || node.text == "||") return *right != 0 ? 1.0 : 0.0;
            return apply_binary(node.text, *left, *right);
        }
        case Kind::call: {
            std::vector<double> arguments;
            for (const auto& operand : node.operands) {
                const auto value = evaluate_node(*operand, lookup);
                if (!value) return std::nullopt;
                arguments.push_back(*value);
            }
            if (node.text == "ceil") return std::ceil(arguments[0] - 1e-9);
            if (node.text == "floor") return std::floor(arguments[0] + 1e-9);
            if (node.text == "isint") return std::fabs(arguments[0] - std::round(arguments[0])) < 1e-9 ? 1.0 : 0.0;
            if (node.text == "min") return std::min(arguments[0], arguments[1]);
            return std::max(arguments[0], arguments[1]);
        }
    }
    return std::nullopt;
}

void collect_names(const Expression::Node& node, std::vector<std::string>& names) {
    if (node.kind == Kind::name && std::find(names.begin(), names.end(), node.text) == names.end())
        names.push_back(node.text);
    for (const auto& operand : node.operands) collect_names(*operand, names);
}

}  // namespace

Expression Expression::parse(std::string_view text, std::string_view origin) {
    Expression expression;
    expression.m_text = std::string(text);
    expression.m_root = Parser(expression.m_text, origin).parse();
    return expression;
}

std::optional<double> Expression::evaluate(const Lookup& lookup) const {
    return m_root ? evaluate_node(*m_root, lookup) : std::nullopt;
}

bool Expression::holds(const std::map<std::string, double>& facts) const {
    const auto value = evaluate([&](const std::string& name) -> std::optional<double> {
        const auto it = facts.find(name);
        return it == facts.end() ? std::nullopt : std::optional{it->second};
    });
    return value && *value != 0;
}

std::vector<std::string> Expression::names() const {
    std::vector<std::string> names;
    if (m_root) collect_names(*m_root, names);
    return names;
}

}  // namespace attune::gate
