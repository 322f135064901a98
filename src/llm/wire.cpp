#include <attune/llm/wire.hpp>

#include <attune/llm/client.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::llm {

using nlohmann::json;

namespace {

[[noreturn]] void bad_shape(Provider provider, const std::string& what) {
    throw LlmError(FailureKind::bad_response,
                   fmt::format("the {} response is not a chat reply: {}", to_string(provider), what));
}

std::string join_system(const std::vector<Message>& messages) {
    std::string out;
    for (const auto& message : messages) {
        if (message.role != Role::system) continue;
        if (!out.empty()) out += "\n\n";
        out += message.text;
    }
    return out;
}

// Replayed assistant turns must carry an object as tool input even when the model wrote garbage.
json input_object(const ToolCall& call) { return call.arguments.is_object() ? call.arguments : json::object(); }

// --- untrusted tool calls -------------------------------------------------------------------

std::string offered_names(const std::vector<ToolSpec>& tools) {
    std::string out;
    for (const auto& tool : tools) out += (out.empty() ? "" : ", ") + tool.name;
    return out.empty() ? "none" : out;
}

// Arguments arrive as text (OpenAI) or as JSON (Anthropic, Bedrock, some OpenAI-compatible
// servers); either way the caller gets an object or a reason why not.
ToolCall make_call(std::string id, std::string name, const json& arguments, const std::vector<ToolSpec>& tools) {
    ToolCall call;
    call.id = std::move(id);
    call.name = std::move(name);
    if (arguments.is_string()) {
        call.raw_arguments = arguments.get<std::string>();
        call.arguments = json::parse(call.raw_arguments, nullptr, false);
        if (call.arguments.is_discarded()) {
            call.arguments = nullptr;
            call.error = "arguments are not JSON";
        }
    } else {
        call.raw_arguments = arguments.dump();
        call.arguments = arguments;
    }
    if (call.error.empty() && call.raw_arguments.empty()) call.arguments = json::object();  // "no arguments"
    if (call.error.empty() && !call.arguments.is_object()) {
        call.error = fmt::format("arguments must be a JSON object, not {}", call.arguments.type_name());
        call.arguments = nullptr;
    }
    const bool known = std::any_of(tools.begin(), tools.end(), [&](const ToolSpec& tool) { return tool.name == call.name; });
    if (!known) call.error = fmt::format("unknown tool '{}' (offered: {})", call.name, offered_names(tools));
    return call;
}

std::string string_or_empty(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

long count_or_zero(const json& object, const char* key) {
    if (!object.is_object()) return 0;
    const auto it = object.find(key);
    return it != object.end() && it->is_number() ? it->get<long>() : 0;
}

// --- OpenAI chat completions ----------------------------------------------------------------

json openai_message(const Message& message) {
    json out{{"role", to_string(message.role)}};
    if (message.role == Role::tool) {
        out["tool_call_id"] = message.tool_call_id;
        out["content"] = message.tool_failed ? "ERROR: " + message.text : message.text;
        return out;
    }
    out["content"] = message.text.empty() && !message.tool_calls.empty() ? json(nullptr) : json(message.text);
    if (!message.tool_calls.empty()) {
        out["tool_calls"] = json::array();
        for (const auto& call : message.tool_calls)
            out["tool_calls"].push_back({{"id", call.id},
                                         {"type", "function"},
                                         {"function", {{"name", call.name},
                                                       {"arguments", call.raw_arguments.empty() ? "{}" : call.raw_arguments}}}});
    }
    return out;
}

json openai_request(const std::string& model, const std::vector<Message>& messages, const std::vector<ToolSpec>& tools,
                    int max_output_tokens) {
    json body{{"model", model}, {"messages", json::array()}, {"max_completion_tokens", max_output_tokens}};
    for (const auto& message : messages) body["messages"].push_back(openai_message(message));
    if (!tools.empty()) {
        body["tools"] = json::array();
        for (const auto& tool : tools)
            body["tools"].push_back({{"type", "function"},
                                     {"function", {{"name", tool.name}, {"description", tool.description},
                                                   {"parameters", tool.parameters}}}});
    }
    return body;
}

Reply openai_reply(const json& body, const std::vector<ToolSpec>& tools) {
    const auto choices = body.find("choices");
    if (choices == body.end() || !choices->is_array() || choices->empty()) bad_shape(Provider::openai, "no choices");
    const json& choice = choices->front();
    const auto message = choice.find("message");
    if (!choice.is_object() || message == choice.end() || !message->is_object())
        bad_shape(Provider::openai, "no choices[0].message");
    Reply reply;
    reply.text = string_or_empty(*message, "content");
    reply.stop_reason = string_or_empty(choice, "finish_reason");
    for (const auto& call : message->value("tool_calls", json::array())) {
        if (!call.is_object()) continue;
        const json function = call.value("function", json::object());
        if (!function.is_object()) continue;
        reply.tool_calls.push_back(make_call(string_or_empty(call, "id"), string_or_empty(function, "name"),
                                             function.value("arguments", json("")), tools));
    }
    const json usage = body.value("usage", json::object());
    reply.usage = {count_or_zero(usage, "prompt_tokens"), count_or_zero(usage, "completion_tokens")};
    return reply;
}

// --- Anthropic Messages ---------------------------------------------------------------------

// Anthropic wants alternating user/assistant turns, and every tool result answering one
// assistant turn inside the single user turn that follows it: adjacent same-role blocks merge.
void append_turn(json& turns, const char* role, json blocks) {
    if (!turns.empty() && turns.back()["role"] == role) {
        for (auto& block : blocks) turns.back()["content"].push_back(std::move(block));
        return;
    }
    turns.push_back({{"role", role}, {"content", std::move(blocks)}});
}

json anthropic_blocks(const Message& message) {
    json blocks = json::array();
    if (message.role == Role::tool) {
        blocks.push_back({{"type", "tool_result"}, {"tool_use_id", message.tool_call_id},
                          {"content", message.text}, {"is_error", message.tool_failed}});
        return blocks;
    }
    if (!message.text.empty()) blocks.push_back({{"type", "text"}, {"text", message.text}});
    for (const auto& call : message.tool_calls)
        blocks.push_back({{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", input_object(call)}});
    return blocks;
}

json anthropic_request(const std::string& model, const std::vector<Message>& messages,
                       const std::vector<ToolSpec>& tools, int max_output_tokens) {
    json body{{"model", model}, {"max_tokens", max_output_tokens}, {"messages", json::array()}};
    if (const auto system = join_system(messages); !system.empty()) body["system"] = system;
    for (const auto& message : messages) {
        if (message.role == Role::system) continue;
        auto blocks = anthropic_blocks(message);
        if (blocks.empty()) continue;
        append_turn(body["messages"], message.role == Role::assistant ? "assistant" : "user", std::move(blocks));
    }
    if (!tools.empty()) {
        body["tools"] = json::array();
        for (const auto& tool : tools)
            body["tools"].push_back(
                {{"name", tool.name}, {"description", tool.description}, {"input_schema", tool.parameters}});
    }
    return body;
}

Reply anthropic_reply(const json& body, const std::vector<ToolSpec>& tools) {
    const auto content = body.find("content");
    if (content == body.end() || !content->is_array()) bad_shape(Provider::anthropic, "no content array");
    Reply reply;
    for (const auto& block : *content) {
        if (!block.is_object()) continue;
        const auto type = string_or_empty(block, "type");
        if (type == "text") reply.text += string_or_empty(block, "text");
        if (type == "tool_use")
            reply.tool_calls.push_back(make_call(string_or_empty(block, "id"), string_or_empty(block, "name"),
                                                 block.value("input", json::object()), tools));
    }
    reply.stop_reason = string_or_empty(body, "stop_reason");
    const json usage = body.value("usage", json::object());
    reply.usage = {count_or_zero(usage, "input_tokens"), count_or_zero(usage, "output_tokens")};
    return reply;
}

// --- Bedrock Converse -----------------------------------------------------------------------

json bedrock_blocks(const Message& message) {
    json blocks = json::array();
    if (message.role == Role::tool) {
        // Bedrock refuses empty text blocks; a tool result always says something.
        const std::string text = message.text.empty() ? "(empty)" : message.text;
        blocks.push_back({{"toolResult", {{"toolUseId", message.tool_call_id},
                                          {"content", json::array({{{"text", text}}})},
                                          {"status", message.tool_failed ? "error" : "success"}}}});
        return blocks;
    }
    if (!message.text.empty()) blocks.push_back({{"text", message.text}});
    for (const auto& call : message.tool_calls)
        blocks.push_back({{"toolUse", {{"toolUseId", call.id}, {"name", call.name}, {"input", input_object(call)}}}});
    return blocks;
}

json bedrock_request(const std::vector<Message>& messages, const std::vector<ToolSpec>& tools, int max_output_tokens) {
    // The model id travels in the URL path, not in the body.
    json body{{"messages", json::array()}, {"inferenceConfig", {{"maxTokens", max_output_tokens}}}};
    if (const auto system = join_system(messages); !system.empty()) body["system"] = json::array({{{"text", system}}});
    for (const auto& message : messages) {
        if (message.role == Role::system) continue;
        auto blocks = bedrock_blocks(message);
        if (blocks.empty()) continue;
        append_turn(body["messages"], message.role == Role::assistant ? "assistant" : "user", std::move(blocks));
    }
    if (!tools.empty()) {
        json specs = json::array();
        for (const auto& tool : tools)
            specs.push_back({{"toolSpec", {{"name", tool.name}, {"description", tool.description},
                                           {"inputSchema", {{"json", tool.parameters}}}}}});
        body["toolConfig"] = {{"tools", std::move(specs)}};
    }
    return body;
}

Reply bedrock_reply(const json& body, const std::vector<ToolSpec>& tools) {
    const json output = body.value("output", json::object());
    const json message = output.is_object() ? output.value("message", json::object()) : json::object();
    const json content = message.is_object() ? message.value("content", json()) : json();
    if (!content.is_array()) bad_shape(Provider::bedrock, "no output.message.content array");
    Reply reply;
    for (const auto& block : content) {
        if (!block.is_object()) continue;
        if (block.contains("text") && block["text"].is_string()) reply.text += block["text"].get<std::string>();
        const auto use = block.find("toolUse");
        if (use != block.end() && use->is_object())
            reply.tool_calls.push_back(make_call(string_or_empty(*use, "toolUseId"), string_or_empty(*use, "name"),
                                                 use->value("input", json::object()), tools));
    }
    reply.stop_reason = string_or_empty(body, "stopReason");
    const json usage = body.value("usage", json::object());
    reply.usage = {count_or_zero(usage, "inputTokens"), count_or_zero(usage, "outputTokens")};
    return reply;
}

}  // namespace

json encode_request(Provider provider, const std::string& model, const std::vector<Message>& messages,
                    const std::vector<ToolSpec>& tools, int max_output_tokens) {
    switch (provider) {
    case Provider::openai: return openai_request(model, messages, tools, max_output_tokens);
    case Provider::anthropic: return anthropic_request(model, messages, tools, max_output_tokens);
    case Provider::bedrock: return bedrock_request(messages, tools, max_output_tokens);
    }
    return {};
}

Reply decode_response(Provider provider, const json& body, const std::vector<ToolSpec>& tools) {
    if (!body.is_object()) bad_shape(provider, fmt::format("a JSON {}, not an object", body.type_name()));
    // nlohmann throws type_error on a field of an unexpected type deep inside; that is still a
    // malformed answer, reported as one.
    try {
        switch (provider) {
        case Provider::openai: return openai_reply(body, tools);
        case Provider::anthropic: return anthropic_reply(body, tools);
        case Provider::bedrock: return bedrock_reply(body, tools);
        }
    } catch (const json::exception& error) {
        bad_shape(provider, error.what());
    }
    return {};
}

std::string error_message(const json& body) {
    if (!body.is_object()) return {};
    if (const auto error = body.find("error"); error != body.end()) {
        if (error->is_string()) return error->get<std::string>();
        if (error->is_object()) return string_or_empty(*error, "message");
    }
    if (auto message = string_or_empty(body, "message"); !message.empty()) return message;
    return string_or_empty(body, "Message");
}

}  // namespace attune::llm
