// The HTTP client behind llm::Client: one request per attempt, retries with back-off, caps, and
// an Exchange per chat() for the journal. Credentials live only in this file's objects and in the
// headers of the request being sent; nothing that is recorded or reported ever holds them.

#include <attune/llm/client.hpp>

#include <attune/llm/retry.hpp>
#include <attune/llm/sigv4.hpp>
#include <attune/llm/wire.hpp>

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <random>
#include <thread>

namespace attune::llm {

namespace {

using Clock = std::chrono::steady_clock;

// The largest response body an Exchange keeps when it is not JSON (the journal stays readable).
constexpr std::size_t k_max_recorded_text = 64U << 10U;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct UrlParts {
    std::string scheme_and_authority;  // "https://host:port", without user info
    std::string host;                  // "host:port" as the Host header carries it
    std::string path;                  // "/..." as sent
    std::string query;                 // after '?', as sent
};

UrlParts split_url(const std::string& url) {
    UrlParts parts;
    const auto scheme_end = url.find("://");
    if (scheme_end == std::string::npos) return parts;  // config.cpp admits http(s) URLs only
    const std::string scheme = url.substr(0, scheme_end + 3);
    const std::string rest = url.substr(scheme_end + 3);
    const auto path_start = rest.find_first_of("/?");
    std::string authority = rest.substr(0, path_start);
    if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
    parts.host = authority;
    parts.scheme_and_authority = scheme + authority;
    const std::string target = path_start == std::string::npos ? "/" : rest.substr(path_start);
    const auto question = target.find('?');
    parts.path = target.substr(0, question);
    if (parts.path.empty()) parts.path = "/";
    if (question != std::string::npos) parts.query = target.substr(question + 1);
    return parts;
}

// The URL as recorded and reported: user info (user:password@) never leaves this process.
std::string redacted(const std::string& url) {
    const auto parts = split_url(url);
    return parts.scheme_and_authority + parts.path + (parts.query.empty() ? "" : "?" + parts.query);
}

std::string amz_date(std::chrono::system_clock::time_point now) {
    const std::time_t time = std::chrono::system_clock::to_time_t(now);
    std::tm utc{};
    gmtime_r(&time, &utc);
    char buffer[20];
    std::strftime(buffer, sizeof buffer, "%Y%m%dT%H%M%SZ", &utc);
    return buffer;
}

// bedrock-runtime.us-west-2.amazonaws.com (and -fips) names its region; a custom URL may not.
std::string region_from_host(const std::string& host) {
    for (const std::string prefix : {"bedrock-runtime.", "bedrock-runtime-fips."}) {
        if (!host.starts_with(prefix)) continue;
        const auto rest = host.substr(prefix.size());
        const auto dot = rest.find('.');
        if (dot != std::string::npos) return rest.substr(0, dot);
    }
    return {};
}

struct Credentials {
    std::string api_key;   // OpenAI, Anthropic
    sigv4::Credentials aws;
    std::string region;    // Bedrock
};

std::optional<std::string> nonempty(const Environment& environment, const std::string& name) {
    auto value = environment.getenv(name);
    if (value && value->empty()) value.reset();
    return value;
}

std::string required(const Environment& environment, const std::string& name, const char* provider) {
    auto value = nonempty(environment, name);
    if (!value) throw InputError(fmt::format("--llm {}: the environment variable {} is not set; attune reads {} "
                                             "credentials only from the environment",
                                             provider, name, provider));
    return *value;
}

Credentials read_credentials(const Config& config, const Environment& environment) {
    Credentials out;
    switch (config.provider) {
    case Provider::openai:
        // Local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) usually need no key.
        out.api_key = nonempty(environment, "OPENAI_API_KEY").value_or("");
        break;
    case Provider::anthropic: out.api_key = required(environment, "ANTHROPIC_API_KEY", "anthropic"); break;
    case Provider::bedrock: {
        out.aws.access_key_id = required(environment, "AWS_ACCESS_KEY_ID", "bedrock");
        out.aws.secret_access_key = required(environment, "AWS_SECRET_ACCESS_KEY", "bedrock");
        out.aws.session_token = nonempty(environment, "AWS_SESSION_TOKEN").value_or("");
        out.region = nonempty(environment, "AWS_REGION")
                         .value_or(nonempty(environment, "AWS_DEFAULT_REGION")
                                       .value_or(region_from_host(split_url(config.base_url).host)));
        if (out.region.empty())
            throw InputError("--llm bedrock: no AWS region; set AWS_REGION (or AWS_DEFAULT_REGION), or give "
                             "--llm-url https://bedrock-runtime.REGION.amazonaws.com");
        break;
    }
    }
    return out;
}

Environment with_defaults(Environment environment) {
    if (!environment.getenv)
        environment.getenv = [](const std::string& name) -> std::optional<std::string> {
            const char* value = std::getenv(name.c_str());
            return value == nullptr ? std::nullopt : std::optional<std::string>(value);
        };
    if (!environment.sleep) environment.sleep = [](std::chrono::milliseconds wait) { std::this_thread::sleep_for(wait); };
    if (!environment.now) environment.now = [] { return std::chrono::system_clock::now(); };
    if (!environment.transport) environment.transport = make_curl_transport();
    return environment;
}

// What one attempt came to: a reply, a reason to retry (with the wait asked for), or a final error.
struct Outcome {
    std::optional<Reply> reply;
    bool retry = false;
    std::optional<std::chrono::milliseconds> requested;
    FailureKind kind = FailureKind::http_status;
    std::string error;
};

class HttpClient : public Client {
public:
    HttpClient(Config config, Environment environment)
        : m_config(std::move(config)), m_environment(with_defaults(std::move(environment))),
          m_credentials(read_credentials(m_config, m_environment)),
          m_url(endpoint_url(m_config, m_credentials.region)), m_shown_url(redacted(m_url)),
          m_rng(m_environment.jitter_seed != 0 ? m_environment.jitter_seed : std::random_device{}()) {}

