#include <attune/campaign/budget.hpp>
#include <attune/campaign/campaign.hpp>
#include <attune/campaign/factories.hpp>
#include <attune/cli/command.hpp>
#include <attune/cli/llm_options.hpp>
#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/report/report.hpp>
#include <attune/util/files.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <csignal>
#include <ctime>
#include <unistd.h>

namespace attune::cli {

namespace {

namespace fs = std::filesystem;

struct TuneOptions {
    std::string recipe;
    std::string budget = "200gpuh";
    std::string backend = "sim";
    std::string cluster_file;
    std::string model_config;
    std::string policy = "rules";
    std::string framework;
    int trial_steps = 0;
    std::string campaign_dir;
    bool resume = false;
    std::string gate_policy;
    std::uint64_t seed = 1;
    std::uint64_t world_seed = 0;
    LlmOptions llm;
    bool preflight = false;
    bool blind = false;
    std::string lessons;
    bool no_lessons = false;
    bool json = false;
    std::string max_queue_wait;
};

std::atomic<bool> g_interrupted{false};

void on_interrupt(int) { g_interrupted.store(true); }

fs::path default_campaign_dir(const std::string& recipe) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
    return fs::path("attune-campaigns") / fmt::format("{}-{}", fs::path(recipe).stem().string(), stamp);
}

campaign::Opened open_campaign(const TuneOptions& o) {
    if (o.resume) {
        if (o.campaign_dir.empty()) throw InputError("--resume needs --campaign DIR: the campaign to continue");
        return campaign::reopen(o.campaign_dir);
    }
    if (o.recipe.empty()) throw InputError("RECIPE is required (the recipe to tune), unless --resume --campaign DIR");
    campaign::Settings settings;
    settings.recipe = o.recipe;
    settings.framework = o.framework;
    settings.budget_gpu_s = campaign::parse_budget(o.budget);
    if (o.trial_steps != 0) settings.trial_steps = o.trial_steps;
    settings.backend = o.backend;
    if (!o.cluster_file.empty()) settings.cluster_file = o.cluster_file;
    if (!o.model_config.empty()) settings.model_config = o.model_config;
    settings.policy = o.policy;
    if (!o.gate_policy.empty()) settings.gate_policy = o.gate_policy;
    settings.seed = o.seed;
    settings.world_seed = o.world_seed;
    settings.llm = o.llm.llm;
    settings.llm_url = o.llm.llm_url;
    settings.no_skills = o.llm.no_skills;
    settings.preflight_verdicts = o.preflight || campaign::policy_uses_preflight(o.policy);
    settings.max_levers = campaign::policy_max_levers(o.policy);
    settings.blind = o.blind;
    if (!o.no_lessons) settings.lessons_dir = o.lessons.empty() ? data_dir() / "skills" / "lessons" : fs::path(o.lessons);
    campaign::check_policy(policy_options(o.policy, o.seed, o.llm));  // refuse a bad policy or backend before anything is written
    if (!o.max_queue_wait.empty()) {
        const auto seconds = cluster::slurm_time_seconds(o.max_queue_wait);
        if (!seconds || *seconds <= 0)
            throw InputError(fmt::format("--max-queue-wait {}: expected a Slurm time such as 30 (minutes), 10:00 or 1-00:00:00", o.max_queue_wait));
        settings.max_queue_wait_s = *seconds;
    }
    campaign::check_backend_name(o.backend);
    return campaign::create(o.campaign_dir.empty() ? default_campaign_dir(o.recipe) : fs::path(o.campaign_dir), settings);
}

int execute(const TuneOptions& options) {
    auto opened = open_campaign(options);
    const auto& context = opened.context;
    // On --resume the campaign's own LLM settings apply unless given again.
    auto options_for_policy = policy_options(context.policy, context.seed, options.llm);
    if (options_for_policy.llm.empty()) options_for_policy.llm = context.llm;
    if (options_for_policy.llm_url.empty()) options_for_policy.llm_url = context.llm_url;
    options_for_policy.no_skills = options_for_policy.no_skills || context.no_skills;
    const auto so_far = campaign::fold(opened.journal.events());
    options_for_policy.llm_calls_used = long(so_far.llm_exchanges);
    options_for_policy.llm_tokens_used = so_far.llm_input_tokens + so_far.llm_output_tokens;
    auto policy = campaign::make_policy(options_for_policy, context);
    auto backend = campaign::make_backend(context);
    const bool quiet = global_options().quiet;
    const bool bar = !quiet && ::isatty(STDERR_FILENO) == 1;
    // On a terminal the budget bar stays on the last line, redrawn under each trial's line.
    const campaign::Progress progress = [&](const campaign::CampaignRecord& record, const campaign::TrialRecord& trial) {
        if (quiet) return;
        if (bar) fmt::print(stderr, "\r\033[K{}\n{}", report::trial_line(record, trial), report::budget_bar(record));
        else fmt::print(stderr, "{}\n", report::trial_line(record, trial));
    };
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    const auto record = campaign::run(context, opened.journal, *policy, *backend, progress, g_interrupted);
    if (bar) fmt::print(stderr, "\n");
    util::write_file_atomically(context.dir / "report.md", report::markdown(record, context.dir));
    if (g_interrupted.load()) {
        fmt::print(stderr, "attune: interrupted; the journal is intact. Continue with: attune tune --resume --campaign {}\n",
                   context.dir.string());
        return static_cast<int>(ExitCode::interrupted);
    }
    if (options.json) fmt::print("{}\n", report::summary_json(record, context.dir).dump(2));
    else fmt::print("{}", report::terminal_summary(record, context.dir));
    return 0;
}

const Registration k_registration{10, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<TuneOptions>();
    auto* tune = app.add_subcommand("tune", "Tune a recipe's throughput within a GPU-hour budget");
    tune->add_option("RECIPE", options->recipe, "The recipe to tune, in its framework's own format (YAML, TOML, JSON or a launch script)");
    tune->add_option("--budget", options->budget, "GPU-time budget: 200gpuh, 200 gpu-h, 12000gpumin")->capture_default_str();
    tune->add_option("--backend", options->backend, "Where trials run: sim (default), local (a child process), slurm (sbatch)")
        ->capture_default_str();
    tune->add_option("--max-queue-wait", options->max_queue_wait,
                     "slurm: cancel a trial still queued after this long (Slurm time: MM, HH:MM:SS, D-HH:MM:SS)");
    tune->add_option("--cluster", options->cluster_file, "Cluster file (default: 8 x 8 H100)");
    tune->add_option("--policy", options->policy, "Who proposes: rules (default), random, bayes, grid")->capture_default_str();
    tune->add_option("--framework", options->framework, "Force the recipe family (the name of a gate/frameworks/ file, e.g. nemo or torchtitan)");
    tune->add_option("--model-config", options->model_config,
                     "Hugging Face config.json of the model the recipe trains, where the recipe does not name a known one");
    tune->add_option("--trial-steps", options->trial_steps, "Steps per trial (default: 30)");
    tune->add_option("--campaign", options->campaign_dir, "Campaign folder (default: ./attune-campaigns/<recipe>-<time>)");
    tune->add_flag("--resume", options->resume, "Continue the campaign in --campaign DIR from its journal");
    tune->add_option("--gate-policy", options->gate_policy, "Gate policy file over gate/policy.default.yaml");
    tune->add_option("--seed", options->seed, "Seed of the trials' run-to-run noise");
    tune->add_option("--world-seed", options->world_seed, "sim backend: which simulated world (hidden factors)");
    add_llm_options(*tune, options->llm, "--policy llm");
    tune->add_flag("--preflight", options->preflight, "--policy random: judge its proposals by the memory estimate too");
    tune->add_flag("--blind", options->blind,
                   "Tune without the simulator's estimates (no preflight, no planning), as on a GPU attune has no specs for");
    auto* lessons = tune->add_option("--lessons", options->lessons,
                                     "Lessons from past campaigns to start from: the files of DIR that match the recipe (default: skills/lessons/)");
    tune->add_flag("--no-lessons", options->no_lessons, "Start from the search rules alone")->excludes(lessons);
    tune->add_flag("--json", options->json, "Print the result as one JSON document");
    tune->fallthrough();  // -q before or after the subcommand
    tune->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
