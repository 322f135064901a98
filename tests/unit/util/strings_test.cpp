#include <attune/util/strings.hpp>

#include <gtest/gtest.h>

using namespace attune::util;

TEST(Strings, ParsesYamlNumberSpellingsToTheSameValue) {
    EXPECT_EQ(parse_number("1e-4"), parse_number("0.0001"));
    EXPECT_EQ(parse_number("8"), parse_number("8.0"));
    EXPECT_EQ(parse_number("1_000"), 1000.0);
    EXPECT_EQ(parse_number(".5"), 0.5);
    EXPECT_EQ(parse_number("+2"), 2.0);
    EXPECT_EQ(parse_number("0x10"), 16.0);
    EXPECT_FALSE(parse_number("abc").has_value());
    EXPECT_FALSE(parse_number("1.0.0").has_value());
    EXPECT_FALSE(parse_number("").has_value());
}

TEST(Strings, FormatsNumbersShortestFirst) {
    EXPECT_EQ(format_number(0.0001), "0.0001");
    EXPECT_EQ(format_number(8.0), "8");
    EXPECT_EQ(format_number(1.5e-5), "1.5e-05");
}

TEST(Strings, GlobStarStopsAtSeparatorDoubleStarDoesNot) {
    EXPECT_TRUE(glob_match("model.optim.*", "model.optim.lr", '.'));
    EXPECT_FALSE(glob_match("model.optim.*", "model.optim.sched.name", '.'));
    EXPECT_TRUE(glob_match("model.optim.**", "model.optim.sched.name", '.'));
    EXPECT_TRUE(glob_match("NCCL_*", "NCCL_IB_HCA", '.'));
}

TEST(Strings, SuggestsTheClosestName) {
    EXPECT_EQ(closest_match("gate", {"tune", "gate", "sim"}), "gate");
    EXPECT_EQ(closest_match("diagnsoe", {"diagnose", "replay"}), "diagnose");
    EXPECT_FALSE(closest_match("zzzzzz", {"tune"}).has_value());
}
