#include <attune/llm/replay_client.hpp>
#include <attune/llm/wire.hpp>

#include <deque>

namespace attune::llm {

namespace {

Provider provider_of(const std::string& name) {
    for (const Provider p : {Provider::openai, Provider::anthropic, Provider::bedrock})
        if (name == to_string(p)) return p;
    return Provider::openai;
}

class ReplayClient final : public Client {
public:
    explicit ReplayClient(std::vector<Exchange> recorded) : m_recorded(recorded.begin(), recorded.end()) {}

    Reply chat(const std::vector<Message>&, const std::vector<ToolSpec>& tools) override {
        if (m_recorded.empty()) throw LlmError(FailureKind::cap_exceeded, "the recorded campaign has no LLM answer left");
        Exchange exchange = std::move(m_recorded.front());
        m_recorded.pop_front();
        ++m_calls;
        m_exchanges.push_back(exchange);
        if (!exchange.error.empty()) throw LlmError(FailureKind::http_status, exchange.error);
        Reply reply = decode_response(provider_of(exchange.provider), exchange.response, tools);
        m_usage += reply.usage;
        return reply;
    }

    std::vector<Exchange> take_exchanges() override { return std::exchange(m_exchanges, {}); }
    [[nodiscard]] Usage usage() const override { return m_usage; }
    [[nodiscard]] int calls() const override { return m_calls; }

private:
    std::deque<Exchange> m_recorded;
    std::vector<Exchange> m_exchanges;
    Usage m_usage;
    int m_calls = 0;
};

}  // namespace

std::unique_ptr<Client> make_replay_client(std::vector<Exchange> recorded) {
    return std::make_unique<ReplayClient>(std::move(recorded));
}

}  // namespace attune::llm
