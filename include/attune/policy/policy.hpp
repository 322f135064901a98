#pragma once
// One interface for every search strategy (rules, llm, random, bayes, grid), so that benches are
// fair: each sees the same campaign state and is judged by the same gate and ledger.

#include <attune/cluster/cluster.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>
#include <attune/recipe/document.hpp>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace attune::policy {

/// A configuration as edits to the original recipe: key path -> value, in key order.
using Edits = std::map<std::string, recipe::Value>;

/// What the nominal estimator (the preflight) predicts for a configuration.
struct Preflight {
    bool estimated = false;      ///< false: the estimator cannot model this recipe (`problem` says why)
    bool valid = false;          ///< false: the layout is inconsistent (`problem` says why)
    std::string problem;
    bool fits = false;
    double memory_gib = 0;
    double capacity_gib = 0;
    double step_time_s = 0;
    double tokens_per_s_per_gpu = 0;
};

/// What a trial's logs said, as a user would read them.
struct Measurement {
    std::string status;                      ///< diagnose's status name: ok, oom, nccl-timeout, ...
    std::optional<double> tokens_per_s_per_gpu, tflops_per_gpu, mfu, step_time_s, noise, peak_memory_gib;
    std::string bottleneck;                  ///< diagnose's bottleneck name, "unknown" when none
    std::string explanation;
    std::map<std::string, double> facts;     ///< the facts the diagnosis rules read
};

/// One trial as the policy sees the history.
struct TrialView {
    int n = 0;
    std::string kind;                        ///< baseline | candidate | confirm
    std::string lever;
    std::string move;                        ///< the policy's own name for the move it made
    Edits edits;                             ///< the whole configuration, against the original
    int incumbent = -1;                      ///< the incumbent it was proposed against
    std::string outcome;                     ///< refused | predicted-oom | infeasible | a status | pending
    std::optional<Preflight> preflight;
    std::optional<Measurement> measured;
    bool accepted = false;
    std::string lesson = {};                 ///< the lessons file the move came from (its name), if any
    bool stepping_stone = false;             ///< a step of the policy's plan (Proposal::stepping_stone)
    double plan_gain = 0;                    ///< the plan's target, predicted faster than the incumbent by this
};

/// Everything a policy may read. Never the simulated world's hidden factors.
struct CampaignState {
    const recipe::Document* original = nullptr;
    const gate::Adapter* adapter = nullptr;
    const cluster::Cluster* cluster = nullptr;
    int incumbent = 0;
    Edits incumbent_edits;
    const Measurement* incumbent_measured = nullptr;
    std::vector<TrialView> history;
    double budget_left_gpu_s = 0;
    double trial_cost_gpu_s = 0;             ///< the preflight's estimate of the next trial's cost
    std::function<Preflight(const Edits&)> estimate;
    /// Lines of trial `n`'s logs: those containing `pattern` (all when empty), the last `tail` of them.
    std::function<std::string(int n, const std::string& pattern, int tail)> read_log;
    const gate::Rules* rules = nullptr;      ///< so a policy can pre-check a proposal (the loop's gate is final)
    const gate::Policy* gate_policy = nullptr;
};

/// One change to the incumbent: its edits (on top of the incumbent's), why, and what it answers.
struct Proposal {
    std::string lever;
    std::string move;
    Edits edits;
    std::string rationale;
    std::string answers;                     ///< the diagnosis it responds to
    /// A step of a plan: the move after it is what pays, so acceptance may keep it when it frees
    /// memory at a small cost (`stepping_stone` in skills/rules/search.yaml's keep_neutral).
    bool stepping_stone = false;
    /// For a stepping stone: how much faster than the incumbent the plan's target is predicted to be.
    double plan_gain = 0;
    /// Another run of that trial's configuration, judged on the mean of all its runs.
    int repeat_of = -1;
    /// The lessons file (its name) the move came from; empty for the rules' own moves.
    std::string lesson = {};
};

struct Stop {
    std::string reason;
};

using Decision = std::variant<Proposal, Stop>;

class Policy {
public:
    virtual ~Policy() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    virtual Decision propose(const CampaignState& state) = 0;
    /// What happened inside the last propose() that the journal must keep (LLM exchanges,
    /// refused answers, fallbacks), as (event type, fields); the policy forgets them.
    virtual std::vector<std::pair<std::string, nlohmann::json>> take_records() { return {}; }
};

/// A finished run's measured peak memory over its preflight estimate (what the cluster adds to the nominal
/// model); nullopt when the trial did not finish or was not estimated.
std::optional<double> peak_over_estimate(const TrialView& trial);

/// The trial's estimated speed over the incumbent's, minus 1, when both were estimated as valid.
std::optional<double> predicted_gain(const TrialView& trial, const TrialView& incumbent);

/// The configuration `edits` applied on top of `base`.
Edits merged(Edits base, const Edits& edits);

/// The configuration as recipe edits, for Document::with_edits.
std::vector<recipe::Edit> edit_list(const Edits& edits);

/// A lever value as the number a quantity or guard compares it with: true/false as 1/0, numbers
/// (and strings that read as one) as themselves.
std::optional<double> number_of(const recipe::Value& value);

/// Edits as JSON (`{key: value}`) and back, for the journal.
nlohmann::json edits_to_json(const Edits& edits);
Edits edits_from_json(const nlohmann::json& json);

}  // namespace attune::policy
