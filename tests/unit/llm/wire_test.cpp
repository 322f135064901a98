// Each provider's JSON format without a network: what attune sends for a tool round trip, and
// how untrusted answers decode.

#include <attune/llm/client.hpp>
#include <attune/llm/retry.hpp>
#include <attune/llm/wire.hpp>

#include <gtest/gtest.h>

using namespace attune::llm;
using nlohmann::json;

namespace {

const std::vector<ToolSpec> k_tools{{"estimate", "Estimate a candidate.", {{"type", "object"}}}};

ToolCall call(std::string id) {
    ToolCall out;
    out.id = std::move(id);
    out.name = "estimate";
    out.arguments = {{"edits", {{"tp", 2}}}};
    out.raw_arguments = out.arguments.dump();
    return out;
}

// A turn that called two tools, then both results: providers that need alternating turns get
// the two results inside one user turn.
std::vector<Message> two_tool_round() {
    return {Message::system("rules"), Message::user("go"),
            Message::assistant("checking", {call("c1"), call("c2")}),
            Message::tool_result(call("c1"), "fits, 61 GiB"),
            Message::tool_result(call("c2"), "does not fit", ToolOutcome::failed)};
}

}  // namespace

TEST(LlmWire, OpenAiSendsToolCallsWithStringArgumentsAndToolMessages) {
    const json body = encode_request(Provider::openai, "m", two_tool_round(), k_tools, 100);
    ASSERT_EQ(body["messages"].size(), 5U);
    EXPECT_EQ(body["messages"][2]["tool_calls"][1]["function"]["arguments"], R"({"edits":{"tp":2}})");
    EXPECT_EQ(body["messages"][4]["role"], "tool");
    EXPECT_EQ(body["messages"][4]["tool_call_id"], "c2");
    EXPECT_EQ(body["messages"][4]["content"], "ERROR: does not fit");
    EXPECT_EQ(body["max_completion_tokens"], 100);
    EXPECT_EQ(body["tools"][0]["type"], "function");
}

TEST(LlmWire, AnthropicMergesToolResultsIntoOneUserTurn) {
    const json body = encode_request(Provider::anthropic, "m", two_tool_round(), k_tools, 100);
    EXPECT_EQ(body["system"], "rules");
    ASSERT_EQ(body["messages"].size(), 3U);
    EXPECT_EQ(body["messages"][1]["content"][1]["type"], "tool_use");
    EXPECT_EQ(body["messages"][1]["content"][1]["input"]["edits"]["tp"], 2);
    const json& results = body["messages"][2];
    EXPECT_EQ(results["role"], "user");
    ASSERT_EQ(results["content"].size(), 2U);
    EXPECT_EQ(results["content"][0]["tool_use_id"], "c1");
    EXPECT_EQ(results["content"][1]["is_error"], true);
    EXPECT_EQ(body["max_tokens"], 100);
}

TEST(LlmWire, BedrockUsesToolUseAndToolResultBlocksAndKeepsTheModelOutOfTheBody) {
    const json body = encode_request(Provider::bedrock, "m", two_tool_round(), k_tools, 100);
    EXPECT_FALSE(body.contains("model"));
    EXPECT_EQ(body["system"][0]["text"], "rules");
    ASSERT_EQ(body["messages"].size(), 3U);
    EXPECT_EQ(body["messages"][1]["content"][2]["toolUse"]["toolUseId"], "c2");
    EXPECT_EQ(body["messages"][2]["content"][1]["toolResult"]["status"], "error");
    EXPECT_EQ(body["inferenceConfig"]["maxTokens"], 100);
    EXPECT_EQ(body["toolConfig"]["tools"][0]["toolSpec"]["name"], "estimate");
}

TEST(LlmWire, NoToolsMeansNoToolsField) {
    EXPECT_FALSE(encode_request(Provider::openai, "m", {Message::user("hi")}, {}, 10).contains("tools"));
    EXPECT_FALSE(encode_request(Provider::bedrock, "m", {Message::user("hi")}, {}, 10).contains("toolConfig"));
}

