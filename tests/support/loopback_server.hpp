#pragma once

// A tiny HTTP/1.1 server on 127.0.0.1 (ephemeral port) that answers scripted responses in order
// and records what it was sent: the stand-in for an LLM provider in tests. One thread per
// connection, so a delayed (timing-out) answer does not hold up the next attempt.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace attune::test_support {

struct RecordedRequest {
    std::string method;
    std::string target;  ///< path and query as sent
    std::vector<std::pair<std::string, std::string>> headers;
    std::string body;
    /// The value of header `name` (case-insensitive), or empty.
    [[nodiscard]] std::string header(const std::string& name) const;
};

struct ScriptedResponse {
    int status = 200;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;  ///< Content-Type is JSON unless given
    std::chrono::milliseconds delay{0};                        ///< wait before answering
};

class LoopbackServer {
public:
    LoopbackServer();
    ~LoopbackServer();
    LoopbackServer(const LoopbackServer&) = delete;
    LoopbackServer& operator=(const LoopbackServer&) = delete;

    /// Queues the next answer; with none queued the server answers 500.
    void enqueue(ScriptedResponse response);
    /// http://127.0.0.1:PORT
    [[nodiscard]] std::string url() const;
    [[nodiscard]] std::vector<RecordedRequest> requests() const;

    /// A loopback port that nothing listens on (bound, then released).
    static int closed_port();

private:
    void accept_loop();
    void serve(int fd);
    ScriptedResponse next_response();

    int m_listen_fd = -1;
    int m_port = 0;
    bool m_stop = false;
    mutable std::mutex m_mutex;
    std::condition_variable m_stopping;
    std::deque<ScriptedResponse> m_script;
    std::vector<RecordedRequest> m_requests;
    std::vector<std::thread> m_connections;
    std::thread m_acceptor;
};

}  // namespace attune::test_support
