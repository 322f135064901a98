#include "dialects.hpp"

#include <array>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attune::diagnose::detail {
namespace {

constexpr double k_mib = 1.0 / 1024.0;
constexpr double k_bytes = 1.0 / (1024.0 * 1024.0 * 1024.0);

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Clinger's fast path: `D+[.D*][(e|E)[+-]D+]` with at most 15 significant digits and a decimal exponent
// within +-22 is an exact integer times or over an exact power of ten, and one IEEE multiplication or
// division rounds it correctly: the same double as from_chars, several times faster. Anything else
// (more digits, a leading '.', a trailing partial number) is nullopt and goes to from_chars.
std::optional<double> exact_decimal(std::string_view text) {
    static constexpr std::array<double, 23> k_powers = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    constexpr int k_max_digits = 15;
    std::uint64_t mantissa = 0;
    int digits = 0;
    int exponent = 0;
    std::size_t i = 0;
    const auto take_digit = [&] {
        mantissa = mantissa * 10 + static_cast<std::uint64_t>(text[i] - '0');
        ++digits;
        ++i;
    };
    while (i < text.size() && is_digit(text[i])) {
        take_digit();
    }
    if (digits == 0) {
        return std::nullopt;
    }
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && is_digit(text[i])) {
            take_digit();
            --exponent;
        }
    }
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        const bool negative = i < text.size() && text[i] == '-';
        i += i < text.size() && (text[i] == '-' || text[i] == '+') ? 1 : 0;
        int power = 0;
        int power_digits = 0;
        while (i < text.size() && is_digit(text[i]) && power_digits < 4) {
            power = power * 10 + (text[i] - '0');
            ++power_digits;
            ++i;
        }
        if (power_digits == 0) {
            return std::nullopt;
        }
        exponent += negative ? -power : power;
    }
    if (i != text.size() || digits > k_max_digits || exponent < -22 || exponent > 22) {
        return std::nullopt;
    }
    const auto value = static_cast<double>(mantissa);
    return exponent >= 0 ? value * k_powers[static_cast<std::size_t>(exponent)] : value / k_powers[static_cast<std::size_t>(-exponent)];
}

// Whether the loop in leading_number would go on reading at text[i] (a digit, a dot, a thousands
// separator, an exponent).
bool continues_number(std::string_view text, std::size_t i) {
    if (i >= text.size()) {
        return false;
    }
    const char c = text[i];
    const bool next_digit = i + 1 < text.size() && is_digit(text[i + 1]);
    return is_digit(c) || c == '.' || (c == ',' && next_digit) ||
           ((c == 'e' || c == 'E') && (next_digit || (i + 1 < text.size() && (text[i + 1] == '-' || text[i + 1] == '+'))));
}

