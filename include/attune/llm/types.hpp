#pragma once
// The provider-neutral vocabulary of a chat with tools: what attune sends (messages, tool specs),
// what comes back (a reply with tool calls and token usage), and the record of one HTTP exchange
// that the campaign journal keeps. Each provider's wire format is mapped onto these in src/llm/.

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attune::llm {

/// A tool the model may call: its name, what it does, and a JSON schema of its arguments.
struct ToolSpec {
    std::string name;
    std::string description;
    nlohmann::json parameters = nlohmann::json::object();  ///< JSON schema of an object
};

/// One call the model asked for. Untrusted: `error` says why it cannot be used, if it cannot.
struct ToolCall {
    std::string id;                 ///< the provider's id, echoed back in the tool result
    std::string name;
    nlohmann::json arguments;       ///< a JSON object when `error` is empty; null otherwise
    std::string raw_arguments;      ///< the arguments exactly as the model wrote them
    std::string error;              ///< empty when usable; else e.g. "arguments are not JSON: ..."

    [[nodiscard]] bool usable() const { return error.empty(); }
};

enum class Role { system, user, assistant, tool };

enum class ToolOutcome { ok, failed };

/// "system", "user", "assistant", "tool".
const char* to_string(Role role);

/// One turn of the conversation. Assistant turns may carry tool calls; tool turns answer one call.
struct Message {
    Role role = Role::user;
    std::string text;
    std::vector<ToolCall> tool_calls;  ///< assistant turns only
    std::string tool_call_id;          ///< tool turns: the call this answers
    std::string tool_name;             ///< tool turns: the tool that was called
    bool tool_failed = false;          ///< tool turns: the result reports a failure or a refusal

    static Message system(std::string text);
    static Message user(std::string text);
    static Message assistant(std::string text, std::vector<ToolCall> calls = {});
    /// The answer to `call`; ToolOutcome::failed marks a refusal or an error so the model reads it as one.
    static Message tool_result(const ToolCall& call, std::string text, ToolOutcome outcome = ToolOutcome::ok);
};

/// Tokens as the provider counted them.
struct Usage {
    long input_tokens = 0;
    long output_tokens = 0;

    [[nodiscard]] long total() const { return input_tokens + output_tokens; }
    Usage& operator+=(const Usage& other);
};

/// What the model answered: text, tool calls (possibly none), usage and why it stopped.
struct Reply {
    std::string text;
    std::vector<ToolCall> tool_calls;
    Usage usage;
    std::string stop_reason;  ///< the provider's own word: tool_use, tool_calls, end_turn, stop, ...
};

/// One HTTP attempt within an exchange, for the journal: why it was retried, if it was.
struct Attempt {
    int status = 0;           ///< HTTP status; 0 when no response came
    std::string error;        ///< transport error or HTTP error summary; empty on success
    double latency_s = 0;
    double waited_s = 0;      ///< the back-off slept after this attempt (0 for the last)
};

/// One call to chat(), as the journal records it. Never holds API keys, auth or signature
/// headers: only the URL (without user info), the JSON body sent and what came back.
struct Exchange {
    std::string provider;
    std::string model;
    std::string url;
    nlohmann::json request;       ///< the JSON body sent
    nlohmann::json response;      ///< the JSON body received; a string when it was not JSON; null when none
    std::string error;            ///< empty on success; else what the caller was told
    int status = 0;               ///< HTTP status of the last attempt; 0 when none came
    std::vector<Attempt> attempts;
    double latency_s = 0;         ///< wall time of the whole call, back-off included
    Usage usage;
};

nlohmann::json to_json(const ToolCall& call);
nlohmann::json to_json(const Exchange& exchange);
Exchange exchange_from_json(const nlohmann::json& json);

}  // namespace attune::llm
