#pragma once
// How attune reaches an LLM: which provider and model, which endpoint, and the limits on time,
// retries, calls and tokens. Built from `--llm PROVIDER:MODEL` and `--llm-url URL`; credentials are
// NOT here: make_client reads them from the environment, so a Config can be logged or journaled.

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace attune::llm {

enum class Provider { openai, anthropic, bedrock };

/// "openai", "anthropic", "bedrock".
const char* to_string(Provider provider);

struct Config {
    Provider provider = Provider::openai;
    std::string model;
    /// The base URL as the provider's own SDK takes it; empty means the provider's public endpoint.
    std::string base_url;
    std::chrono::milliseconds timeout{std::chrono::seconds(120)};  ///< per HTTP attempt
    int max_retries = 4;                    ///< extra attempts after the first, on 429/5xx/timeouts
    std::chrono::milliseconds backoff_base{1000};  ///< first back-off; doubles per retry, with jitter
    std::chrono::milliseconds backoff_max{std::chrono::seconds(60)};
    std::chrono::milliseconds retry_after_max{std::chrono::seconds(300)};  ///< longer waits fail
    int max_calls = 500;                    ///< chat() calls allowed over the client's life
    long max_tokens = 5'000'000;            ///< input + output tokens allowed over the client's life
    int max_output_tokens = 4096;           ///< asked of the provider per reply
    std::size_t max_response_bytes = 8u << 20u;  ///< a bigger body is an error, not a crash
};

/// Parses `PROVIDER:MODEL` (and an optional `--llm-url`) into a Config with default limits.
/// Throws InputError naming the value and the accepted forms.
Config parse_llm_option(std::string_view spec, std::string_view url = {});

/// The URL chat() posts to: base URL (or the default) plus the provider's path.
/// `region` only matters for Bedrock's default endpoint.
std::string endpoint_url(const Config& config, std::string_view region = {});

}  // namespace attune::llm
