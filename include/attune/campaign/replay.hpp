#pragma once
// `attune replay`: a recorded campaign re-driven through today's code. Recorded trial logs are
// served instead of launching, recorded LLM answers instead of calling a model; every decision
// (gate verdicts, preflight, statuses, accept/revert, stop) is recomputed and compared.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <vector>

namespace attune::campaign {

struct ReplayResult {
    std::size_t compared = 0;                 ///< decisions compared
    std::vector<nlohmann::json> differences;  ///< {step, recorded, replayed}, in journal order
    [[nodiscard]] bool agrees() const { return differences.empty(); }
};

/// Replays the campaign in `dir` into a temporary folder (the recorded one is only read).
ReplayResult replay(const std::filesystem::path& dir);

}  // namespace attune::campaign
