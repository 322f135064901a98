#pragma once

#include <attune/llm/client.hpp>

#include <memory>
#include <vector>

namespace attune::llm {

/// A client that answers from a campaign's recorded exchanges, in order, without a network:
/// `attune replay` re-drives an LLM campaign through today's code with it. A recorded failure
/// is thrown again; when the record runs out it throws cap_exceeded (the replay diverged).
std::unique_ptr<Client> make_replay_client(std::vector<Exchange> recorded);

}  // namespace attune::llm
