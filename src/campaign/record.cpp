#include <attune/campaign/record.hpp>
#include <attune/core/error.hpp>

#include <fmt/format.h>

namespace attune::campaign {

namespace {

std::optional<double> optional_number(const nlohmann::json& json, const char* key) {
    if (!json.contains(key) || !json[key].is_number()) return std::nullopt;
    return json[key].get<double>();
}

void put(nlohmann::json& json, const char* key, const std::optional<double>& value) {
    if (value) json[key] = *value;
}

TrialRecord& trial_of(CampaignRecord& record, const nlohmann::json& event) {
    const int n = event.value("trial", -1);
    TrialRecord* trial = record.trial(n);
    if (trial == nullptr)
        throw InputError(fmt::format("journal event {} ({}) names trial {}, which was never proposed",
                                     event.value("seq", 0), event.value("type", ""), n));
    return *trial;
}

void on_proposed(CampaignRecord& record, const nlohmann::json& e) {
    TrialRecord trial;
    trial.view.n = e.at("trial").get<int>();
    trial.view.kind = e.value("kind", "candidate");
    trial.view.lever = e.value("lever", "");
    trial.view.move = e.value("move", "");
    trial.view.edits = policy::edits_from_json(e.value("edits", nlohmann::json::object()));
    trial.view.incumbent = e.value("incumbent", -1);
    trial.view.lesson = e.value("lesson", "");
    trial.view.outcome = "pending";
    trial.rationale = e.value("rationale", "");
    trial.answers = e.value("answers", "");
    trial.view.stepping_stone = e.value("stepping_stone", false);
    trial.view.plan_gain = e.value("plan_gain", 0.0);
    trial.repeat_of = e.value("repeat_of", -1);
    record.trials.push_back(std::move(trial));
}

void on_verdict(TrialRecord& trial, const nlohmann::json& e) {
    trial.verdict = e.value("verdict", nlohmann::json::object());
    if (e.value("allowed", false)) {
        trial.stage = Stage::gated;
        return;
    }
    trial.stage = Stage::refused;
    trial.view.outcome = "refused";
    trial.refusal = e.value("reason", "");
}

void on_preflight(TrialRecord& trial, const nlohmann::json& e) {
    trial.view.preflight = preflight_from_json(e.value("estimate", nlohmann::json::object()));
    trial.time_limit_s = e.value("time_limit_s", 0.0);
    trial.worst_case_gpu_s = e.value("worst_case_gpu_seconds", 0.0);
    trial.steps = e.value("steps", 0);
    const std::string verdict = e.value("verdict", "ok");
    if (verdict == "ok") {
        trial.stage = Stage::preflighted;
        return;
    }
    trial.stage = Stage::predicted;
    trial.view.outcome = verdict;
    trial.refusal = e.value("reason", "");
}

void on_launched(TrialRecord& trial, const nlohmann::json& e) {
    trial.stage = Stage::launched;
    trial.attempts = e.value("attempt", 1);
    trial.job_id = e.value("job_id", "");
    trial.recipe_file = e.value("recipe", "");
}

// An attempt cancelled by the user (Ctrl-C): what it ran is charged, and the trial goes back to
// waiting for its launch, so that a resumed campaign runs that attempt again.
void on_cancelled(CampaignRecord& record, TrialRecord& trial, const nlohmann::json& e) {
    const double charged = e.value("gpu_seconds", 0.0);
    trial.gpu_seconds += charged;
    record.spent_gpu_s += charged;
    trial.stage = Stage::preflighted;
}

void on_metrics(CampaignRecord& record, TrialRecord& trial, const nlohmann::json& e) {
    trial.stage = Stage::measured;
    trial.view.measured = measurement_from_json(e.value("measured", nlohmann::json::object()));
    trial.view.outcome = trial.view.measured->status;
    const double charged = e.value("gpu_seconds", 0.0);
    trial.gpu_seconds += charged;
    record.spent_gpu_s += charged;
    trial.losses = e.value("losses", std::vector<double>{});
    trial.evidence = e.value("evidence", std::vector<std::string>{});
    trial.logs = e.value("logs", std::vector<std::string>{});
}

void on_decision(CampaignRecord& record, TrialRecord& trial, const nlohmann::json& e) {
    trial.decision = e.value("decision", "");
    trial.reason = e.value("reason", "");
    trial.gain = optional_number(e, "gain");
    trial.stage = trial.view.kind == "confirm" ? Stage::confirmed : Stage::decided;
    trial.view.accepted = trial.decision == "accept";
    if (trial.view.accepted) record.incumbent = trial.view.n;
}

void on_exchange(CampaignRecord& record, const nlohmann::json& e) {
    ++record.llm_exchanges;
    const auto usage = e.value("usage", nlohmann::json::object());
    record.llm_input_tokens += usage.value("input_tokens", 0L);
    record.llm_output_tokens += usage.value("output_tokens", 0L);
}

}  // namespace

const TrialRecord* CampaignRecord::trial(int n) const {
    for (const auto& t : trials)
        if (t.view.n == n) return &t;
    return nullptr;
}

TrialRecord* CampaignRecord::trial(int n) {
    for (auto& t : trials)
        if (t.view.n == n) return &t;
    return nullptr;
}

CampaignRecord fold(const std::vector<nlohmann::json>& events) {
    CampaignRecord record;
    if (events.empty() || events.front().value("type", "") != "campaign-start")
        throw InputError("the journal does not begin with a campaign-start event");
    record.start = events.front();
    fold_more(record, events, 1);
    return record;
}

void fold_more(CampaignRecord& record, const std::vector<nlohmann::json>& events, std::size_t from) {
    for (std::size_t i = from; i < events.size(); ++i) {
        const auto& e = events[i];
        const std::string type = e.value("type", "");
        if (type == "trial-proposed") on_proposed(record, e);
        else if (type == "gate-verdict") on_verdict(trial_of(record, e), e);
        else if (type == "preflight") on_preflight(trial_of(record, e), e);
        else if (type == "launched") on_launched(trial_of(record, e), e);
        else if (type == "metrics") on_metrics(record, trial_of(record, e), e);
        else if (type == "cancelled") on_cancelled(record, trial_of(record, e), e);
        else if (type == "decision") on_decision(record, trial_of(record, e), e);
        else if (type == "incumbent-restored") record.incumbent = e.value("trial", record.incumbent);
        else if (type == "llm-exchange") on_exchange(record, e);
        else if (type == "llm-refused") ++record.llm_refusals;
        else if (type == "llm-fallback") ++record.llm_fallbacks;
        else if (type == "campaign-end") record.end = e;
    }
}

nlohmann::json to_json(const policy::Measurement& m) {
    nlohmann::json json{{"status", m.status}, {"bottleneck", m.bottleneck}, {"explanation", m.explanation}};
    put(json, "tokens_per_s_per_gpu", m.tokens_per_s_per_gpu);
    put(json, "tflops_per_gpu", m.tflops_per_gpu);
    put(json, "mfu", m.mfu);
    put(json, "step_time_s", m.step_time_s);
    put(json, "noise", m.noise);
    put(json, "peak_memory_gib", m.peak_memory_gib);
    json["facts"] = m.facts;
    return json;
}

policy::Measurement measurement_from_json(const nlohmann::json& json) {
    policy::Measurement m;
    m.status = json.value("status", "crash");
    m.bottleneck = json.value("bottleneck", "unknown");
    m.explanation = json.value("explanation", "");
    m.tokens_per_s_per_gpu = optional_number(json, "tokens_per_s_per_gpu");
    m.tflops_per_gpu = optional_number(json, "tflops_per_gpu");
    m.mfu = optional_number(json, "mfu");
    m.step_time_s = optional_number(json, "step_time_s");
    m.noise = optional_number(json, "noise");
    m.peak_memory_gib = optional_number(json, "peak_memory_gib");
    if (json.contains("facts") && json["facts"].is_object())
        for (const auto& [name, value] : json["facts"].items())
            if (value.is_number()) m.facts[name] = value.get<double>();
    return m;
}

nlohmann::json to_json(const policy::Preflight& p) {
    return {{"estimated", p.estimated}, {"valid", p.valid},           {"problem", p.problem},         {"fits", p.fits},
            {"memory_gib", p.memory_gib}, {"capacity_gib", p.capacity_gib}, {"step_time_s", p.step_time_s},
            {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}};
}

policy::Preflight preflight_from_json(const nlohmann::json& json) {
    return {json.value("estimated", false), json.value("valid", false),       json.value("problem", ""),          json.value("fits", false),
            json.value("memory_gib", 0.0),    json.value("capacity_gib", 0.0),    json.value("step_time_s", 0.0),
            json.value("tokens_per_s_per_gpu", 0.0)};
}

std::string_view stage_name(Stage stage) {
    constexpr std::string_view names[] = {"proposed", "gated",    "refused", "preflighted", "predicted",
                                          "launched", "measured", "decided", "confirmed"};
    return names[static_cast<int>(stage)];
}

std::filesystem::path best_recipe_path(const std::filesystem::path& dir, const CampaignRecord& record) {
    const std::filesystem::path copy = record.start.value("recipe_file", "recipes/original.yaml");
    return dir / ("best" + copy.extension().string());
}

}  // namespace attune::campaign
