#include <attune/llm/sigv4.hpp>

#include <attune/util/hash.hpp>
#include <attune/util/strings.hpp>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

namespace attune::llm::sigv4 {

namespace {

std::string hex(const unsigned char* bytes, std::size_t size) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(size * 2);
    for (std::size_t i = 0; i < size; ++i) {
        out += k_hex[bytes[i] >> 4U];
        out += k_hex[bytes[i] & 0xFU];
    }
    return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest.data(), &length) == nullptr)
        throw std::runtime_error("HMAC-SHA256 failed");
    return {reinterpret_cast<const char*>(digest.data()), length};
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The query as sent may already be percent-encoded; decoding first and encoding once the
// canonical way makes `a%20b` and `a b` sign the same, as AWS does.
std::string uri_decode(std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 && hex_value(text[i + 2]) >= 0) {
            out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

std::string canonical_query(std::string_view query) {
    std::vector<std::pair<std::string, std::string>> params;
    for (const auto& part : util::split(query, '&')) {
        if (part.empty()) continue;
        const auto equals = part.find('=');
        const std::string key = part.substr(0, equals);
        const std::string value = equals == std::string::npos ? "" : part.substr(equals + 1);
        params.emplace_back(uri_encode(uri_decode(key), Slash::encode), uri_encode(uri_decode(value), Slash::encode));
    }
    std::sort(params.begin(), params.end());
    std::vector<std::string> pairs;
    for (const auto& [key, value] : params) pairs.push_back(key + "=" + value);
    return util::join(pairs, "&");
}

// Header values are trimmed and inner runs of spaces collapse to one, so that what a proxy
// may re-space still signs the same.
std::string canonical_value(std::string_view value) {
    std::string out;
    bool in_space = false;
    for (const char c : util::trim(value)) {
        if (c == ' ' || c == '\t') {
            in_space = true;
            continue;
        }
        if (in_space) out += ' ';
        in_space = false;
        out += c;
    }
    return out;
}

struct CanonicalHeaders {
    std::string block;   // "name:value\n" per header, sorted
    std::string names;   // "a;b;c"
};

CanonicalHeaders canonical_headers(const std::vector<std::pair<std::string, std::string>>& headers) {
    std::map<std::string, std::vector<std::string>> by_name;  // sorted by lower-case name
    for (const auto& [name, value] : headers) by_name[util::to_lower(name)].push_back(canonical_value(value));
    CanonicalHeaders out;
    std::vector<std::string> names;
    for (const auto& [name, values] : by_name) {
        out.block += name + ":" + util::join(values, ",") + "\n";
        names.push_back(name);
    }
    out.names = util::join(names, ";");
    return out;
}

}  // namespace

std::string uri_encode(std::string_view text, Slash slash) {
    static constexpr char k_hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                                (byte >= '0' && byte <= '9') || byte == '-' || byte == '_' || byte == '.' || byte == '~';
        if (unreserved || (byte == '/' && slash == Slash::keep)) {
            out += c;
        } else {
            out += '%';
            out += k_hex[byte >> 4U];
            out += k_hex[byte & 0xFU];
        }
    }
    return out;
}

Signature sign(const Request& request, const Credentials& credentials, const std::string& region,
               const std::string& service, const std::string& amz_date) {
    if (amz_date.size() != 16 || amz_date[8] != 'T' || amz_date.back() != 'Z')
        throw std::invalid_argument("x-amz-date must read YYYYMMDDTHHMMSSZ, not '" + amz_date + "'");
    const std::string date = amz_date.substr(0, 8);
    const std::string scope = date + "/" + region + "/" + service + "/aws4_request";
    const auto headers = canonical_headers(request.headers);

    Signature out;
    // Every service but S3 encodes the path as sent once more: a '%' on the wire becomes '%25'.
    const std::string path = request.path.empty() ? "/" : request.path;
    out.canonical_request = request.method + "\n" + uri_encode(path, Slash::keep) + "\n" +
                            canonical_query(request.query) + "\n" + headers.block + "\n" + headers.names + "\n" +
                            util::sha256_hex(request.body);
    out.string_to_sign =
        "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" + util::sha256_hex(out.canonical_request);

    std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, date);
    key = hmac_sha256(key, region);
    key = hmac_sha256(key, service);
    key = hmac_sha256(key, "aws4_request");
    const std::string raw = hmac_sha256(key, out.string_to_sign);
    out.signature = hex(reinterpret_cast<const unsigned char*>(raw.data()), raw.size());
    out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + scope +
                        ", SignedHeaders=" + headers.names + ", Signature=" + out.signature;
    return out;
}

}  // namespace attune::llm::sigv4