// The common case of leading_number in one pass without copying: `D+[.D*][(e|E)[+-]D+]` that ends
// where leading_number would stop, with at most 15 digits and a decimal exponent within +-22, read
// by Clinger's fast path (as exact_decimal). false sends the text to the general path (separators,
// a leading '.', many digits), which gives the same value for these. The hot helpers return a bool
// and write the value: an optional<double> return went through the stack in a way that stalled
// store forwarding twice per number (perf, about a quarter of the parse time on the bench log).
bool plain_decimal(std::string_view text, std::size_t& consumed, double& result) {
    static constexpr std::array<double, 23> k_powers = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                                        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const char* const begin = text.data();
    const char* const end = begin + text.size();
    const char* at = begin;
    std::uint64_t mantissa = 0;
    while (at != end && is_digit(*at)) {
        mantissa = mantissa * 10 + static_cast<std::uint64_t>(*at - '0');
        ++at;
    }
    const auto whole_digits = at - begin;
    if (whole_digits == 0) {
        return false;
    }
    int exponent = 0;
    if (at != end && *at == '.') {
        ++at;
        const char* const fraction = at;
        while (at != end && is_digit(*at)) {
            mantissa = mantissa * 10 + static_cast<std::uint64_t>(*at - '0');
            ++at;
        }
        exponent = -static_cast<int>(at - fraction);
    }
    if (whole_digits - exponent > 15) {
        return false;
    }
    if (at != end && (*at == 'e' || *at == 'E')) {
        const char* power_at = at + 1;
        const bool negative = power_at != end && *power_at == '-';
        power_at += power_at != end && (*power_at == '-' || *power_at == '+') ? 1 : 0;
        int power = 0;
        const char* const power_begin = power_at;
        while (power_at != end && is_digit(*power_at) && power_at - power_begin < 4) {
            power = power * 10 + (*power_at - '0');
            ++power_at;
        }
        if (power_at == power_begin) {
            return false;
        }
        exponent += negative ? -power : power;
        at = power_at;
    }
    if (continues_number(text, static_cast<std::size_t>(at - begin)) || exponent < -22 || exponent > 22) {
        return false;
    }
    consumed = static_cast<std::size_t>(at - begin);
    const auto value = static_cast<double>(mantissa);
    result = exponent >= 0 ? value * k_powers[static_cast<std::size_t>(exponent)] : value / k_powers[static_cast<std::size_t>(-exponent)];
    return true;
}

// Parses a number at the start of `text` into `result`, dropping thousands separators; `consumed`
// gets its length. false (and neither written) when no number starts there.
bool leading_number(std::string_view text, std::size_t& consumed, double& result) {
    std::size_t i = 0;
    bool negative = false;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
        negative = text[i] == '-';
        ++i;
    }
    if (i + 3 <= text.size() && !is_digit(text[i]) && text[i] != '.') {
        const auto lower = [&](std::size_t k) { return static_cast<char>(std::tolower(static_cast<unsigned char>(text[k]))); };
        const std::array letters{lower(i), lower(i + 1), lower(i + 2)};
        const std::string_view word(letters.data(), letters.size());
        if (word != "nan" && word != "inf") {
            return false;
        }
        consumed = i + 3;
        const double special = word == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
        result = negative ? -special : special;
        return true;
    }
    if (double plain = 0; plain_decimal(text.substr(i), consumed, plain)) {
        consumed += i;
        result = negative ? -plain : plain;
        return true;
    }
    // Digits are copied without thousands separators into a small buffer for from_chars.
    std::array<char, 64> digits{};
    std::size_t used = 0;
    const auto keep = [&](char c) {
        if (used < digits.size()) {
            digits[used++] = c;
        }
    };
    while (i < text.size()) {
        const char c = text[i];
        if (is_digit(c) || c == '.') {
            keep(c);
        } else if (c == ',' && i + 1 < text.size() && is_digit(text[i + 1]) && used > 0) {
            // a thousands separator is followed by digits; a list comma by a space
        } else if ((c == 'e' || c == 'E') && used > 0 && i + 1 < text.size() &&
                   (is_digit(text[i + 1]) || text[i + 1] == '-' || text[i + 1] == '+')) {
            keep('e');
            keep(text[i + 1]);
            ++i;
        } else {
            break;
        }
        ++i;
    }
    if (const auto exact = exact_decimal(std::string_view(digits.data(), used))) {
        consumed = i;
        result = negative ? -*exact : *exact;
        return true;
    }
    double value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + used, value);
    if (used == 0 || error != std::errc{} || end == digits.data()) {
        return false;
    }
    consumed = i;
    result = negative ? -value : value;
    return true;
}

}  // namespace

