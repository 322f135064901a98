#include "baseline_common.hpp"

#include <nlohmann/json.hpp>

namespace attune::policy::baseline {

const ConfigSpace& SpaceHolder::space(const CampaignState& state) {
    if (!m_space) m_space = std::make_unique<ConfigSpace>(*state.original, *state.adapter, *state.cluster, *state.rules, *state.gate_policy);
    return *m_space;
}

std::vector<Tried> SpaceHolder::history(const CampaignState& state) {
    const ConfigSpace& s = space(state);
    std::vector<Tried> out;
    for (const auto& trial : state.history) {
        const std::string key = edits_to_json(trial.edits).dump();
        auto it = m_points.find(key);
        if (it == m_points.end()) it = m_points.emplace(key, s.point_of(trial.edits)).first;
        if (!it->second) continue;
        Tried t{*it->second, std::nullopt, false};
        if (trial.measured) {
            if (trial.measured->status == "ok" && trial.measured->tokens_per_s_per_gpu)
                t.tokens_per_s_per_gpu = trial.measured->tokens_per_s_per_gpu;
            else
                t.failed = true;
        } else if (trial.outcome == "refused" || trial.outcome == "predicted-oom" ||
                   trial.outcome == "infeasible") {
            t.failed = true;
        }
        out.push_back(std::move(t));
    }
    return out;
}

std::set<Point> SpaceHolder::tried(const CampaignState& state) {
    std::set<Point> out;
    for (const auto& t : history(state)) out.insert(t.point);
    return out;
}

Proposal whole_configuration(const ConfigSpace& space, const Point& point, const std::string& move,
                             const std::string& why) {
    return Proposal{"configuration", move, space.edits(point), why + ": " + space.describe(point), ""};
}

std::uint64_t call_seed(std::uint64_t seed, const CampaignState& state) {
    std::uint64_t x =
        seed * 0x9E3779B97F4A7C15ULL + std::uint64_t(state.history.size()) * 0xD1B54A32D192ED03ULL + 1;
    x ^= x >> 29;
    return x * 0xBF58476D1CE4E5B9ULL;
}

}  // namespace attune::policy::baseline
