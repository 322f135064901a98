#pragma once
// `attune bench`: every policy on every recipe of a suite, on the simulated cluster, several seeds
// each, each campaign run in-process in its own temporary campaign folder through the same loop,
// gate and ledger as `attune tune`. A final best is scored by its true throughput in the world
// (noise-free), against the oracle of that world.

#include <attune/campaign/factories.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attune::bench {

/// One recipe of a suite and the cluster it runs on.
struct SuiteEntry {
    std::string name;  ///< the recipe's file name (and the cluster's, when given)
    std::filesystem::path recipe;
    std::optional<std::filesystem::path> cluster;  ///< nullopt: the default cluster (8 x 8 H100)
    /// A Hugging Face config.json of the model, for a recipe that names none (a DeepSpeed config).
    std::optional<std::filesystem::path> model_config;
    /// The row's hidden world (a generated suite draws one per row); nullopt: the bench's --world-seeds.
    std::optional<std::uint64_t> world_seed;
    /// The row's GPU-time budget (a generated suite scales it with the row's GPUs); nullopt: the bench's --budget.
    std::optional<double> budget_gpu_s;
};

/// A suite folder: `suite.yaml` (a list of `{recipe: FILE, cluster: FILE, name: TEXT, model_config: FILE}`, paths relative to the
/// folder) when present, else every `*.yaml` in it on the default cluster. Throws InputError.
std::vector<SuiteEntry> load_suite(const std::filesystem::path& dir);

/// What to run.
struct Request {
    std::vector<SuiteEntry> suite;
    double budget_gpu_s = 0;
    std::vector<std::string> policies;
    /// What every campaign's policy gets beyond its name and seed (set per campaign): the llm
    /// policy's --llm, --llm-url, --llm-timeout and --no-skills.
    campaign::PolicyOptions policy_options;
    int seeds = 5;                           ///< campaign seeds 1..seeds (run-to-run noise)
    std::vector<std::uint64_t> world_seeds;  ///< hidden worlds; each seed runs in each world
    bool random_preflight = false;           ///< random search judged by the preflight too
    bool blind = false;                      ///< campaigns without the simulator's estimates (Settings::blind)
    std::optional<std::filesystem::path> lessons_dir;  ///< campaigns read the lessons of this folder (Settings::lessons_dir)
    std::optional<int> trial_steps;
    std::filesystem::path work_dir;  ///< campaign folders go here (created by run)
};

/// One campaign's outcome.
struct Run {
    std::string recipe, policy;
    std::uint64_t seed = 0, world_seed = 0;
    double true_tokens_per_s_per_gpu = 0;  ///< the final best in the world, no noise (0: it does not run)
    double oracle_tokens_per_s_per_gpu = 0;
    double baseline_tokens_per_s_per_gpu = 0;  ///< the recipe as given, in the same world
    std::optional<double> gpu_hours_to_95;  ///< spent when the incumbent first reached 95% of the oracle
    double gpu_hours_spent = 0;
    double budget_gpu_hours = 0;           ///< the campaign's
    /// Ended below 95% of the oracle with budget left for two more trials of the campaign's mean cost.
    bool stopped_short = false;
    int launches = 0, failed_launches = 0, refusals = 0, predicted_failures = 0;
    std::vector<std::pair<double, double>> curve;  ///< (GPU-hours spent, true throughput of the incumbent)
};

/// A row's budget: its own, else the request's.
double budget_gpu_s(const Request& request, const SuiteEntry& entry);

/// Runs every (recipe, policy, seed, world seed) campaign in turn; `progress` hears each one finished.
/// Throws InputError, before `work_dir` is created, when a policy cannot be made (an unknown name,
/// llm without --llm or the provider's credentials).
std::vector<Run> run(const Request& request, const std::function<void(const Run&)>& progress = {});

/// The JSON document: {"recipes": [...], "summary": {...}} plus the settings it ran with.
nlohmann::json to_json(const Request& request, const std::vector<Run>& runs);

/// The same figures as Markdown tables (per recipe and policy, then the summary).
std::string markdown(const nlohmann::json& document);

/// Best-so-far true throughput as a fraction of the oracle (mean over recipes and seeds) against
/// GPU-hours spent, one line per policy.
std::string plot_svg(const Request& request, const std::vector<Run>& runs);

}  // namespace attune::bench
