#pragma once
// Each provider's JSON format, both ways, with no I/O: the HTTP client uses it, and so can replay,
// which decodes a recorded response body without a network.

#include <attune/llm/config.hpp>
#include <attune/llm/types.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attune::llm {

/// The request body for `provider`: the conversation, the tools and the output-token limit.
nlohmann::json encode_request(Provider provider, const std::string& model, const std::vector<Message>& messages,
                              const std::vector<ToolSpec>& tools, int max_output_tokens);

/// The reply in a 2xx response body. Tool calls naming a tool not in `tools`, or whose arguments
/// are not a JSON object, come back with ToolCall::error set. Throws LlmError (bad_response)
/// when the body is not the provider's reply shape.
Reply decode_response(Provider provider, const nlohmann::json& body, const std::vector<ToolSpec>& tools);

/// The provider's own error message in an error body ("error.message", "message"), or empty.
std::string error_message(const nlohmann::json& body);

}  // namespace attune::llm