    Reply chat(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools) override {
        check_caps();
        ++m_calls;
        Exchange exchange;
        exchange.provider = to_string(m_config.provider);
        exchange.model = m_config.model;
        exchange.url = m_shown_url;
        exchange.request = encode_request(m_config.provider, m_config.model, messages, tools, m_config.max_output_tokens);
        const auto started = Clock::now();
        try {
            Reply reply = send(exchange, tools);
            exchange.usage = reply.usage;
            m_usage += reply.usage;
            exchange.latency_s = seconds_since(started);
            m_exchanges.push_back(std::move(exchange));
            return reply;
        } catch (const LlmError& error) {
            exchange.error = error.what();
            exchange.latency_s = seconds_since(started);
            m_exchanges.push_back(std::move(exchange));
            throw;
        }
    }

    std::vector<Exchange> take_exchanges() override { return std::exchange(m_exchanges, {}); }
    [[nodiscard]] Usage usage() const override { return m_usage; }
    [[nodiscard]] int calls() const override { return m_calls; }

private:
    void check_caps() const {
        if (m_calls >= m_config.max_calls)
            throw LlmError(FailureKind::cap_exceeded,
                           fmt::format("the cap of {} LLM calls is spent; no request sent", m_config.max_calls));
        if (m_usage.total() >= m_config.max_tokens)
            throw LlmError(FailureKind::cap_exceeded,
                           fmt::format("the cap of {} LLM tokens is spent ({} used); no request sent",
                                       m_config.max_tokens, m_usage.total()));
    }

    Reply send(Exchange& exchange, const std::vector<ToolSpec>& tools) {
        const std::string body = exchange.request.dump();
        for (int attempt = 0;; ++attempt) {
            const auto started = Clock::now();
            const HttpResponse response = m_environment.transport->post(build_request(body));
            exchange.status = static_cast<int>(response.status);
            exchange.response = recorded_body(response);
            Outcome outcome = judge(response, tools);
            exchange.attempts.push_back({static_cast<int>(response.status), outcome.error, seconds_since(started), 0});
            if (outcome.reply) return std::move(*outcome.reply);
            if (!outcome.retry) throw LlmError(outcome.kind, outcome.error);
            if (attempt >= m_config.max_retries)
                throw LlmError(outcome.kind, fmt::format("{} (gave up after {} attempts)", outcome.error, attempt + 1));
            const auto wait = wait_before_retry(attempt, outcome);
            exchange.attempts.back().waited_s = std::chrono::duration<double>(wait).count();
            m_environment.sleep(wait);
        }
    }

    std::chrono::milliseconds wait_before_retry(int attempt, const Outcome& outcome) {
        const auto backoff = backoff_delay(m_config, attempt, std::uniform_real_distribution<double>(0.5, 1.0)(m_rng));
        if (!outcome.requested) return backoff;
        if (*outcome.requested > m_config.retry_after_max)
            throw LlmError(outcome.kind, fmt::format("{}; the server asks to wait {} s, longer than the {} s attempts "
                                                     "may wait",
                                                     outcome.error, outcome.requested->count() / 1000.0,
                                                     m_config.retry_after_max.count() / 1000.0));
        return std::max(backoff, *outcome.requested);
    }

    Outcome judge(const HttpResponse& response, const std::vector<ToolSpec>& tools) const {
        const std::string& url = redacted_url();
        switch (response.failure) {
        case TransportFailure::none: break;
        case TransportFailure::network:
            return {std::nullopt, true, std::nullopt, FailureKind::unreachable,
                    fmt::format("cannot reach the LLM endpoint {}: {}", url, response.failure_message)};
        case TransportFailure::timeout:
            return {std::nullopt, true, std::nullopt, FailureKind::timeout,
                    fmt::format("the LLM endpoint {} did not answer within {} s", url, m_config.timeout.count() / 1000.0)};
        case TransportFailure::too_large:
            return {std::nullopt, false, std::nullopt, FailureKind::bad_response,
                    fmt::format("the LLM endpoint {} sent a {}", url, response.failure_message)};
        case TransportFailure::other:
            return {std::nullopt, false, std::nullopt, FailureKind::unreachable,
                    fmt::format("request to the LLM endpoint {} failed: {}", url, response.failure_message)};
        }
        const auto json = nlohmann::json::parse(response.body, nullptr, false);
        if (response.status >= 200 && response.status < 300) return decode(json, tools);
        return http_error(response, json);
    }

