#include "support/loopback_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace attune::test_support {

namespace {

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) return {};
    return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

int bound_socket(int& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed");
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        throw std::runtime_error("bind(127.0.0.1:0) failed");
    }
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    port = ntohs(address.sin_port);
    return fd;
}

// Reads until the end of the headers and then Content-Length bytes; gives up after 5 s idle.
bool read_request(int fd, RecordedRequest& request) {
    std::string data;
    char buffer[8192];
    std::size_t header_end = std::string::npos;
    std::size_t wanted = 0;
    while (true) {
        if (header_end == std::string::npos) {
            header_end = data.find("\r\n\r\n");
            if (header_end != std::string::npos) {
                std::size_t line_start = data.find("\r\n") + 2;
                const std::string request_line = data.substr(0, line_start - 2);
                const auto space = request_line.find(' ');
                request.method = request_line.substr(0, space);
                request.target = request_line.substr(space + 1, request_line.rfind(' ') - space - 1);
                while (line_start < header_end) {
                    const auto line_end = data.find("\r\n", line_start);
                    const std::string line = data.substr(line_start, line_end - line_start);
                    const auto colon = line.find(':');
                    if (colon != std::string::npos)
                        request.headers.emplace_back(trim(line.substr(0, colon)), trim(line.substr(colon + 1)));
                    line_start = line_end + 2;
                }
                const std::string length = request.header("content-length");
                wanted = length.empty() ? 0 : std::stoul(length);
            }
        }
        if (header_end != std::string::npos && data.size() >= header_end + 4 + wanted) {
            request.body = data.substr(header_end + 4, wanted);
            return true;
        }
        pollfd waiting{fd, POLLIN, 0};
        if (::poll(&waiting, 1, 5000) <= 0) return false;
        const auto got = ::recv(fd, buffer, sizeof buffer, 0);
        if (got <= 0) return false;
        data.append(buffer, static_cast<std::size_t>(got));
    }
}

void write_all(int fd, const std::string& text) {
    std::size_t sent = 0;
    while (sent < text.size()) {
        // MSG_NOSIGNAL: a client that timed out and hung up must not kill the test with SIGPIPE.
        const auto wrote = ::send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
        if (wrote <= 0) return;
        sent += static_cast<std::size_t>(wrote);
    }
}

std::string render(const ScriptedResponse& response) {
    std::string out = "HTTP/1.1 " + std::to_string(response.status) + " Scripted\r\n";
    bool has_type = false;
    for (const auto& [name, value] : response.headers) {
        has_type = has_type || lower(name) == "content-type";
        out += name + ": " + value + "\r\n";
    }
    if (!has_type) out += "Content-Type: application/json\r\n";
    out += "Content-Length: " + std::to_string(response.body.size()) + "\r\nConnection: close\r\n\r\n";
    return out + response.body;
}

}  // namespace

std::string RecordedRequest::header(const std::string& name) const {
    for (const auto& [key, value] : headers)
        if (lower(key) == lower(name)) return value;
    return {};
}

LoopbackServer::LoopbackServer() {
    m_listen_fd = bound_socket(m_port);
    if (::listen(m_listen_fd, 16) != 0) throw std::runtime_error("listen() failed");
    m_acceptor = std::thread([this] { accept_loop(); });
}

LoopbackServer::~LoopbackServer() {
    {
        const std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_stopping.notify_all();
    m_acceptor.join();
    for (auto& connection : m_connections) connection.join();
    ::close(m_listen_fd);
}

void LoopbackServer::enqueue(ScriptedResponse response) {
    const std::lock_guard lock(m_mutex);
    m_script.push_back(std::move(response));
}

std::string LoopbackServer::url() const { return "http://127.0.0.1:" + std::to_string(m_port); }

std::vector<RecordedRequest> LoopbackServer::requests() const {
    const std::lock_guard lock(m_mutex);
    return m_requests;
}

int LoopbackServer::closed_port() {
    int port = 0;
    ::close(bound_socket(port));
    return port;
}

void LoopbackServer::accept_loop() {
    while (true) {
        {
            const std::lock_guard lock(m_mutex);
            if (m_stop) return;
        }
        pollfd waiting{m_listen_fd, POLLIN, 0};
        if (::poll(&waiting, 1, 20) <= 0) continue;
        const int fd = ::accept(m_listen_fd, nullptr, nullptr);
        if (fd < 0) continue;
        const std::lock_guard lock(m_mutex);
        m_connections.emplace_back([this, fd] { serve(fd); });
    }
}

ScriptedResponse LoopbackServer::next_response() {
    const std::lock_guard lock(m_mutex);
    if (m_script.empty()) return {500, R"({"error":{"message":"no scripted response left"}})", {}, {}};
    auto response = std::move(m_script.front());
    m_script.pop_front();
    return response;
}

void LoopbackServer::serve(int fd) {
    RecordedRequest request;
    if (read_request(fd, request)) {
        {
            const std::lock_guard lock(m_mutex);
            m_requests.push_back(request);
        }
        const auto response = next_response();
        if (response.delay.count() > 0) {
            std::unique_lock lock(m_mutex);
            m_stopping.wait_for(lock, response.delay, [this] { return m_stop; });
        }
        write_all(fd, render(response));
    }
    ::close(fd);
}

}  // namespace attune::test_support