namespace {

// The SIMD part of Needle::find_in: tests 32 candidate starts at a time for the two rare bytes
// (`needle[first_at]` and `needle[second_at]`) and compares the whole needle where both match. The
// last block is moved back to end at `last_start` (starts already tested are masked off), so no
// byte-by-byte tail is left; needs last_start + 1 >= 32. Without AVX2 (or on shorter text)
// find_in tests the two bytes one start at a time.
template <typename Word>
Word load(const char* at) {
    Word word = 0;
    std::memcpy(&word, at, sizeof word);
    return word;
}

// Whether the needle's bytes stand at `at`, compared a word at a time (the last word overlapping
// the one before): a memcmp call cost more than the comparison on keys this short (perf: 4-5% of
// the parse). `head`: the needle's first 8 bytes as a word (0 for a shorter needle).
bool equal_at(const char* at, std::string_view needle, std::uint64_t head) {
    const std::size_t size = needle.size();
    const char* const text = needle.data();
    if (size >= 8) {
        // head is little-endian (Needle::head_of); elsewhere the needle's own first word is loaded
        const auto first = std::endian::native == std::endian::little ? head : load<std::uint64_t>(text);
        if (load<std::uint64_t>(at) != first) {
            return false;
        }
        for (std::size_t offset = 8; offset + 8 < size; offset += 8) {
            if (load<std::uint64_t>(at + offset) != load<std::uint64_t>(text + offset)) {
                return false;
            }
        }
        return load<std::uint64_t>(at + size - 8) == load<std::uint64_t>(text + size - 8);
    }
    if (size >= 4) {
        return load<std::uint32_t>(at) == load<std::uint32_t>(text) && load<std::uint32_t>(at + size - 4) == load<std::uint32_t>(text + size - 4);
    }
    for (std::size_t i = 0; i < size; ++i) {
        if (at[i] != text[i]) {
            return false;
        }
    }
    return true;
}

#if defined(__x86_64__)
std::size_t verify(const char* data, std::size_t start, std::uint64_t mask, std::string_view needle, std::uint64_t head) {
    while (mask != 0) {
        const auto offset = start + static_cast<std::size_t>(__builtin_ctzll(mask));
        if (equal_at(data + offset, needle, head)) {
            return offset;
        }
        mask &= mask - 1;
    }
    return std::string_view::npos;
}

__attribute__((target("avx2"))) std::size_t find_avx2(const char* data, std::size_t last_start, std::string_view needle,
                                                      std::size_t first_at, std::size_t second_at, std::uint64_t head) {
    constexpr std::size_t k_width = 32;
    const __m256i want_first = _mm256_set1_epi8(needle[first_at]);
    const __m256i want_second = _mm256_set1_epi8(needle[second_at]);
    std::size_t start = 0;
    for (;; start += k_width) {
        const bool last = start + k_width > last_start;
        const std::size_t at = last ? last_start + 1 - k_width : start;
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + at + first_at));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + at + second_at));
        auto mask = static_cast<std::uint64_t>(
            static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_and_si256(_mm256_cmpeq_epi8(a, want_first), _mm256_cmpeq_epi8(b, want_second)))));
        if (last) {
            mask &= ~std::uint64_t{0} << (start - at);
        }
        if (mask != 0) {
            if (const auto found = verify(data, at, mask, needle, head); found != std::string_view::npos) {
                return found;
            }
        }
        if (last) {
            return std::string_view::npos;
        }
    }
}

const bool k_has_avx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

std::size_t Needle::find_in(std::string_view text) const {
    const std::size_t length = m_text.size();
    if (length == 0) {
        return 0;
    }
    if (text.size() < length) {
        return std::string_view::npos;
    }
    const char* const data = text.data();
    const std::size_t last_start = text.size() - length;
#if defined(__x86_64__)
    if (k_has_avx2 && last_start >= 31) {
        return find_avx2(data, last_start, m_text, m_rare, m_rare2, m_head);
    }
#endif
    const char first = m_text[m_rare];
    const char second = m_text[m_rare2];
    for (std::size_t start = 0; start <= last_start; ++start) {
        if (data[start + m_rare] == first && data[start + m_rare2] == second && equal_at(data + start, m_text, m_head)) {
            return start;
        }
    }
    return std::string_view::npos;
}

