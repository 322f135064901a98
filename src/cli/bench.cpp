// `attune bench`: every policy on every recipe of a suite, on the simulated cluster (issue 8).
#include <attune/bench/bench.hpp>
#include <attune/bench/generate.hpp>

#include <attune/campaign/budget.hpp>
#include <attune/cli/command.hpp>
#include <attune/cli/llm_options.hpp>
#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/sim/world.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <unistd.h>

namespace attune::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* k_default_budget = "200gpuh";

struct BenchOptions {
    std::string suite;
    int generate = 0;
    std::uint64_t seed = 1;
    std::string write_suite;
    std::string budget;  ///< empty: 200 GPU-h, or a suite row's own
    std::string policies = "rules,random,bayes,grid";
    int seeds = 5;
    std::vector<std::uint64_t> world_seeds;
    int trial_steps = 0;
    bool preflight = false;
    bool blind = false;
    std::string lessons;
    bool no_lessons = false;
    LlmOptions llm;
    std::string campaigns;
    std::string plot;
    bool json = false;
};

/// Removes the temporary campaign folders when the bench ends, however it ends.
struct TempDir {
    fs::path path;
    bool keep = false;
    ~TempDir() {
        std::error_code ignored;
        if (!keep && !path.empty()) fs::remove_all(path, ignored);
    }
};

/// The suite to run: --suite's, or one --generate writes (into --write-suite, else `scratch`).
std::vector<bench::SuiteEntry> suite_of(const BenchOptions& o, TempDir& scratch) {
    if (o.generate == 0) {
        if (!o.write_suite.empty()) throw InputError("--write-suite: only with --generate N");
        return bench::load_suite(o.suite.empty() ? data_dir() / "examples" / "bench" : fs::path(o.suite));
    }
    if (!o.suite.empty()) throw InputError("--suite and --generate: give one (a written suite runs again with --suite DIR)");
    fs::path dir = o.write_suite;
    if (dir.empty()) {
        scratch.path = dir = fs::temp_directory_path() / fmt::format("attune-suite-{}", ::getpid());
    } else if (fs::exists(dir) && !fs::is_empty(dir)) {
        throw InputError(fmt::format("--write-suite {}: not empty; a suite is written into a new or empty folder", dir.string()));
    }
    auto suite = bench::generate_suite(o.generate, o.seed, dir);
    if (!o.write_suite.empty()) spdlog::info("suite of {} rows written to {} (run it again: attune bench --suite {})", suite.size(), dir.string(), dir.string());
    return suite;
}

