#include <attune/llm/types.hpp>

namespace attune::llm {

const char* to_string(Role role) {
    switch (role) {
    case Role::system: return "system";
    case Role::user: return "user";
    case Role::assistant: return "assistant";
    case Role::tool: return "tool";
    }
    return "user";
}

Message Message::system(std::string text) { return {Role::system, std::move(text), {}, {}, {}, false}; }

Message Message::user(std::string text) { return {Role::user, std::move(text), {}, {}, {}, false}; }

Message Message::assistant(std::string text, std::vector<ToolCall> calls) {
    return {Role::assistant, std::move(text), std::move(calls), {}, {}, false};
}

Message Message::tool_result(const ToolCall& call, std::string text, ToolOutcome outcome) {
    return {Role::tool, std::move(text), {}, call.id, call.name, outcome == ToolOutcome::failed};
}

Usage& Usage::operator+=(const Usage& other) {
    input_tokens += other.input_tokens;
    output_tokens += other.output_tokens;
    return *this;
}

nlohmann::json to_json(const ToolCall& call) {
    nlohmann::json out{{"id", call.id}, {"name", call.name}, {"arguments", call.arguments},
                       {"raw_arguments", call.raw_arguments}};
    if (!call.error.empty()) out["error"] = call.error;
    return out;
}

nlohmann::json to_json(const Exchange& exchange) {
    nlohmann::json attempts = nlohmann::json::array();
    for (const auto& attempt : exchange.attempts) {
        nlohmann::json entry{{"status", attempt.status}, {"latency_s", attempt.latency_s}};
        if (!attempt.error.empty()) entry["error"] = attempt.error;
        if (attempt.waited_s > 0) entry["waited_s"] = attempt.waited_s;
        attempts.push_back(std::move(entry));
    }
    nlohmann::json out{{"provider", exchange.provider},
                       {"model", exchange.model},
                       {"url", exchange.url},
                       {"request", exchange.request},
                       {"response", exchange.response},
                       {"status", exchange.status},
                       {"attempts", std::move(attempts)},
                       {"latency_s", exchange.latency_s},
                       {"usage", {{"input_tokens", exchange.usage.input_tokens},
                                  {"output_tokens", exchange.usage.output_tokens}}}};
    if (!exchange.error.empty()) out["error"] = exchange.error;
    return out;
}

Exchange exchange_from_json(const nlohmann::json& json) {
    Exchange out;
    out.provider = json.value("provider", "");
    out.model = json.value("model", "");
    out.url = json.value("url", "");
    out.request = json.value("request", nlohmann::json());
    out.response = json.value("response", nlohmann::json());
    out.error = json.value("error", "");
    out.status = json.value("status", 0);
    out.latency_s = json.value("latency_s", 0.0);
    for (const auto& entry : json.value("attempts", nlohmann::json::array())) {
        out.attempts.push_back({entry.value("status", 0), entry.value("error", ""), entry.value("latency_s", 0.0),
                                entry.value("waited_s", 0.0)});
    }
    const auto usage = json.value("usage", nlohmann::json::object());
    out.usage = {usage.value("input_tokens", 0L), usage.value("output_tokens", 0L)};
    return out;
}

}  // namespace attune::llm