bool read_number_after(std::string_view line, const Needle& key, Part part, double& value) {
    const auto at = find(line, key);
    if (at == std::string_view::npos) {
        return false;
    }
    auto rest = line.substr(at + key.size());
    // The separators between a key and its value: a loop, as string_view::find_first_not_of calls
    // memchr on the set for every byte.
    std::size_t skip = 0;
    while (skip < rest.size() && (rest[skip] == ' ' || rest[skip] == ':' || rest[skip] == '=' || rest[skip] == '\t' ||
                                  rest[skip] == '\'' || rest[skip] == '"')) {
        ++skip;
    }
    if (skip == rest.size()) {
        return false;
    }
    rest.remove_prefix(skip);
    std::size_t consumed = 0;
    if (!leading_number(rest, consumed, value)) {
        return false;
    }
    if (part == Part::parenthesised_if_any && consumed < rest.size() && rest[consumed] == '(') {
        std::size_t inner = 0;
        if (double per_gpu = 0; leading_number(rest.substr(consumed + 1), inner, per_gpu)) {
            value = per_gpu;
        }
    }
    return true;
}

std::optional<double> number_after(std::string_view line, const Needle& key, Part part) {
    double value = 0;
    return read_number_after(line, key, part, value) ? std::optional<double>(value) : std::nullopt;
}

std::optional<long long> bar_counter(std::string_view line) {
    // The counter is the last `N/TOTAL [` on the line (a '\r' piece holds one bar update).
    const auto bracket = line.rfind(" [");
    if (bracket == std::string_view::npos) {
        return std::nullopt;
    }
    const auto slash = line.rfind('/', bracket);
    // The total is '?' when the epoch length is unknown (an iterable dataset).
    if (slash == std::string_view::npos || slash == 0 || !is_digit(line[slash - 1]) ||
        (!is_digit(line[slash + 1]) && line[slash + 1] != '?')) {
        return std::nullopt;
    }
    auto begin = slash;
    while (begin > 0 && is_digit(line[begin - 1])) {
        --begin;
    }
    long long value = 0;
    std::from_chars(line.data() + begin, line.data() + slash, value);
    return value;
}

std::string_view without_ansi(std::string_view line, std::string& buffer) {
    buffer.clear();
    for (std::size_t i = 0; i < line.size(); ++i) {
        if (line[i] != '\x1b') {
            buffer += line[i];
            continue;
        }
        if (i + 1 < line.size() && line[i + 1] == '[') {
            i += 2;
            while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) {
                ++i;
            }
        }
    }
    return buffer;
}

std::optional<long long> printed_step(const DialectSpec& spec, std::string_view line) {
    if (spec.step_key.empty()) {
        return bar_counter(line);
    }
    double value = 0;
    if (!read_number_after(line, spec.step_key, Part::value, value) || !std::isfinite(value)) {
        return std::nullopt;
    }
    return static_cast<long long>(value);
}