    Outcome decode(const nlohmann::json& json, const std::vector<ToolSpec>& tools) const {
        if (json.is_discarded())
            return {std::nullopt, false, std::nullopt, FailureKind::bad_response,
                    fmt::format("the LLM endpoint {} answered with a body that is not JSON", redacted_url())};
        try {
            return {decode_response(m_config.provider, json, tools), false, std::nullopt, FailureKind::bad_response, {}};
        } catch (const LlmError& error) {
            return {std::nullopt, false, std::nullopt, FailureKind::bad_response,
                    fmt::format("{} (from {})", error.what(), redacted_url())};
        }
    }

    Outcome http_error(const HttpResponse& response, const nlohmann::json& json) const {
        std::string message = fmt::format("HTTP {} from the LLM endpoint {}", response.status, redacted_url());
        if (const auto detail = json.is_discarded() ? std::string() : error_message(json); !detail.empty())
            message += ": " + detail;
        if (response.status == 404 && m_config.provider == Provider::openai && !m_config.base_url.ends_with("/v1"))
            message += " (an OpenAI-compatible --llm-url usually ends in /v1; attune appends /chat/completions)";
        if (response.status == 401 || response.status == 403)
            message += fmt::format(" (check the credentials in the environment for {})", to_string(m_config.provider));
        return {std::nullopt, retryable_status(response.status), requested_wait(response), FailureKind::http_status,
                message};
    }

    HttpRequest build_request(const std::string& body) const {
        HttpRequest request;
        request.url = m_url;
        request.body = body;
        request.timeout = m_config.timeout;
        request.max_response_bytes = m_config.max_response_bytes;
        request.headers = {{"Content-Type", "application/json"}, {"Accept", "application/json"}};
        switch (m_config.provider) {
        case Provider::openai:
            if (!m_credentials.api_key.empty()) request.headers.emplace_back("Authorization", "Bearer " + m_credentials.api_key);
            break;
        case Provider::anthropic:
            request.headers.emplace_back("x-api-key", m_credentials.api_key);
            request.headers.emplace_back("anthropic-version", "2023-06-01");
            break;
        case Provider::bedrock: sign_for_bedrock(request); break;
        }
        return request;
    }

    // Signed afresh per attempt: x-amz-date must be near the time the request is sent.
    void sign_for_bedrock(HttpRequest& request) const {
        const auto parts = split_url(m_url);
        const std::string date = amz_date(m_environment.now());
        sigv4::Request to_sign{"POST", parts.path, parts.query, {}, request.body};
        to_sign.headers = {{"host", parts.host}, {"content-type", "application/json"}, {"x-amz-date", date}};
        if (!m_credentials.aws.session_token.empty())
            to_sign.headers.emplace_back("x-amz-security-token", m_credentials.aws.session_token);
        const auto signature = sigv4::sign(to_sign, m_credentials.aws, m_credentials.region, "bedrock", date);
        request.headers = {{"Host", parts.host}, {"Content-Type", "application/json"}, {"Accept", "application/json"},
                           {"X-Amz-Date", date}, {"Authorization", signature.authorization}};
        if (!m_credentials.aws.session_token.empty())
            request.headers.emplace_back("X-Amz-Security-Token", m_credentials.aws.session_token);
    }

    [[nodiscard]] const std::string& redacted_url() const { return m_shown_url; }

    static nlohmann::json recorded_body(const HttpResponse& response) {
        if (response.body.empty()) return nullptr;
        auto json = nlohmann::json::parse(response.body, nullptr, false);
        if (!json.is_discarded()) return json;
        return response.body.size() <= k_max_recorded_text
                   ? response.body
                   : response.body.substr(0, k_max_recorded_text) + "...[truncated]";
    }

    Config m_config;
    Environment m_environment;
    Credentials m_credentials;
    std::string m_url;
    std::string m_shown_url;  // m_url as recorded and reported
    std::mt19937 m_rng;
    std::vector<Exchange> m_exchanges;
    Usage m_usage;
    int m_calls = 0;
};

}  // namespace

const char* to_string(FailureKind kind) {
    switch (kind) {
    case FailureKind::unreachable: return "unreachable";
    case FailureKind::timeout: return "timeout";
    case FailureKind::http_status: return "http-status";
    case FailureKind::bad_response: return "bad-response";
    case FailureKind::cap_exceeded: return "cap-exceeded";
    }
    return "unreachable";
}

std::unique_ptr<Client> make_client(const Config& config, Environment environment) {
    return std::make_unique<HttpClient>(config, std::move(environment));
}

}  // namespace attune::llm
