#pragma once
// AWS Signature Version 4 for one request with headers (not presigned URLs), written against
// AWS's published description and checked against its test-suite vectors.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attune::llm::sigv4 {

struct Credentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;  ///< empty when none
};

struct Request {
    std::string method;                                      ///< GET, POST, ...
    std::string path;                                        ///< as sent, percent-encoded; "/" at least
    std::string query;                                       ///< as sent, without '?'
    std::vector<std::pair<std::string, std::string>> headers;  ///< all signed; must include host
    std::string body;
};

struct Signature {
    std::string canonical_request;
    std::string string_to_sign;
    std::string signature;      ///< lower-case hex
    std::string authorization;  ///< the Authorization header value
};

/// Signs `request` for `region` and `service` at `amz_date` (YYYYMMDDTHHMMSSZ). The caller adds
/// `x-amz-date` (and `x-amz-security-token` when there is a session token) to the headers before
/// signing, exactly as they will be sent.
Signature sign(const Request& request, const Credentials& credentials, const std::string& region,
               const std::string& service, const std::string& amz_date);

enum class Slash { keep, encode };

/// RFC 3986 percent-encoding of everything but unreserved characters (and '/' with Slash::keep).
std::string uri_encode(std::string_view text, Slash slash);

}  // namespace attune::llm::sigv4