namespace {

// Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm; proleptic Gregorian).
long long days_from_civil(long long year, unsigned month, unsigned day) {
    year -= month <= 2 ? 1 : 0;
    const long long era = (year >= 0 ? year : year - 399) / 400;
    const auto year_of_era = static_cast<unsigned>(year - era * 400);
    const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + static_cast<long long>(day_of_era) - 719468;
}

// The value of `count` digits at `text`, or -1 when one is not a digit.
int digits_at(const char* text, int count) {
    int value = 0;
    for (int i = 0; i < count; ++i) {
        if (!is_digit(text[i])) {
            return -1;
        }
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

}  // namespace

std::optional<long long> timestamp_of(std::string_view line) {
    // "YYYY-MM-DD HH:MM:SS": the first '-' sits 4 bytes in, the seconds end 19 bytes in.
    constexpr std::size_t k_length = 19;
    if (line.size() < k_length) {
        return std::nullopt;
    }
    const char* const begin = line.data();
    const char* const last_dash = begin + (line.size() - k_length) + 4;  // the last place a stamp's first '-' can be
    for (const char* dash = begin + 4; dash <= last_dash; ++dash) {
        dash = static_cast<const char*>(std::memchr(dash, '-', static_cast<std::size_t>(last_dash - dash) + 1));
        if (dash == nullptr) {
            return std::nullopt;
        }
        const char* at = dash - 4;
        if (at[7] != '-' || (at[10] != ' ' && at[10] != 'T') || at[13] != ':' || at[16] != ':') {
            continue;
        }
        const int year = digits_at(at, 4);
        const int month = digits_at(at + 5, 2);
        const int day = digits_at(at + 8, 2);
        const int hour = digits_at(at + 11, 2);
        const int minute = digits_at(at + 14, 2);
        const int second = digits_at(at + 17, 2);
        if (year < 1970 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
            minute > 59 || second < 0 || second > 60) {
            continue;
        }
        return days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + hour * 3600LL +
               minute * 60LL + second;
    }
    return std::nullopt;
}

std::optional<int> line_rank(std::string_view line) {
    int rank = 0;
    static constexpr Needle k_rank_tag("[rank");
    if (const auto at = find(line, k_rank_tag); at != std::string_view::npos && at + 5 < line.size() && is_digit(line[at + 5])) {
        std::from_chars(line.data() + at + 5, line.data() + line.size(), rank);
        return rank;
    }
    const auto first = line.find_first_not_of(' ');
    if (first == std::string_view::npos || !is_digit(line[first])) {
        return std::nullopt;
    }
    const auto [end, error] = std::from_chars(line.data() + first, line.data() + line.size(), rank);
    if (error == std::errc{} && end + 1 < line.data() + line.size() && end[0] == ':' && end[1] == ' ') {
        return rank;
    }
    return std::nullopt;
}

const std::vector<DialectSpec>& dialect_specs() {
    static const std::vector<DialectSpec> specs = {
        {.name = "megatron",
         .anchors = {"elapsed time per iteration"},
         .step_key = "iteration ",
         .fields = {{"elapsed time per iteration (ms)", Field::step_time, 0.001},
                    {"elapsed time per iteration (s)", Field::step_time},
                    {"throughput per GPU (TFLOP/s/GPU)", Field::tflops},
                    {"TFLOPs", Field::tflops},
                    {"lm loss", Field::loss},
                    {"grad norm", Field::grad_norm}},
         .attachments = {{"Effective Tera Flops per GPU", {{"Effective Tera Flops per GPU", Field::tflops}}},
                         {"memory (MB)", {{"max allocated", Field::memory, k_mib}}}},
         .markers = {"Megatron", "megatron", "> building GPT model", "[before the start of training step]"},
         .chatter = {" .....", "max time across ranks"}},
        // SageMaker HyperPod recipes (the HyperPod training adapter on Lightning, SMP v2): the model
        // logs "Step Time", "TFLOPS/GPU", "Loss/train" and "Norms/grad_norm" to the progress bar
        // postfix; the bar counter is the step. Before nemo: the adapter's own lines say "nemo".
        {.name = "hyperpod",
         .anchors = {"Loss/train="},
         .step_from_bar = true,
         .excludes = {"Validation"},
         .fields = {{"Step Time=", Field::step_time},
                    {"TFLOPS/GPU=", Field::tflops},
                    {"Loss/train=", Field::loss},
                    {"Norms/grad_norm=", Field::grad_norm}},
         .markers = {"hyperpod", "HyperPod"}},
        {.name = "nemo",
         .anchors = {"Training epoch", "global_step"},
         .step_key = "global_step",
         .fields = {{"train_step_timing in s", Field::step_time},
                    {"reduced_train_loss", Field::loss},
                    {"TFLOPS_per_GPU", Field::tflops},
                    {"max_memory_allocated", Field::memory, k_bytes}},
         .markers = {"nemo", "NeMo", "PreemptionCallback"}},
        {.name = "nemo",
         .anchors = {"train_step_timing in s="},
         .step_from_bar = true,
         .excludes = {"Validation"},
         .fields = {{"train_step_timing in s", Field::step_time}, {"reduced_train_loss", Field::loss}}},
        {.name = "maxtext",
         .anchors = {"completed step:"},
         .step_key = "completed step:",
         .fields = {{"seconds:", Field::step_time},
                    {"TFLOP/s/device:", Field::tflops},
                    {"Tokens/s/device:", Field::tokens},
                    {"loss:", Field::loss}},
         .markers = {"MaxText", "maxtext", "XlaRuntimeError", "TPU"}},
        {.name = "torchtitan",
         .anchors = {"INFO - step:"},
         .step_key = "INFO - step:",
         .fields = {{"loss:", Field::loss},
                    {"grad_norm:", Field::grad_norm},
                    {"memory:", Field::memory},
                    {"tps:", Field::tokens},
                    {"wps:", Field::tokens},
                    {"tflops:", Field::tflops}},
         .markers = {"[titan]", "torchtitan"}},
        {.name = "automodel",
         .anchors = {"| epoch "},
         .step_key = "step ",
         .excludes = {"[val]"},
         .fields = {{"loss ", Field::loss},
                    {"grad_norm ", Field::grad_norm},
                    {"| mem", Field::memory},
                    {"tps ", Field::tokens, 1.0, Part::parenthesised_if_any}},
         .markers = {"automodel", "AutoModel", "train_ft"}},
        {.name = "deepspeed",
         .anchors = {"|act_loss:"},
         .step_key = "|step:",
         .fields = {{"act_loss:", Field::loss}},
         .attachments = {{"E2E latency=", {{"E2E latency=", Field::step_time}}}}},
        // DeepSpeed-Chat's loop (dschat): every rank prints its loss each step, rank 0 then prints
        // the step's latency and TFLOP/s (utils/perf.py print_throughput); the engine's timer
        // lines (below) still give the memory.
        {.name = "deepspeed",
         .anchors = {"Step: ", ", Rank: ", "loss = "},
         .step_key = "Step: ",
         .fields = {{"loss = tensor(", Field::loss}, {"loss = ", Field::loss}},
         .attachments = {{"Latency: ", {{"Latency: ", Field::step_time}, {"TFLOPs: ", Field::tflops}}}}},
        {.name = "deepspeed",
         .anchors = {"global_step="},
         .step_key = "global_step=",
         .fields = {{"MaxMemAllocated=", Field::memory}},
         .markers = {"deepspeed", "DeepSpeed"},
         .engine = true},
        {.name = "hf",
         .anchors = {"{'loss'"},
         .excludes = {"eval_loss", "train_runtime"},
         .fields = {{"'loss'", Field::loss}, {"'grad_norm'", Field::grad_norm}},
         .markers = {"***** Running training *****", "transformers"}},
        {.name = "generic",
         .anchors = {"| dt:"},
         .step_key = "step ",
         .fields = {{"loss:", Field::loss}, {"dt:", Field::step_time, 0.001}}},
        {.name = "generic",
         .anchors = {"Epoch: [", "max mem:"},
         .step_key = "]  [",
         .fields = {{"loss:", Field::loss}, {"time:", Field::step_time}, {"max mem:", Field::memory, k_mib}}},
        {.name = "generic",
         .anchors = {"{\"", "\"step\""},
         .step_key = "\"step\"",
         .excludes = {"eval_loss"},
         .fields = {{"\"loss\"", Field::loss},
                    {"\"step_time_s\"", Field::step_time},
                    {"\"tokens_per_sec_per_gpu\"", Field::tokens},
                    {"\"tflops_per_gpu\"", Field::tflops},
                    {"\"mem_peak_gib\"", Field::memory}}},
    };
    return specs;
}

}  // namespace attune::diagnose::detail
