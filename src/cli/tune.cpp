#include <attune/campaign/budget.hpp>
#include <attune/campaign/campaign.hpp>
#include <attune/campaign/factories.hpp>
#include <attune/cli/command.hpp>
#include <attune/core/error.hpp>
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
    std::string policy = "rules";
    std::string framework;
    int trial_steps = 0;
    std::string campaign_dir;
    bool resume = false;
    std::string gate_policy;
    std::uint64_t seed = 1;
    std::uint64_t world_seed = 0;
    std::string llm;
    std::string llm_url;
    bool no_skills = false;
    bool preflight = false;
    bool json = false;
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
    settings.policy = o.policy;
    if (!o.gate_policy.empty()) settings.gate_policy = o.gate_policy;
    settings.seed = o.seed;
    settings.world_seed = o.world_seed;
    settings.preflight_verdicts = o.preflight || campaign::policy_uses_preflight(o.policy);
    settings.max_levers = campaign::policy_max_levers(o.policy);
    campaign::check_policy_name(o.policy);  // refuse an unknown policy before anything is written
    return campaign::create(o.campaign_dir.empty() ? default_campaign_dir(o.recipe) : fs::path(o.campaign_dir), settings);
}

int execute(const TuneOptions& options) {
    auto opened = open_campaign(options);
    const auto& context = opened.context;
    auto policy = campaign::make_policy({.name = context.policy, .llm = options.llm, .llm_url = options.llm_url,
                                         .no_skills = options.no_skills, .seed = context.seed},
                                        context);
    auto backend = campaign::make_backend(context);
    const bool quiet = global_options().quiet;
    const campaign::Progress progress = [&](const campaign::CampaignRecord& record, const campaign::TrialRecord& trial) {
        if (!quiet) fmt::print(stderr, "{}\n", report::trial_line(record, trial));
    };
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    const auto record = campaign::run(context, opened.journal, *policy, *backend, progress, g_interrupted);
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
    tune->add_option("RECIPE", options->recipe, "The recipe to tune (the framework's own YAML)");
    tune->add_option("--budget", options->budget, "GPU-time budget: 200gpuh, 200 gpu-h, 12000gpumin")->capture_default_str();
    tune->add_option("--backend", options->backend, "Where trials run: sim (default)")->capture_default_str();
    tune->add_option("--cluster", options->cluster_file, "Cluster file (default: 8 x 8 H100)");
    tune->add_option("--policy", options->policy, "Who proposes: rules (default), random, bayes, grid")->capture_default_str();
    tune->add_option("--framework", options->framework, "Force the recipe family (nemo, hyperpod-hf, automodel)");
    tune->add_option("--trial-steps", options->trial_steps, "Steps per trial (default: 30)");
    tune->add_option("--campaign", options->campaign_dir, "Campaign folder (default: ./attune-campaigns/<recipe>-<time>)");
    tune->add_flag("--resume", options->resume, "Continue the campaign in --campaign DIR from its journal");
    tune->add_option("--gate-policy", options->gate_policy, "Gate policy file over gate/policy.default.yaml");
    tune->add_option("--seed", options->seed, "Seed of the trials' run-to-run noise");
    tune->add_option("--world-seed", options->world_seed, "sim backend: which simulated world (hidden factors)");
    tune->add_option("--llm", options->llm, "--policy llm: PROVIDER:MODEL (openai, anthropic, bedrock)");
    tune->add_option("--llm-url", options->llm_url, "--policy llm: base URL as the provider's SDK takes it");
    tune->add_flag("--no-skills", options->no_skills, "--policy llm: without the skill set (ablation)");
    tune->add_flag("--preflight", options->preflight, "--policy random: judge its proposals by the memory estimate too");
    tune->add_flag("--json", options->json, "Print the result as one JSON document");
    tune->fallthrough();  // -q before or after the subcommand
    tune->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
