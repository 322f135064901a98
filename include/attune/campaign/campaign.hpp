#pragma once
// The campaign loop (docs/campaign.md, "The loop"): baseline, then propose one lever, gate,
// preflight, launch, measure, accept or revert, until the budget or the policy stops. Every
// step is journaled before the next begins, and the loop reads its state back from the journal,
// so a campaign killed at any point resumes where it was.

#include <attune/campaign/journal.hpp>
#include <attune/campaign/record.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>
#include <attune/launch/backend.hpp>
#include <attune/policy/lessons.hpp>
#include <attune/policy/policy.hpp>
#include <attune/policy/search_rules.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace attune::campaign {

/// What a new campaign is asked to do (written to campaign-start; `--resume` reads it back).
struct Settings {
    std::filesystem::path recipe;            ///< the user's recipe
    std::string framework;                   ///< forced family, empty to detect
    double budget_gpu_s = 0;
    std::optional<int> trial_steps;          ///< default: from the recipe (steady steps for a noise estimate)
    std::string backend = "sim";
    std::optional<std::filesystem::path> cluster_file;
    std::optional<std::filesystem::path> model_config;  ///< --model-config: the model's Hugging Face config.json
    std::string policy = "rules";
    std::optional<std::filesystem::path> gate_policy;
    std::uint64_t seed = 1;
    std::uint64_t world_seed = 0;            ///< sim backend only; 0 means the default world
    std::string llm;                         ///< --policy llm: PROVIDER:MODEL (never a key)
    std::string llm_url;
    bool no_skills = false;
    double max_queue_wait_s = 0;             ///< slurm backend: cancel a trial still queued after this long; 0: no cap
    bool preflight_verdicts = true;          ///< false: predicted OOMs and infeasible layouts are launched anyway
                                             ///< (policies that have no preflight, such as random search)
    std::optional<int> max_levers;           ///< the gate's --max-levers for each candidate; none: no limit
    /// --blind: no estimate reaches the policy, the preflight or the budget (as on a GPU attune has no
    /// specs for): the policy works from the trials' diagnosis and its rules' order alone.
    bool blind = false;
    /// --lessons DIR: the lessons files the campaign reads those of that match its recipe from (copied
    /// into the campaign's lessons/ folder); none: --no-lessons.
    std::optional<std::filesystem::path> lessons_dir;
    /// A replay: the start-up the replayed campaign's backend charged (launch::fixed_startup_s of
    /// it); otherwise unset, and the backend's own is used.
    std::optional<double> replayed_fixed_startup_s;
};

/// One line per finished trial for the user's terminal.
using Progress = std::function<void(const CampaignRecord&, const TrialRecord&)>;

/// The parts a campaign runs with, built from its settings (or from its journal on resume).
struct Context {
    std::filesystem::path dir;
    recipe::Document original;
    const gate::Adapter* adapter = nullptr;
    const gate::Rules* rules = nullptr;
    gate::Policy gate_policy;
    cluster::Cluster cluster;
    const policy::SearchRules* search = nullptr;
    int trial_steps = 0;
    std::uint64_t seed = 1;
    std::uint64_t world_seed = 0;
    std::string backend;
    std::string policy;
    std::string llm;
    std::string llm_url;
    bool no_skills = false;
    double max_queue_wait_s = 0;
    bool preflight_verdicts = true;          ///< see Settings
    std::optional<int> max_levers;           ///< see Settings
    bool blind = false;                      ///< see Settings
    /// The lessons that match the recipe, best first, read from the campaign's own copies.
    std::vector<policy::Lesson> lessons;
    /// The start-up every trial is charged when the backend fixes it (the simulated cluster's);
    /// unset, the campaign learns it from its finished trials (campaign-start `fixed_startup_s`).
    std::optional<double> fixed_startup_s;
};

/// The fixed start-up a campaign's journal says its trials were charged (its campaign-start event).
std::optional<double> fixed_startup_of(const nlohmann::json& campaign_start);

/// The gate's lever limit a campaign's candidates were judged with (its campaign-start event).
std::optional<int> max_levers_of(const nlohmann::json& campaign_start);

/// A campaign folder held by this process: its context, its journal and the lock on it.
struct Opened {
    Context context;
    Journal journal;
    std::unique_ptr<CampaignLock> lock;
};

/// Checks every input first (recipe, family, cluster, gate policy, budget) so that bad input
/// writes nothing; then creates `dir` (refusing one that already holds a campaign), copies the
/// recipe, cluster and gate policy in and journals campaign-start. Throws InputError.
Opened create(const std::filesystem::path& dir, const Settings& settings);

/// Reopens a campaign from its journal and the files it copied in (`--resume`, `report`).
/// `lock` false reads without taking the campaign's lock (a report of a running campaign).
Opened reopen(const std::filesystem::path& dir, bool lock = true);

/// Runs (or resumes) the loop until the campaign ends or `interrupted` is set; returns the
/// campaign as the journal now has it. `interrupted` leaves it resumable.
CampaignRecord run(const Context& context, Journal& journal, policy::Policy& policy, launch::Backend& backend,
                   const Progress& progress, const std::atomic<bool>& interrupted);

/// The trial steps used when the user gives none: enough steady steps after warm-up for a noise estimate.
inline constexpr int k_default_trial_steps = 30;

/// Writes best.yaml (best.json, best.toml: the recipe's format): the original with only the
/// winning levers changed (no trial-only keys).
std::filesystem::path write_best(const Context& context, const CampaignRecord& record);

}  // namespace attune::campaign
