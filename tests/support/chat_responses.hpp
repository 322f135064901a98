#pragma once

// OpenAI-compatible chat-completion answers for the loopback server, shared by the suites that
// drive the llm policy (tune, bench).

#include "loopback_server.hpp"

#include <string>

namespace attune::test_support {

/// A 200 whose assistant message calls tool `name` with `arguments` (a JSON text, sent as is so
/// that malformed arguments can be scripted); usage 1200 prompt + 40 completion tokens.
ScriptedResponse tool_call(const std::string& name, const std::string& arguments);

/// A 200 whose assistant message is `text` and calls no tool; usage 900 + 12 tokens.
ScriptedResponse text_only(const std::string& text);

}  // namespace attune::test_support
