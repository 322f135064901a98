#pragma once
// The one interface every LLM-backed component talks to, whatever the provider. The real client
// speaks HTTP through libcurl; tests and replay use scripted clients behind the same interface.

#include <attune/core/error.hpp>
#include <attune/llm/config.hpp>
#include <attune/llm/transport.hpp>
#include <attune/llm/types.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attune::llm {

/// Why a chat() call failed. The caller decides: ask again, fall back to rules, or stop.
enum class FailureKind {
    unreachable,    ///< no connection to the endpoint (after retries)
    timeout,        ///< every attempt timed out
    http_status,    ///< a non-retryable HTTP status, or a retryable one after the last retry
    bad_response,   ///< a 2xx body that is not the provider's JSON, or too large
    cap_exceeded,   ///< the call or token cap for this client is spent; no request was sent
};

const char* to_string(FailureKind kind);

/// A chat() call that produced no usable reply. A RuntimeFailure (exit 1) if nobody catches it.
class LlmError : public RuntimeFailure {
public:
    LlmError(FailureKind kind, const std::string& message) : RuntimeFailure(message), m_kind(kind) {}
    [[nodiscard]] FailureKind kind() const { return m_kind; }

private:
    FailureKind m_kind;
};

/// A chat model with tools.
class Client {
public:
    virtual ~Client() = default;
    /// Sends the conversation and the tools offered; returns the model's reply. Tool calls in the
    /// reply are parsed but untrusted (see ToolCall::error). Throws LlmError.
    virtual Reply chat(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools) = 0;
    /// The exchanges recorded since the last call (one per chat() that sent a request, failed
    /// ones included), for the journal; the client forgets them.
    virtual std::vector<Exchange> take_exchanges() = 0;
    /// Tokens counted so far, over every chat() call.
    [[nodiscard]] virtual Usage usage() const = 0;
    /// chat() calls that sent a request so far.
    [[nodiscard]] virtual int calls() const = 0;
};

/// What make_client uses to reach the outside world; tests replace any of them.
struct Environment {
    /// Reads an environment variable; empty optional when unset. Default: std::getenv.
    std::function<std::optional<std::string>(const std::string&)> getenv;
    /// Sleeps between retries. Default: std::this_thread::sleep_for.
    std::function<void(std::chrono::milliseconds)> sleep;
    /// The wall clock, for SigV4's x-amz-date. Default: std::chrono::system_clock::now.
    std::function<std::chrono::system_clock::time_point()> now;
    /// The HTTP transport. Default: libcurl.
    std::shared_ptr<Transport> transport;
    /// Seeds the back-off jitter; 0 picks a random seed.
    unsigned jitter_seed = 0;
};

/// The HTTP client for `config.provider`. Reads the provider's credentials from the environment
/// (OPENAI_API_KEY, optional; ANTHROPIC_API_KEY; AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
/// AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION) and throws InputError naming what is missing.
std::unique_ptr<Client> make_client(const Config& config, Environment environment = {});

}  // namespace attune::llm
