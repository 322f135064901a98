#include "chat_responses.hpp"

#include <nlohmann/json.hpp>

namespace attune::test_support {

using nlohmann::json;

ScriptedResponse tool_call(const std::string& name, const std::string& arguments) {
    json body{{"id", "chatcmpl-1"},
              {"object", "chat.completion"},
              {"choices",
               {{{"index", 0},
                 {"message",
                  {{"role", "assistant"},
                   {"content", nullptr},
                   {"tool_calls",
                    {{{"id", "call-" + name},
                      {"type", "function"},
                      {"function", {{"name", name}, {"arguments", arguments}}}}}}}},
                 {"finish_reason", "tool_calls"}}}},
              {"usage", {{"prompt_tokens", 1200}, {"completion_tokens", 40}, {"total_tokens", 1240}}}};
    return {200, body.dump(), {}, {}};
}

ScriptedResponse text_only(const std::string& text) {
    json body{{"id", "chatcmpl-2"},
              {"choices",
               {{{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", text}}},
                 {"finish_reason", "stop"}}}},
              {"usage", {{"prompt_tokens", 900}, {"completion_tokens", 12}}}};
    return {200, body.dump(), {}, {}};
}

}  // namespace attune::test_support
