// The hot-path helpers of the diagnose parser (issue 4, speed) give what the plain library calls
// give: Needle::find_in as string_view::find, number_after's fast decimal path as from_chars.
#include "../../../src/diagnose/dialects.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>
#include <string>

namespace attune::diagnose::detail {
namespace {

TEST(DiagnoseNeedle, FindsWhatStringViewFindFinds) {
    std::mt19937 random(4);
    const std::string alphabet = "ab (ms):|.";  // few letters: many partial matches
    const auto text_of = [&](std::size_t length) {
        std::string text;
        for (std::size_t i = 0; i < length; ++i) {
            text += alphabet[random() % alphabet.size()];
        }
        return text;
    };
    for (int round = 0; round < 20000; ++round) {
        auto haystack = text_of(random() % 120);
        // up to 12 bytes: needles of 8 or more are checked by their first word before memcmp
        const auto needle_text = text_of(1 + random() % 12);
        if (round % 2 == 0 && haystack.size() >= needle_text.size()) {
            // planted, so that long needles are found too, not only missed
            haystack.replace(random() % (haystack.size() - needle_text.size() + 1), needle_text.size(), needle_text);
        }
        const Needle needle(needle_text);
        ASSERT_EQ(needle.find_in(haystack), std::string_view(haystack).find(needle_text)) << '"' << haystack << "\" / \"" << needle_text << '"';
    }
    EXPECT_EQ(Needle("").find_in("abc"), 0u);
    EXPECT_EQ(Needle("abcd").find_in("abc"), std::string_view::npos);
}

TEST(DiagnoseNeedle, AByteSetNeverRulesOutANeedleTheTextHolds) {
    // The failure signs are passed over when a line lacks one of their search bytes: the pass may
    // only ever skip a needle the line does not hold, and must skip some that it does not.
    std::mt19937 random(9);
    const std::string alphabet = "abcdeXYZ :|.";
    const auto text_of = [&](std::size_t length) {
        std::string text;
        for (std::size_t i = 0; i < length; ++i) text += alphabet[random() % alphabet.size()];
        return text;
    };
    int ruled_out = 0;
    for (int round = 0; round < 20000; ++round) {
        auto line = text_of(random() % 80);
        const auto needle_text = text_of(1 + random() % 10);
        if (round % 2 == 0 && line.size() >= needle_text.size())
            line.replace(random() % (line.size() - needle_text.size() + 1), needle_text.size(), needle_text);
        const Needle needle(needle_text);
        const ByteSet bytes(line);
        if (!bytes.may_hold(needle)) {
            ++ruled_out;
            ASSERT_EQ(std::string_view(line).find(needle_text), std::string_view::npos) << '"' << line << "\" / \"" << needle_text << '"';
        }
    }
    EXPECT_GT(ruled_out, 1000);
}

TEST(DiagnoseNeedle, PlainDecimalsReadAsFromCharsReadsThem) {
    std::mt19937 random(7);
    for (int round = 0; round < 20000; ++round) {
        char text[64];
        const double value = std::uniform_real_distribution<double>(0, 1e6)(random) / std::pow(10.0, random() % 12);
        switch (round % 3) {
        case 0: std::snprintf(text, sizeof text, "%.*f", static_cast<int>(random() % 9), value); break;
        case 1: std::snprintf(text, sizeof text, "%.*E", static_cast<int>(random() % 9), value); break;
        default: std::snprintf(text, sizeof text, "%.*g", static_cast<int>(1 + random() % 16), value); break;
        }
        const std::string line = std::string("key: ") + text + " |";
        double want = 0;
        std::from_chars(text, text + std::char_traits<char>::length(text), want);
        const auto got = number_after(line, "key");
        ASSERT_TRUE(got.has_value()) << line;
        ASSERT_EQ(*got, want) << line;
    }
    EXPECT_EQ(number_after("tps: 12,345 |", "tps"), 12345.0);
    EXPECT_EQ(number_after("loss: .5", "loss"), 0.5);
    EXPECT_TRUE(std::isnan(*number_after("loss: nan", "loss")));
}

// StepRecord's 8-byte optional: a printed nan or inf is a value, only "never set" is absent.
TEST(DiagnoseOptionalDouble, KeepsNanAndInfAsValuesAndConvertsToOptional) {
    const OptionalDouble absent;
    EXPECT_FALSE(absent.has_value());
    EXPECT_FALSE(static_cast<std::optional<double>>(absent).has_value());
    EXPECT_EQ(absent.value_or(2.5), 2.5);
    for (const double value : {0.0, -0.0, 1.5, std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()}) {
        const OptionalDouble set = value;
        ASSERT_TRUE(set.has_value()) << value;
        const std::optional<double> wide = set;
        ASSERT_TRUE(wide.has_value());
        EXPECT_EQ(std::bit_cast<std::uint64_t>(*wide), std::bit_cast<std::uint64_t>(value));
    }
    EXPECT_FALSE(OptionalDouble(std::nullopt).has_value());
}

TEST(DiagnoseNeedle, TimestampsAreSecondsSinceTheEpoch) {
    EXPECT_EQ(timestamp_of(" [2025-03-11 17:04:50] iteration 10/ 100 |"), 1741712690);
    EXPECT_EQ(timestamp_of("slurmstepd: error: *** JOB 1 ON n1 CANCELLED AT 2025-03-11T17:04:50 DUE TO TIME LIMIT ***"), 1741712690);
    EXPECT_EQ(timestamp_of("2024-02-29T00:00:00.123456789Z trainer: step 1"), 1709164800);
    EXPECT_FALSE(timestamp_of("forward-backward ....: 2612.19").has_value());
    EXPECT_FALSE(timestamp_of("2025-13-11 17:04:50").has_value());
    EXPECT_FALSE(timestamp_of("").has_value());
}

}  // namespace
}  // namespace attune::diagnose::detail
