#pragma once
// One HTTP POST, behind an interface: libcurl in production, anything in tests.

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attune::llm {

using Header = std::pair<std::string, std::string>;

struct HttpRequest {
    std::string url;
    std::vector<Header> headers;
    std::string body;
    std::chrono::milliseconds timeout{std::chrono::seconds(120)};
    std::size_t max_response_bytes = 8u << 20u;
};

/// How a request failed before a complete response arrived.
enum class TransportFailure {
    none,
    network,    ///< refused, reset, name not resolved, nothing received: worth another try
    timeout,
    too_large,  ///< the body passed HttpRequest::max_response_bytes
    other,      ///< TLS and the like: another try would fail the same way
};

struct HttpResponse {
    TransportFailure failure = TransportFailure::none;
    std::string failure_message;   ///< set when failure != none
    long status = 0;               ///< HTTP status; 0 when no response came
    std::vector<Header> headers;   ///< names as received
    std::string body;

    /// The value of header `name` (case-insensitive), or empty.
    [[nodiscard]] std::string header(std::string_view name) const;
};

class Transport {
public:
    virtual ~Transport() = default;
    /// Posts the request; never throws for network problems (they come back as `failure`).
    virtual HttpResponse post(const HttpRequest& request) = 0;
};

/// libcurl, no redirects followed (they would resend credentials), proxies from the environment
/// except for loopback addresses.
std::shared_ptr<Transport> make_curl_transport();

}  // namespace attune::llm
