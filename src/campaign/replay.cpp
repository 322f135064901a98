#include <attune/campaign/factories.hpp>
#include <attune/campaign/replay.hpp>
#include <attune/core/error.hpp>
#include <attune/llm/replay_client.hpp>
#include <attune/policy/llm_policy.hpp>
#include <attune/policy/rules_policy.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace attune::campaign {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// A temporary folder removed when the replay is done, whatever happens.
class ScratchDir {
public:
    ScratchDir() {
        std::string pattern = (fs::temp_directory_path() / "attune-replay-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) throw RuntimeFailure(std::string("cannot create a temporary folder: ") + std::strerror(errno));
        m_path = pattern;
    }
    ~ScratchDir() {
        std::error_code ignored;
        fs::remove_all(m_path, ignored);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    [[nodiscard]] const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

Settings settings_of(const fs::path& dir, const json& start) {
    Settings s;
    s.recipe = dir / start.value("recipe_file", "recipes/original.yaml");  // journals older than recipe_file held YAML
    s.framework = start.value("framework", "");
    s.budget_gpu_s = start.value("budget_gpu_seconds", 0.0);
    s.trial_steps = start.value("trial_steps", k_default_trial_steps);
    s.backend = "replay";
    if (start.contains("cluster_file") && start["cluster_file"].is_string()) s.cluster_file = dir / start["cluster_file"].get<std::string>();
    if (start.contains("gate_policy_file") && start["gate_policy_file"].is_string())
        s.gate_policy = dir / start["gate_policy_file"].get<std::string>();
    if (start.contains("model_config_file") && start["model_config_file"].is_string())
        s.model_config = dir / start["model_config_file"].get<std::string>();
    s.policy = start.value("policy", "rules");
    s.seed = start.value("seed", std::uint64_t{1});
    s.world_seed = start.value("world_seed", std::uint64_t{0});
    s.llm = start.value("llm", "");
    s.llm_url = start.value("llm_url", "");
    s.no_skills = start.value("no_skills", false);
    s.replayed_fixed_startup_s = fixed_startup_of(start);
    // The baselines launch what the preflight predicts to fail, and propose whole configurations.
    s.preflight_verdicts = start.value("preflight_verdicts", true);
    s.max_levers = max_levers_of(start);
    s.blind = start.value("blind", false);
    // The lessons it read, from its own copies: the same files match the same recipe again.
    if (!start.value("lessons", json::array()).empty()) s.lessons_dir = dir / "lessons";
    return s;
}

std::map<std::pair<int, int>, launch::Outcome> recorded_outcomes(const fs::path& dir, const std::vector<json>& events) {
    std::map<std::pair<int, int>, launch::Outcome> out;
    for (const auto& e : events) {
        if (e.value("type", "") != "metrics") continue;
        launch::Outcome o;
        for (const auto& log : e.value("logs", std::vector<std::string>{})) o.logs.push_back(dir / log);
        o.exit_code = e.value("exit_code", 0);
        o.state = e.value("state", "");
        o.elapsed_s = e.value("elapsed_s", 0.0);
        o.gpus = e.value("gpus", 0);
        o.gpu_seconds = e.value("gpu_seconds", 0.0);
        o.charged_from = e.value("charged_from", "");
        out[{e.value("trial", -1), e.value("attempt", 1)}] = std::move(o);
    }
    return out;
}

std::unique_ptr<policy::Policy> replay_policy(const Settings& s, const Context& context, const std::vector<json>& events) {
    if (s.policy != "llm") return make_policy({.name = s.policy, .llm = {}, .llm_url = {}, .no_skills = s.no_skills, .seed = s.seed}, context);
    std::vector<llm::Exchange> exchanges;
    for (const auto& e : events)
        if (e.value("type", "") == "llm-exchange") exchanges.push_back(llm::exchange_from_json(e));
    return policy::make_llm_policy(llm::make_replay_client(std::move(exchanges)),
                                   policy::make_rules_policy(policy::default_search_rules(), context.lessons), {.skills = !s.no_skills},
                                   context.lessons);
}

/// The decisions of a journal, without what legitimately differs between runs (times, job ids).
std::vector<json> decisions(const std::vector<json>& events) {
    std::vector<json> out;
    for (const auto& e : events) {
        const std::string type = e.value("type", "");
        if (type == "trial-proposed")
            out.push_back({{"type", type}, {"trial", e["trial"]}, {"kind", e["kind"]}, {"lever", e["lever"]}, {"edits", e["edits"]}});
        else if (type == "gate-verdict")
            out.push_back({{"type", type}, {"trial", e["trial"]}, {"allowed", e["allowed"]}, {"refused", e["refused"]}});
        else if (type == "preflight")
            out.push_back({{"type", type}, {"trial", e["trial"]}, {"verdict", e["verdict"]}});
        else if (type == "metrics")
            out.push_back({{"type", type}, {"trial", e["trial"]}, {"attempt", e["attempt"]}, {"status", e["measured"]["status"]}});
        else if (type == "decision")
            out.push_back({{"type", type}, {"trial", e["trial"]}, {"decision", e["decision"]}});
        else if (type == "llm-refused" || type == "llm-fallback")
            out.push_back({{"type", type}, {"reason", e["reason"]}});
        else if (type == "campaign-end")
            out.push_back({{"type", type}, {"reason", e["reason"]}, {"best_trial", e["best_trial"]}});
    }
    return out;
}

}  // namespace

ReplayResult replay(const fs::path& dir) {
    const Opened recorded = reopen(dir, /*lock=*/false);
    const auto& events = recorded.journal.events();
    if (!fold(events).end) throw InputError(dir.string() + ": the campaign has not finished; replay needs a finished campaign");
    const Settings settings = settings_of(dir, events.front());
    const ScratchDir scratch;
    Opened fresh = create(scratch.path() / "campaign", settings);
    auto policy = replay_policy(settings, fresh.context, events);
    auto backend = launch::make_replay_backend(recorded_outcomes(dir, events));
    const std::atomic<bool> never{false};
    run(fresh.context, fresh.journal, *policy, *backend, {}, never);
    const auto before = decisions(events);
    const auto after = decisions(fresh.journal.events());
    ReplayResult result;
    result.compared = std::max(before.size(), after.size());
    for (std::size_t i = 0; i < result.compared; ++i) {
        const json a = i < before.size() ? before[i] : json(nullptr);
        const json b = i < after.size() ? after[i] : json(nullptr);
        if (a != b) result.differences.push_back({{"step", i + 1}, {"recorded", a}, {"replayed", b}});
    }
    return result;
}

}  // namespace attune::campaign
