// The real HTTP client (libcurl) against a loopback server that speaks each provider's format.
// Every test runs for OpenAI, Anthropic and Bedrock; the back-off sleep is injected, so retries
// cost no wall time. Fake credentials sit in the environment, and no recorded exchange may show them.

#include "support/loopback_server.hpp"

#include <attune/llm/client.hpp>
#include <attune/llm/sigv4.hpp>

#include <gtest/gtest.h>

#include <cstdlib>

using namespace attune::llm;
using attune::test_support::LoopbackServer;
using attune::test_support::RecordedRequest;
using attune::test_support::ScriptedResponse;
using nlohmann::json;

namespace {

constexpr const char* k_openai_key = "sk-FAKE-openai-SECRET-1234";
constexpr const char* k_anthropic_key = "sk-ant-FAKE-SECRET-5678";
constexpr const char* k_aws_access = "AKIAFAKEACCESSKEY99";
constexpr const char* k_aws_secret = "FAKEsecretKEY/abc+def0123456789";
constexpr const char* k_aws_token = "FAKEsessionTOKEN0123456789==";
constexpr const char* k_bedrock_model = "anthropic.claude-3-haiku-20240307-v1:0";

const std::vector<ToolSpec> k_tools{
    {"propose_change", "Propose one lever change.",
     {{"type", "object"},
      {"properties", {{"edits", {{"type", "object"}}}, {"rationale", {{"type", "string"}}}}},
      {"required", {"edits", "rationale"}}}},
    {"stop", "Stop the campaign.", {{"type", "object"}, {"properties", {{"reason", {{"type", "string"}}}}}}},
};

const std::vector<Message> k_conversation{Message::system("You tune training recipes."),
                                          Message::user("Step 3: the trial is memory-bound.")};

// A reply with `text` and, when `tool` is set, one call whose arguments are `arguments`: an object,
// or a string the model wrote (which may not be JSON).
std::string reply_body(Provider provider, const std::string& text, const std::string& tool = {},
                       const json& arguments = json::object()) {
    switch (provider) {
    case Provider::openai: {
        json message{{"role", "assistant"}, {"content", text.empty() ? json(nullptr) : json(text)}};
        if (!tool.empty())
            message["tool_calls"] = {{{"id", "call_1"}, {"type", "function"},
                                      {"function", {{"name", tool},
                                                    {"arguments", arguments.is_string() ? arguments : json(arguments.dump())}}}}};
        return json{{"id", "chatcmpl-1"},
                    {"choices", {{{"index", 0}, {"message", message}, {"finish_reason", tool.empty() ? "stop" : "tool_calls"}}}},
                    {"usage", {{"prompt_tokens", 120}, {"completion_tokens", 30}}}}
            .dump();
    }
    case Provider::anthropic: {
        json content = json::array();
        if (!text.empty()) content.push_back({{"type", "text"}, {"text", text}});
        if (!tool.empty()) content.push_back({{"type", "tool_use"}, {"id", "toolu_1"}, {"name", tool}, {"input", arguments}});
        return json{{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"}, {"content", content},
                    {"stop_reason", tool.empty() ? "end_turn" : "tool_use"},
                    {"usage", {{"input_tokens", 120}, {"output_tokens", 30}}}}
            .dump();
    }
    case Provider::bedrock: {
        json content = json::array();
        if (!text.empty()) content.push_back({{"text", text}});
        if (!tool.empty()) content.push_back({{"toolUse", {{"toolUseId", "tooluse_1"}, {"name", tool}, {"input", arguments}}}});
        return json{{"output", {{"message", {{"role", "assistant"}, {"content", content}}}}},
                    {"stopReason", tool.empty() ? "end_turn" : "tool_use"},
                    {"usage", {{"inputTokens", 120}, {"outputTokens", 30}, {"totalTokens", 150}}}}
            .dump();
    }
    }
    return {};
}

const json k_edits_call{{"edits", {{"model.micro_batch_size", 2}}}, {"rationale", "memory is free"}};

class LoopbackChat : public testing::TestWithParam<Provider> {
protected:
    void SetUp() override {
        setenv("OPENAI_API_KEY", k_openai_key, 1);
        setenv("ANTHROPIC_API_KEY", k_anthropic_key, 1);
        setenv("AWS_ACCESS_KEY_ID", k_aws_access, 1);
        setenv("AWS_SECRET_ACCESS_KEY", k_aws_secret, 1);
        setenv("AWS_SESSION_TOKEN", k_aws_token, 1);
        setenv("AWS_REGION", "us-west-2", 1);
    }

    [[nodiscard]] Provider provider() const { return GetParam(); }

    Config config_for(const std::string& base) const {
        switch (provider()) {
        case Provider::openai: return parse_llm_option("openai:gpt-test", base + "/v1");
        case Provider::anthropic: return parse_llm_option("anthropic:claude-test", base);
        case Provider::bedrock: return parse_llm_option(std::string("bedrock:") + k_bedrock_model, base);
        }
        return {};
    }

    std::unique_ptr<Client> client(Config config) {
        Environment environment;
        environment.sleep = [this](std::chrono::milliseconds wait) { m_slept.push_back(wait); };
        environment.jitter_seed = 7;
        return make_client(config, environment);
    }

    std::unique_ptr<Client> client() { return client(config_for(m_server.url())); }

    void enqueue(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {},
                 std::chrono::milliseconds delay = {}) {
        m_server.enqueue({status, std::move(body), std::move(headers), delay});
    }

    // Every exchange serialised as the journal would write it must be free of credentials.
    static void expect_no_secret(const std::vector<Exchange>& exchanges) {
        for (const auto& exchange : exchanges) {
            const std::string text = to_json(exchange).dump();
            for (const char* secret : {k_openai_key, k_anthropic_key, k_aws_access, k_aws_secret, k_aws_token, "Bearer ",
                                       "x-api-key", "Authorization", "X-Amz-Security-Token", "AWS4-HMAC-SHA256"})
                EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << text;
        }
    }

    LoopbackServer m_server;
    std::vector<std::chrono::milliseconds> m_slept;
};

std::string provider_name(const testing::TestParamInfo<Provider>& info) { return to_string(info.param); }

}  // namespace

INSTANTIATE_TEST_SUITE_P(Providers, LoopbackChat,
                         testing::Values(Provider::openai, Provider::anthropic, Provider::bedrock), provider_name);

TEST_P(LoopbackChat, ParsesAToolCallAndCountsTokens) {
    enqueue(200, reply_body(provider(), "Micro batch 2 fits.", "propose_change", k_edits_call));
    const auto chat = client();
    const Reply reply = chat->chat(k_conversation, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_TRUE(reply.tool_calls[0].usable()) << reply.tool_calls[0].error;
    EXPECT_EQ(reply.tool_calls[0].name, "propose_change");
    EXPECT_EQ(reply.tool_calls[0].arguments, k_edits_call);
    EXPECT_FALSE(reply.tool_calls[0].id.empty());
    EXPECT_EQ(reply.text, "Micro batch 2 fits.");
    EXPECT_EQ(reply.usage.input_tokens, 120);
    EXPECT_EQ(reply.usage.output_tokens, 30);
    EXPECT_EQ(chat->usage().total(), 150);
    EXPECT_EQ(chat->calls(), 1);

    const auto exchanges = chat->take_exchanges();
    ASSERT_EQ(exchanges.size(), 1U);
    EXPECT_EQ(exchanges[0].status, 200);
    EXPECT_EQ(exchanges[0].attempts.size(), 1U);
    EXPECT_TRUE(exchanges[0].error.empty());
    EXPECT_TRUE(exchanges[0].response.is_object());
    EXPECT_TRUE(chat->take_exchanges().empty());
    expect_no_secret(exchanges);
}

TEST_P(LoopbackChat, SendsTheProviderPathHeadersAndBody) {
    enqueue(200, reply_body(provider(), "ok"));
    client()->chat(k_conversation, k_tools);
    const auto requests = m_server.requests();
    ASSERT_EQ(requests.size(), 1U);
    const RecordedRequest& request = requests[0];
    const json body = json::parse(request.body);
    EXPECT_EQ(request.method, "POST");
    EXPECT_EQ(request.header("content-type"), "application/json");
    switch (provider()) {
    case Provider::openai:
        EXPECT_EQ(request.target, "/v1/chat/completions");
        EXPECT_EQ(request.header("authorization"), std::string("Bearer ") + k_openai_key);
        EXPECT_EQ(body["model"], "gpt-test");
        EXPECT_EQ(body["messages"][0]["role"], "system");
        EXPECT_EQ(body["tools"][0]["function"]["name"], "propose_change");
        break;
    case Provider::anthropic:
        EXPECT_EQ(request.target, "/v1/messages");
        EXPECT_EQ(request.header("x-api-key"), k_anthropic_key);
        EXPECT_EQ(request.header("anthropic-version"), "2023-06-01");
        EXPECT_EQ(body["system"], "You tune training recipes.");
        EXPECT_EQ(body["messages"][0]["role"], "user");
        EXPECT_EQ(body["tools"][1]["input_schema"]["type"], "object");
        break;
    case Provider::bedrock: {
        EXPECT_EQ(request.target, "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse");
        EXPECT_EQ(body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"], "object");
        EXPECT_EQ(request.header("x-amz-security-token"), k_aws_token);
        // The server's side of SigV4: recompute the signature from what arrived.
        attune::llm::sigv4::Request signed_request{"POST", request.target, "", {}, request.body};
        for (const char* name : {"host", "content-type", "x-amz-date", "x-amz-security-token"})
            signed_request.headers.emplace_back(name, request.header(name));
        const auto expected = attune::llm::sigv4::sign(signed_request, {k_aws_access, k_aws_secret, k_aws_token},
                                                       "us-west-2", "bedrock", request.header("x-amz-date"));
        EXPECT_EQ(request.header("authorization"), expected.authorization);
        EXPECT_NE(expected.authorization.find("/us-west-2/bedrock/aws4_request"), std::string::npos);
        break;
    }
    }
}

TEST_P(LoopbackChat, WaitsWhatRetryAfterAsksThenSucceeds) {
    enqueue(429, R"({"error":{"message":"rate limited"}})", {{"Retry-After", "7"}});
    enqueue(200, reply_body(provider(), "", "stop", {{"reason", "done"}}));
    const auto chat = client();
    const Reply reply = chat->chat(k_conversation, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_EQ(reply.tool_calls[0].name, "stop");
    ASSERT_EQ(m_slept.size(), 1U);
    EXPECT_GE(m_slept[0], std::chrono::seconds(7));
    const auto exchanges = chat->take_exchanges();
    ASSERT_EQ(exchanges[0].attempts.size(), 2U);
    EXPECT_EQ(exchanges[0].attempts[0].status, 429);
    EXPECT_NE(exchanges[0].attempts[0].error.find("rate limited"), std::string::npos);
    EXPECT_GE(exchanges[0].attempts[0].waited_s, 7.0);
    expect_no_secret(exchanges);
}

TEST_P(LoopbackChat, BacksOffExponentiallyOnServerErrorsAndGivesUpNamingTheStatus) {
    auto config = config_for(m_server.url());
    config.max_retries = 2;
    for (int i = 0; i < 3; ++i) enqueue(503, R"({"message":"overloaded"})");
    const auto chat = client(config);
    try {
        chat->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::http_status);
        EXPECT_NE(std::string(error.what()).find("HTTP 503"), std::string::npos) << error.what();
        EXPECT_NE(std::string(error.what()).find("gave up after 3 attempts"), std::string::npos) << error.what();
    }
    ASSERT_EQ(m_slept.size(), 2U);
    EXPECT_GE(m_slept[0], config.backoff_base / 2);
    EXPECT_LE(m_slept[0], config.backoff_base);
    EXPECT_GE(m_slept[1], config.backoff_base);      // doubled, then jittered down by at most half
    EXPECT_LE(m_slept[1], config.backoff_base * 2);
    EXPECT_EQ(m_server.requests().size(), 3U);
}

TEST_P(LoopbackChat, DoesNotRetryAClientError) {
    enqueue(400, R"({"error":{"message":"tools[0] is invalid"}})");
    const auto chat = client();
    try {
        chat->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::http_status);
        EXPECT_NE(std::string(error.what()).find("tools[0] is invalid"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(m_slept.empty());
    const auto exchanges = chat->take_exchanges();
    ASSERT_EQ(exchanges.size(), 1U);
    EXPECT_EQ(exchanges[0].status, 400);
    EXPECT_FALSE(exchanges[0].error.empty());
}

TEST_P(LoopbackChat, RetriesATimeoutThenSucceeds) {
    auto config = config_for(m_server.url());
    config.timeout = std::chrono::milliseconds(300);
    enqueue(200, reply_body(provider(), "late"), {}, std::chrono::seconds(5));
    enqueue(200, reply_body(provider(), "on time"));
    const auto chat = client(config);
    EXPECT_EQ(chat->chat(k_conversation, k_tools).text, "on time");
    EXPECT_EQ(m_slept.size(), 1U);
    const auto exchanges = chat->take_exchanges();
    ASSERT_EQ(exchanges[0].attempts.size(), 2U);
    EXPECT_NE(exchanges[0].attempts[0].error.find("did not answer within 0.3 s"), std::string::npos)
        << exchanges[0].attempts[0].error;
}

TEST_P(LoopbackChat, ReportsATimeoutNamingTheUrlWhenEveryAttemptTimesOut) {
    auto config = config_for(m_server.url());
    config.timeout = std::chrono::milliseconds(200);
    config.max_retries = 1;
    enqueue(200, reply_body(provider(), "late"), {}, std::chrono::seconds(5));
    enqueue(200, reply_body(provider(), "late"), {}, std::chrono::seconds(5));
    try {
        client(config)->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::timeout);
        EXPECT_NE(std::string(error.what()).find(m_server.url()), std::string::npos) << error.what();
    }
}

TEST_P(LoopbackChat, MalformedJsonIsABadResponseRecordedAsText) {
    enqueue(200, R"({"choices": [ {"message": )");
    const auto chat = client();
    try {
        chat->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::bad_response);
        EXPECT_NE(std::string(error.what()).find("not JSON"), std::string::npos) << error.what();
    }
    const auto exchanges = chat->take_exchanges();
    ASSERT_EQ(exchanges.size(), 1U);
    EXPECT_EQ(exchanges[0].response, R"({"choices": [ {"message": )");
    EXPECT_TRUE(m_slept.empty());
    expect_no_secret(exchanges);
}

TEST_P(LoopbackChat, JsonOfTheWrongShapeIsABadResponse) {
    enqueue(200, R"({"content": 42, "choices": "none", "output": []})");
    try {
        client()->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::bad_response);
        EXPECT_NE(std::string(error.what()).find("not a chat reply"), std::string::npos) << error.what();
    }
}

TEST_P(LoopbackChat, TextWithoutAToolCallComesBackAsText) {
    enqueue(200, reply_body(provider(), "I think micro batch 2 would help."));
    const Reply reply = client()->chat(k_conversation, k_tools);
    EXPECT_TRUE(reply.tool_calls.empty());
    EXPECT_EQ(reply.text, "I think micro batch 2 would help.");
    EXPECT_FALSE(reply.stop_reason.empty());
}

TEST_P(LoopbackChat, AnUnknownToolIsMarkedUnusable) {
    enqueue(200, reply_body(provider(), "", "rm_rf", {{"path", "/"}}));
    const Reply reply = client()->chat(k_conversation, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_FALSE(reply.tool_calls[0].usable());
    EXPECT_EQ(reply.tool_calls[0].error, "unknown tool 'rm_rf' (offered: propose_change, stop)");
}

TEST_P(LoopbackChat, ArgumentsThatAreNotJsonAreMarkedUnusableWithTheRawText) {
    enqueue(200, reply_body(provider(), "", "propose_change", json(R"({"edits": {"tp": 2}, "rationale": )")));
    const Reply reply = client()->chat(k_conversation, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_EQ(reply.tool_calls[0].error, "arguments are not JSON");
    EXPECT_EQ(reply.tool_calls[0].raw_arguments, R"({"edits": {"tp": 2}, "rationale": )");
    EXPECT_TRUE(reply.tool_calls[0].arguments.is_null());
}

TEST_P(LoopbackChat, AHugeResponseIsRefusedNotHeld) {
    auto config = config_for(m_server.url());
    config.max_response_bytes = 4096;
    enqueue(200, reply_body(provider(), std::string(1U << 20U, 'x')));
    try {
        client(config)->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::bad_response);
        EXPECT_NE(std::string(error.what()).find("larger than 4096 bytes"), std::string::npos) << error.what();
    }
}

TEST_P(LoopbackChat, AnUnreachableEndpointIsNamedInTheError) {
    const std::string url = "http://127.0.0.1:" + std::to_string(LoopbackServer::closed_port());
    auto config = config_for(url);
    config.max_retries = 1;
    try {
        client(config)->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::unreachable);
        EXPECT_NE(std::string(error.what()).find("cannot reach the LLM endpoint " + url), std::string::npos)
            << error.what();
    }
}

TEST_P(LoopbackChat, TheCallCapStopsBeforeSending) {
    auto config = config_for(m_server.url());
    config.max_calls = 1;
    enqueue(200, reply_body(provider(), "one"));
    enqueue(200, reply_body(provider(), "two"));
    const auto chat = client(config);
    chat->chat(k_conversation, k_tools);
    try {
        chat->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::cap_exceeded);
        EXPECT_EQ(std::string(error.what()), "the cap of 1 LLM calls is spent; no request sent");
    }
    EXPECT_EQ(m_server.requests().size(), 1U);
}

TEST_P(LoopbackChat, TheTokenCapStopsOnceSpent) {
    auto config = config_for(m_server.url());
    config.max_tokens = 100;
    enqueue(200, reply_body(provider(), "one"));
    const auto chat = client(config);
    chat->chat(k_conversation, k_tools);  // 150 tokens: this one was already paid for
    try {
        chat->chat(k_conversation, k_tools);
        FAIL() << "expected an LlmError";
    } catch (const LlmError& error) {
        EXPECT_EQ(error.kind(), FailureKind::cap_exceeded);
        EXPECT_NE(std::string(error.what()).find("100 LLM tokens"), std::string::npos) << error.what();
    }
}

TEST_P(LoopbackChat, AToolRoundTripSendsTheCallAndItsResultBack) {
    enqueue(200, reply_body(provider(), "", "propose_change", k_edits_call));
    enqueue(200, reply_body(provider(), "", "stop", {{"reason", "refused twice"}}));
    const auto chat = client();
    auto conversation = k_conversation;
    const Reply first = chat->chat(conversation, k_tools);
    conversation.push_back(Message::assistant(first.text, first.tool_calls));
    conversation.push_back(Message::tool_result(first.tool_calls[0], "gate refused: global batch changed", ToolOutcome::failed));
    const Reply second = chat->chat(conversation, k_tools);
    EXPECT_EQ(second.tool_calls.at(0).name, "stop");

    const json body = json::parse(m_server.requests().at(1).body);
    const std::string text = body.dump();
    EXPECT_NE(text.find("gate refused: global batch changed"), std::string::npos);
    EXPECT_NE(text.find(first.tool_calls[0].id), std::string::npos);
    expect_no_secret(chat->take_exchanges());
}
