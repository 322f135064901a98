#include "dialects.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace attune::diagnose::detail {
namespace {

constexpr double k_mib = 1.0 / 1024.0;
constexpr double k_bytes = 1.0 / (1024.0 * 1024.0 * 1024.0);

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Parses a number at the start of `text`, dropping thousands separators; `consumed` gets its length.
std::optional<double> leading_number(std::string_view text, std::size_t& consumed) {
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
            return std::nullopt;
        }
        consumed = i + 3;
        const double special = word == "nan" ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
        return negative ? -special : special;
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
    double value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + used, value);
    if (used == 0 || error != std::errc{} || end == digits.data()) {
        return std::nullopt;
    }
    consumed = i;
    return negative ? -value : value;
}

}  // namespace

std::size_t find(std::string_view text, std::string_view needle) {
    const void* at = ::memmem(text.data(), text.size(), needle.data(), needle.size());
    return at == nullptr ? std::string_view::npos : static_cast<std::size_t>(static_cast<const char*>(at) - text.data());
}

std::optional<double> number_after(std::string_view line, std::string_view key, Part part) {
    const auto at = find(line, key);
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    auto rest = line.substr(at + key.size());
    const auto skip = rest.find_first_not_of(" :=\t'\"");
    if (skip == std::string_view::npos) {
        return std::nullopt;
    }
    rest.remove_prefix(skip);
    std::size_t consumed = 0;
    auto value = leading_number(rest, consumed);
    if (value && part == Part::parenthesised_if_any && consumed < rest.size() && rest[consumed] == '(') {
        std::size_t inner = 0;
        if (auto per_gpu = leading_number(rest.substr(consumed + 1), inner)) {
            return per_gpu;
        }
    }
    return value;
}

std::optional<long long> bar_counter(std::string_view line) {
    // The counter is the last `N/TOTAL [` on the line (a '\r' piece holds one bar update).
    const auto bracket = line.rfind(" [");
    if (bracket == std::string_view::npos) {
        return std::nullopt;
    }
    const auto slash = line.rfind('/', bracket);
    if (slash == std::string_view::npos || slash == 0 || !is_digit(line[slash - 1]) || !is_digit(line[slash + 1])) {
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

std::optional<int> line_rank(std::string_view line) {
    int rank = 0;
    if (const auto at = find(line, "[rank"); at != std::string_view::npos && at + 5 < line.size() && is_digit(line[at + 5])) {
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
        {.name = "deepspeed",
         .anchors = {"global_step="},
         .step_key = "global_step=",
         .fields = {{"MaxMemAllocated=", Field::memory}},
         .markers = {"deepspeed", "DeepSpeed"}},
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
