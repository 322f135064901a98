#include <attune/llm/transport.hpp>

#include <attune/util/strings.hpp>

#include <curl/curl.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace attune::llm {

std::string HttpResponse::header(std::string_view name) const {
    const auto wanted = util::to_lower(name);
    for (const auto& [key, value] : headers)
        if (util::to_lower(key) == wanted) return value;
    return {};
}

namespace {

struct Sink {
    std::string body;
    std::vector<Header> headers;
    std::size_t limit = 0;
    bool too_large = false;
};

std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* sink = static_cast<Sink*>(user);
    const std::size_t bytes = size * count;
    if (sink->body.size() + bytes > sink->limit) {
        // Returning less than given makes curl stop with CURLE_WRITE_ERROR: a huge answer is
        // refused while it streams in, before it is held in memory.
        sink->too_large = true;
        return 0;
    }
    sink->body.append(data, bytes);
    return bytes;
}

std::size_t write_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto* sink = static_cast<Sink*>(user);
    const std::size_t bytes = size * count;
    const std::string_view line(data, bytes);
    // A new status line (after a 100 Continue) starts a new header block.
    if (line.starts_with("HTTP/")) sink->headers.clear();
    const auto colon = line.find(':');
    if (colon != std::string_view::npos)
        sink->headers.emplace_back(std::string(util::trim(line.substr(0, colon))),
                                   std::string(util::trim(line.substr(colon + 1))));
    return bytes;
}

// Loopback addresses never go through a proxy, whatever the environment says: a local model
// server (vLLM, llama.cpp, the test server) is on this machine.
std::string no_proxy_list() {
    std::string list = "localhost,127.0.0.1,::1";
    for (const char* name : {"NO_PROXY", "no_proxy"}) {
        if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
            list = std::string(value) + "," + list;
            break;
        }
    }
    return list;
}

TransportFailure classify(CURLcode code) {
    switch (code) {
    case CURLE_OPERATION_TIMEDOUT: return TransportFailure::timeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return TransportFailure::network;
    default: return TransportFailure::other;
    }
}

class CurlTransport : public Transport {
public:
    CurlTransport() {
        static std::once_flag once;
        std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    }

    HttpResponse post(const HttpRequest& request) override {
        const std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
        HttpResponse response;
        if (!curl) {
            response.failure = TransportFailure::other;
            response.failure_message = "cannot initialise libcurl";
            return response;
        }
        curl_slist* raw_headers = nullptr;
        for (const auto& [name, value] : request.headers)
            raw_headers = curl_slist_append(raw_headers, (name + ": " + value).c_str());
        // curl would otherwise send "Expect: 100-continue" for larger bodies and wait for it.
        raw_headers = curl_slist_append(raw_headers, "Expect:");
        const std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(raw_headers, &curl_slist_free_all);

        Sink sink;
        sink.limit = request.max_response_bytes;
        char error_buffer[CURL_ERROR_SIZE] = {};
        const std::string no_proxy = no_proxy_list();
        CURL* handle = curl.get();
        curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
        curl_easy_setopt(handle, CURLOPT_POST, 1L);
        curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
        curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
        curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
        curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
        curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.timeout.count()));
        curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(handle, CURLOPT_NOPROXY, no_proxy.c_str());
        curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
        curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, &write_body);
        curl_easy_setopt(handle, CURLOPT_WRITEDATA, &sink);
        curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, &write_header);
        curl_easy_setopt(handle, CURLOPT_HEADERDATA, &sink);
        curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);

        const CURLcode code = curl_easy_perform(handle);
        curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
        response.headers = std::move(sink.headers);
        response.body = std::move(sink.body);
        if (sink.too_large) {
            response.failure = TransportFailure::too_large;
            response.failure_message = "response body larger than " + std::to_string(request.max_response_bytes) + " bytes";
        } else if (code != CURLE_OK) {
            response.failure = classify(code);
            response.failure_message = error_buffer[0] != '\0' ? error_buffer : curl_easy_strerror(code);
        }
        return response;
    }
};

}  // namespace

std::shared_ptr<Transport> make_curl_transport() { return std::make_shared<CurlTransport>(); }

}  // namespace attune::llm
