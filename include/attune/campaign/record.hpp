#pragma once
// A campaign rebuilt from its journal alone: every trial, where it stands, what it cost. The
// loop, `--resume`, `attune report` and `attune lessons` all read campaigns through this fold.

#include <attune/policy/policy.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>

#include <optional>
#include <string>
#include <vector>

namespace attune::campaign {

/// Where a trial stands. Terminal stages: refused, predicted, decided, confirmed.
enum class Stage { proposed, gated, refused, preflighted, predicted, launched, measured, decided, confirmed };

struct TrialRecord {
    policy::TrialView view;                  ///< what policies see (n, kind, lever, edits, outcome, ...)
    Stage stage = Stage::proposed;
    std::string rationale;
    std::string answers;
    int repeat_of = -1;                      ///< a second run of that candidate (its gain was inside the noise band)
    nlohmann::json verdict;                  ///< the gate's verdict document
    std::string refusal;                     ///< why the gate or the preflight stopped it
    double time_limit_s = 0;
    double worst_case_gpu_s = 0;
    int steps = 0;
    int attempts = 0;
    std::string job_id;                      ///< of the latest attempt
    std::string recipe_file;                 ///< relative to the campaign folder
    std::vector<double> losses;
    std::vector<std::string> evidence;       ///< `line: text` of the deciding log lines
    std::vector<std::string> logs;           ///< relative to the campaign folder
    double gpu_seconds = 0;                  ///< every attempt's charge
    std::string decision;                    ///< accept | revert (candidates), confirmed | unconfirmed
    std::string reason;
    std::optional<double> gain;

    [[nodiscard]] bool open() const {
        return stage != Stage::refused && stage != Stage::predicted && stage != Stage::decided &&
               stage != Stage::confirmed;
    }
};

struct CampaignRecord {
    nlohmann::json start;                    ///< the campaign-start event
    std::vector<TrialRecord> trials;
    int incumbent = 0;                       ///< trial number of the best accepted configuration
    double spent_gpu_s = 0;
    std::optional<nlohmann::json> end;       ///< the campaign-end event
    std::size_t llm_exchanges = 0;
    long llm_input_tokens = 0;               ///< as the provider counted them, over every exchange
    long llm_output_tokens = 0;
    std::size_t llm_refusals = 0;            ///< answers the agent's harness refused
    std::size_t llm_fallbacks = 0;           ///< steps handed to the rules policy

    [[nodiscard]] double budget_gpu_s() const { return start.value("budget_gpu_seconds", 0.0); }
    [[nodiscard]] double left_gpu_s() const { return budget_gpu_s() - spent_gpu_s; }
    [[nodiscard]] const TrialRecord* trial(int n) const;
    [[nodiscard]] TrialRecord* trial(int n);
    [[nodiscard]] const TrialRecord* baseline() const { return trials.empty() ? nullptr : &trials.front(); }
    [[nodiscard]] const TrialRecord& best() const { return *trial(incumbent); }
};

/// Folds journal events into a campaign. Throws InputError when the events are not a campaign
/// (no campaign-start first, a trial event for a trial never proposed).
CampaignRecord fold(const std::vector<nlohmann::json>& events);

/// Where a campaign writes its best recipe: `best` with the recipe copy's extension (its format).
std::filesystem::path best_recipe_path(const std::filesystem::path& dir, const CampaignRecord& record);

/// Folds events[from..] into `record`, the fold of events[..from): the same as fold(events), for a
/// caller that keeps the record and folds each event once (the campaign loop).
void fold_more(CampaignRecord& record, const std::vector<nlohmann::json>& events, std::size_t from);

/// Measurement and preflight to and from their journal form.
nlohmann::json to_json(const policy::Measurement& measured);
policy::Measurement measurement_from_json(const nlohmann::json& json);
nlohmann::json to_json(const policy::Preflight& preflight);
policy::Preflight preflight_from_json(const nlohmann::json& json);

std::string_view stage_name(Stage stage);

}  // namespace attune::campaign
