#include <attune/core/error.hpp>
#include <attune/gate/expression.hpp>

#include <gtest/gtest.h>

#include <map>

using attune::gate::Expression;

namespace {

std::optional<double> evaluate(const std::string& text, const std::map<std::string, double>& values) {
    return Expression::parse(text, "test").evaluate([&](const std::string& name) -> std::optional<double> {
        const auto found = values.find(name);
        return found == values.end() ? std::nullopt : std::optional<double>(found->second);
    });
}

bool holds(const std::string& text, const std::map<std::string, double>& facts) {
    return Expression::parse(text, "test").holds(facts);
}

}  // namespace

TEST(GateExpression, EvaluatesArithmeticWithPrecedence) {
    EXPECT_EQ(evaluate("gbs * seq_len", {{"gbs", 256}, {"seq_len", 8192}}), 2097152.0);
    EXPECT_EQ(evaluate("1 + 2 * 3 - (4 - 2) / 2", {}), 6.0);
    EXPECT_EQ(evaluate("ceil(128256 / (128 * 4)) * 128 * 4", {}), 128512.0);
    EXPECT_EQ(evaluate("10 % 4", {}), 2.0);
}

TEST(GateExpression, EvaluatesComparisonsAndLogic) {
    EXPECT_EQ(evaluate("isint(dp) && tp * dp == world", {{"dp", 8}, {"tp", 8}, {"world", 64}}), 1.0);
    EXPECT_EQ(evaluate("isint(dp)", {{"dp", 2.5}}), 0.0);
    EXPECT_EQ(evaluate("!(a <= 1) || a != a", {{"a", 2}}), 1.0);
    EXPECT_EQ(evaluate("max(a, 3) >= min(4, 5)", {{"a", 1}}), 0.0);
}

TEST(GateExpression, IsAbsentWhenANameIsMissingUnlessShortCircuited) {
    EXPECT_FALSE(evaluate("experts % ep", {{"ep", 2}}).has_value());
    EXPECT_EQ(evaluate("ep > 1 && experts % ep == 0", {{"ep", 1}}), 0.0);
    EXPECT_FALSE(evaluate("a / 0", {{"a", 1}}).has_value());
}

TEST(GateExpression, AsAConditionAMissingFactIsFalse) {
    EXPECT_TRUE(holds("gain > band || predicted_gain > 0", {{"gain", 0.02}, {"band", 0.01}}));
    EXPECT_FALSE(holds("gain > band || predicted_gain > 0", {{"gain", 0.0}, {"band", 0.01}}));
    EXPECT_FALSE(holds("gain * 0", {{"gain", 3}}));
}

TEST(GateExpression, ListsTheNamesItReads) {
    EXPECT_EQ(Expression::parse("gbs % (mbs * dp)", "t").names(), (std::vector<std::string>{"gbs", "mbs", "dp"}));
}

TEST(GateExpression, RejectsMalformedTextWithTheColumn) {
    EXPECT_THROW(Expression::parse("a +", "f.yaml:3"), attune::InputError);
    try {
        Expression::parse("sqrt(a)", "f.yaml:3");
    } catch (const attune::InputError& e) {
        EXPECT_EQ(std::string(e.what()), "f.yaml:3: expression 'sqrt(a)': unknown function 'sqrt'; expected ceil, floor, isint, min or max at column 6");
    }
}
