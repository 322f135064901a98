#pragma once
// When to try an LLM request again and how long to wait first: exponential back-off with jitter,
// or what the server asked for in Retry-After, whichever is longer.

#include <attune/llm/config.hpp>
#include <attune/llm/transport.hpp>

#include <chrono>
#include <optional>

namespace attune::llm {

/// 408, 409, 429 and every 5xx (Anthropic's 529 "overloaded" included) are worth another try.
bool retryable_status(long status);

/// The wait a response asks for: `retry-after-ms` (milliseconds) or `retry-after` (seconds,
/// possibly fractional). An HTTP-date or garbage reads as no request.
std::optional<std::chrono::milliseconds> requested_wait(const HttpResponse& response);

/// The back-off before retry number `retry` (0 for the first): base × 2^retry capped at
/// `backoff_max`, scaled by `jitter` in [0.5, 1] so that clients that failed together spread out.
std::chrono::milliseconds backoff_delay(const Config& config, int retry, double jitter);

}  // namespace attune::llm
