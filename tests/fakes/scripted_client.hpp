#pragma once

// A Client that answers from a script, for tests of whatever drives an LLM (the agent loop):
// no network, exchanges recorded like the real client's, and the same caps on calls.

#include <attune/llm/client.hpp>
#include <attune/llm/wire.hpp>

#include <deque>
#include <variant>

namespace attune::test_support {

class ScriptedClient : public llm::Client {
public:
    /// The next chat() returns `reply`.
    void enqueue(llm::Reply reply) { m_script.emplace_back(std::move(reply)); }
    /// The next chat() throws `error`.
    void enqueue(llm::LlmError error) { m_script.emplace_back(std::move(error)); }

    llm::Reply chat(const std::vector<llm::Message>& messages, const std::vector<llm::ToolSpec>& tools) override {
        if (m_script.empty()) throw llm::LlmError(llm::FailureKind::cap_exceeded, "the script has no answer left");
        m_seen.push_back(messages);
        auto next = std::move(m_script.front());
        m_script.pop_front();
        ++m_calls;
        llm::Exchange exchange;
        exchange.provider = "scripted";
        exchange.request = llm::encode_request(llm::Provider::openai, "scripted", messages, tools, 0);
        if (const auto* error = std::get_if<llm::LlmError>(&next)) {
            exchange.error = error->what();
            m_exchanges.push_back(std::move(exchange));
            throw *error;
        }
        auto reply = std::get<llm::Reply>(std::move(next));
        exchange.status = 200;
        exchange.usage = reply.usage;
        m_usage += reply.usage;
        m_exchanges.push_back(std::move(exchange));
        return reply;
    }

    std::vector<llm::Exchange> take_exchanges() override { return std::exchange(m_exchanges, {}); }
    [[nodiscard]] llm::Usage usage() const override { return m_usage; }
    [[nodiscard]] int calls() const override { return m_calls; }

    /// The conversations chat() was given, in order.
    [[nodiscard]] const std::vector<std::vector<llm::Message>>& seen() const { return m_seen; }

private:
    std::deque<std::variant<llm::Reply, llm::LlmError>> m_script;
    std::vector<std::vector<llm::Message>> m_seen;
    std::vector<llm::Exchange> m_exchanges;
    llm::Usage m_usage;
    int m_calls = 0;
};

}  // namespace attune::test_support
