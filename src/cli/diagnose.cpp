#include <attune/campaign/trial_io.hpp>
#include <attune/cli/command.hpp>
#include <attune/cli/validators.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/error.hpp>
#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/parse.hpp>
#include <attune/diagnose/report.hpp>
#include <attune/gate/adapter.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <memory>

namespace attune::cli {
namespace {

struct DiagnoseOptions {
    std::vector<std::string> logs;
    std::string dialect;
    std::string framework;  ///< the old name of --dialect, refused with what to write instead
    std::string recipe;
    std::string cluster_file;
    double hang_after_s = 0;  // 0: not given
    bool json = false;
    bool steps = false;
};

int execute(const DiagnoseOptions& options) {
    const std::vector<std::filesystem::path> logs(options.logs.begin(), options.logs.end());
    if (!options.framework.empty())
        throw InputError("diagnose --framework " + options.framework +
                         ": a log dialect is given with --dialect; --framework names a recipe family (tune, gate, sim)");
    const auto dialect = options.dialect.empty() ? std::nullopt : std::optional<std::string>(options.dialect);
    diagnose::HangCheck hang;
    if (options.hang_after_s > 0) {
        // The caller watches a running job: the log's age counts as silence too.
        hang.after_s = options.hang_after_s;
        hang.now = std::chrono::system_clock::now();
    }
    const auto metrics = diagnose::parse_logs(logs, dialect, hang);
    diagnose::Layout layout;
    if (!options.recipe.empty()) {
        const auto cluster = options.cluster_file.empty() ? cluster::default_cluster() : cluster::load_cluster(options.cluster_file);
        const auto loaded = gate::load_recipe(options.recipe, gate::default_rules());
        layout = campaign::diagnosis_layout(loaded.document, *loaded.adapter, cluster);
    }
    const auto diagnosis = diagnose::diagnose(metrics, layout, diagnose::default_rules());
    if (options.json) {
        diagnose::write_json(std::cout, diagnose::to_json(metrics, diagnosis), metrics, options.steps);
    } else {
        std::cout << diagnose::to_text(metrics, diagnosis);
    }
    return 0;
}

const Registration k_registration{40, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<DiagnoseOptions>();
    auto* sub = app.add_subcommand("diagnose", "Read trial logs into metrics, a status and a bottleneck");
    sub->add_option("LOG", options->logs, "Log files of one trial, read in order as one stream")->required();
    sub->add_option("--framework", options->framework)->group("");
    sub->add_option("--dialect", options->dialect, "Log dialect instead of detection: " + [] {
        std::string names;
        for (const auto& name : diagnose::dialect_names()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        return names;
    }());
    sub->add_option("--recipe", options->recipe, "Recipe of the run, for the parallel layout the rules read");
    sub->add_option("--cluster", options->cluster_file, "Cluster file for the GPU (memory, peak) and the job shape the recipe does not state (default: 8 x 8 H100)")
        ->needs(sub->get_option("--recipe"));
    sub->add_option("--hang-after", options->hang_after_s,
                    "A running job: no progress for this many seconds (by the log's timestamps, or since the log was last written) is a hang")
        ->check(positive_number());
    auto* json = sub->add_flag("--json", options->json, "Print one JSON document");
    sub->add_flag("--steps", options->steps, "With --json: add every step's figures (\"steps\"), written as they are read back")->needs(json);
    sub->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