TEST(LlmWire, ArgumentsThatAreJsonButNotAnObjectAreUnusable) {
    const json body{{"choices", {{{"message", {{"tool_calls", {{{"id", "1"}, {"function", {{"name", "estimate"},
                                                                                        {"arguments", "[1,2]"}}}}}}}}}}}};
    const Reply reply = decode_response(Provider::openai, body, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_EQ(reply.tool_calls[0].error, "arguments must be a JSON object, not array");
}

// Some OpenAI-compatible servers (Ollama, a few vLLM parsers) send arguments as an object.
TEST(LlmWire, OpenAiArgumentsAsAnObjectAreAccepted) {
    const json body{{"choices", {{{"message", {{"content", nullptr}, {"tool_calls", {{{"id", "1"},
        {"function", {{"name", "estimate"}, {"arguments", {{"edits", json::object()}}}}}}}}}}}}}};
    const Reply reply = decode_response(Provider::openai, body, k_tools);
    ASSERT_EQ(reply.tool_calls.size(), 1U);
    EXPECT_TRUE(reply.tool_calls[0].usable());
    EXPECT_EQ(reply.text, "");
}

TEST(LlmWire, FieldsOfTheWrongTypeAreABadResponseNotACrash) {
    for (const auto provider : {Provider::openai, Provider::anthropic, Provider::bedrock}) {
        for (const char* text : {R"([])", R"({"choices":[7]})", R"({"choices":[{"message":{"content":5,"tool_calls":"x"}}]})",
                                 R"({"content":[{"type":"tool_use","id":3,"name":null}]})",
                                 R"({"output":{"message":{"content":[{"toolUse":[]},{"text":1}]}},"usage":{"inputTokens":"9"}})"}) {
            try {
                (void)decode_response(provider, json::parse(text), k_tools);
            } catch (const LlmError& error) {
                EXPECT_EQ(error.kind(), FailureKind::bad_response) << text;
            }
        }
    }
}

TEST(LlmWire, ReadsEachProvidersErrorMessage) {
    EXPECT_EQ(error_message(json::parse(R"({"error":{"message":"bad key","type":"x"}})")), "bad key");
    EXPECT_EQ(error_message(json::parse(R"({"type":"error","error":{"type":"overloaded_error","message":"busy"}})")), "busy");
    EXPECT_EQ(error_message(json::parse(R"({"message":"The security token included in the request is invalid."})")),
              "The security token included in the request is invalid.");
    EXPECT_EQ(error_message(json::parse("[1]")), "");
}

TEST(LlmExchange, RoundTripsThroughJson) {
    Exchange exchange;
    exchange.provider = "anthropic";
    exchange.model = "m";
    exchange.url = "https://api.anthropic.com/v1/messages";
    exchange.request = {{"model", "m"}};
    exchange.response = "not json";
    exchange.error = "the anthropic response is not a chat reply";
    exchange.status = 200;
    exchange.attempts = {{429, "HTTP 429", 0.1, 2.0}, {200, "", 0.2, 0}};
    exchange.latency_s = 2.3;
    exchange.usage = {10, 20};
    const Exchange back = exchange_from_json(to_json(exchange));
    EXPECT_EQ(to_json(back), to_json(exchange));
    EXPECT_EQ(back.attempts[0].waited_s, 2.0);
    EXPECT_EQ(back.usage.output_tokens, 20);
}

TEST(LlmRetry, RetriesRateLimitsAndServerErrorsOnly) {
    for (const long status : {408L, 409L, 429L, 500L, 502L, 503L, 529L}) EXPECT_TRUE(retryable_status(status)) << status;
    for (const long status : {400L, 401L, 403L, 404L, 413L, 422L}) EXPECT_FALSE(retryable_status(status)) << status;
}

TEST(LlmRetry, ReadsRetryAfterInSecondsOrMilliseconds) {
    HttpResponse response;
    response.headers = {{"Retry-After", "2"}};
    EXPECT_EQ(requested_wait(response), std::chrono::milliseconds(2000));
    response.headers = {{"retry-after", "0.5"}};
    EXPECT_EQ(requested_wait(response), std::chrono::milliseconds(500));
    response.headers = {{"Retry-After", "1"}, {"retry-after-ms", "250"}};
    EXPECT_EQ(requested_wait(response), std::chrono::milliseconds(250));
    response.headers = {{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}};
    EXPECT_FALSE(requested_wait(response).has_value());
    response.headers = {{"Retry-After", "-3"}};
    EXPECT_FALSE(requested_wait(response).has_value());
}

TEST(LlmRetry, BackOffDoublesUpToTheCapWithJitterOfAtMostHalf) {
    Config config;
    config.backoff_base = std::chrono::milliseconds(1000);
    config.backoff_max = std::chrono::milliseconds(8000);
    EXPECT_EQ(backoff_delay(config, 0, 1.0), std::chrono::milliseconds(1000));
    EXPECT_EQ(backoff_delay(config, 2, 1.0), std::chrono::milliseconds(4000));
    EXPECT_EQ(backoff_delay(config, 10, 1.0), std::chrono::milliseconds(8000));
    EXPECT_EQ(backoff_delay(config, 1, 0.5), std::chrono::milliseconds(1000));
    EXPECT_EQ(backoff_delay(config, 1, 0.0), std::chrono::milliseconds(1000));  // jitter clamps to [0.5, 1]
    EXPECT_EQ(backoff_delay(config, 1000, 1.0), std::chrono::milliseconds(8000));
}