int execute(const BenchOptions& o) {
    bench::Request request;
    TempDir scratch;
    request.suite = suite_of(o, scratch);
    // Worlds named on the command line replace the rows' own.
    if (!o.world_seeds.empty())
        for (auto& entry : request.suite) entry.world_seed.reset();
    request.budget_gpu_s = campaign::parse_budget(o.budget.empty() ? k_default_budget : o.budget);
    // A budget named on the command line replaces the rows' own.
    if (!o.budget.empty())
        for (auto& entry : request.suite) entry.budget_gpu_s.reset();
    for (const auto& name : util::split(o.policies, ','))
        if (!util::trim(name).empty()) request.policies.emplace_back(util::trim(name));
    if (request.policies.empty())
        throw InputError("--policies: expected a comma-separated list such as rules,random,bayes,grid");
    if (o.seeds < 1) throw InputError(fmt::format("--seeds {}: expected at least 1", o.seeds));
    request.seeds = o.seeds;
    request.world_seeds =
        o.world_seeds.empty() ? std::vector<std::uint64_t>{sim::k_default_world_seed} : o.world_seeds;
    request.random_preflight = o.preflight;
    request.blind = o.blind;
    if (!o.lessons.empty()) request.lessons_dir = fs::path(o.lessons);
    request.policy_options = policy_options("", 1, o.llm);  // name and seed are set per campaign
    if (o.trial_steps != 0) request.trial_steps = o.trial_steps;
    TempDir work;
    if (!o.campaigns.empty())
        work.path = o.campaigns, work.keep = true;
    else
        work.path = fs::temp_directory_path() / fmt::format("attune-bench-{}", ::getpid());
    request.work_dir = work.path;

    const auto started = std::chrono::steady_clock::now();
    const auto runs = bench::run(request, [&](const bench::Run& r) {
        spdlog::info(
            "{} / {} / seed {} / world {}: {:.0f} tokens/s/GPU ({:.2f} of oracle), {:.1f} GPU-h, {} failed, "
            "{} refused",
            r.recipe, r.policy, r.seed, r.world_seed, r.true_tokens_per_s_per_gpu,
            r.oracle_tokens_per_s_per_gpu > 0 ? r.true_tokens_per_s_per_gpu / r.oracle_tokens_per_s_per_gpu
                                              : 0.0,
            r.gpu_hours_spent, r.failed_launches, r.refusals);
    });
    auto document = bench::to_json(request, runs);
    document["wall_seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!o.plot.empty()) util::write_file_atomically(o.plot, bench::plot_svg(request, runs));
    if (o.json)
        fmt::print("{}\n", document.dump(2));
    else
        fmt::print("{}", bench::markdown(document));
    return 0;
}

const Registration k_registration{
    70, [](CLI::App& app, Action& chosen) {
        auto options = std::make_shared<BenchOptions>();
        auto* bench =
            app.add_subcommand("bench", "Every policy on every recipe of a suite, on the simulated cluster");
        bench->add_option("--suite", options->suite,
                          "Folder of recipes, or with suite.yaml (default: examples/bench)");
        bench->add_option("--generate", options->generate,
                          "Draw a suite of N recipes from the model catalogue (GPUs, node counts, starting points) instead");
        bench->add_option("--seed", options->seed, "--generate: the draw (the same seed, the same suite)")->capture_default_str();
        bench->add_option("--write-suite", options->write_suite,
                          "--generate: keep the suite (recipes, clusters, suite.yaml) in this new folder");
        bench->add_option("--budget", options->budget,
                          "GPU-time budget of each campaign: 200gpuh, 200 gpu-h, 12000gpumin (default: 200gpuh, or a "
                          "suite row's own budget)");
        bench
            ->add_option("--policies", options->policies,
                         "Comma-separated policies: rules, random, bayes, grid, llm")
            ->capture_default_str();
        bench
            ->add_option("--seeds", options->seeds, "Campaign seeds (run-to-run noise) per recipe and policy")
            ->capture_default_str();
        bench
            ->add_option("--world-seeds", options->world_seeds,
                         "Simulated worlds (hidden factors), comma-separated")
            ->delimiter(',');
        bench->add_option("--trial-steps", options->trial_steps, "Steps per trial (default: 30)");
        bench->add_flag("--preflight", options->preflight,
                        "Judge random search's proposals by the memory estimate too");
        bench->add_flag("--blind", options->blind,
                        "Campaigns without the simulator's estimates (no preflight, no planning); the oracle still scores them");
        // Unlike tune, no lessons by default: the suite's vendor rows are the published layouts the shipped
        // lessons describe, and a bench measures the search; --lessons DIR measures what lessons add.
        auto* lessons = bench->add_option("--lessons", options->lessons,
                                          "Campaigns start from the lessons of DIR that match their recipe (default: none)");
        bench->add_flag("--no-lessons", options->no_lessons, "Campaigns start from the search rules alone (the default)")
            ->excludes(lessons);
        add_llm_options(*bench, options->llm, "--policies ...,llm");
        bench->add_option("--campaigns", options->campaigns,
                          "Keep the campaign folders here (default: a temporary folder, removed)");
        bench->add_option("--plot", options->plot, "Write best-so-far throughput against GPU-hours as SVG");
        bench->add_flag("--json", options->json, "Print one JSON document");
        bench->fallthrough();
        bench->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
    }};

}  // namespace
}  // namespace attune::cli
