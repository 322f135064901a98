#include <attune/llm/retry.hpp>

#include <attune/util/strings.hpp>

#include <algorithm>
#include <cmath>

namespace attune::llm {

bool retryable_status(long status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

std::optional<std::chrono::milliseconds> requested_wait(const HttpResponse& response) {
    using std::chrono::milliseconds;
    const auto read = [](const std::string& text, double unit_ms) -> std::optional<milliseconds> {
        if (text.empty()) return std::nullopt;
        const auto value = util::parse_number(util::trim(text));
        if (!value || !std::isfinite(*value) || *value < 0) return std::nullopt;
        return milliseconds(static_cast<long long>(std::ceil(*value * unit_ms)));
    };
    if (auto wait = read(response.header("retry-after-ms"), 1.0)) return wait;
    return read(response.header("retry-after"), 1000.0);
}

std::chrono::milliseconds backoff_delay(const Config& config, int retry, double jitter) {
    const double base = static_cast<double>(config.backoff_base.count());
    const double cap = static_cast<double>(config.backoff_max.count());
    const double exponential = std::min(cap, base * std::pow(2.0, std::clamp(retry, 0, 30)));
    return std::chrono::milliseconds(static_cast<long long>(exponential * std::clamp(jitter, 0.5, 1.0)));
}

}  // namespace attune::llm
