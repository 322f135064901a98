#include <attune/cli/command.hpp>
#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/parse.hpp>
#include <attune/diagnose/recipe_layout.hpp>
#include <attune/diagnose/report.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace attune::cli {
namespace {

struct DiagnoseOptions {
    std::vector<std::string> logs;
    std::string framework;
    std::string recipe;
    bool json = false;
};

int execute(const DiagnoseOptions& options) {
    const std::vector<std::filesystem::path> logs(options.logs.begin(), options.logs.end());
    const auto framework = options.framework.empty() ? std::nullopt : std::optional<std::string>(options.framework);
    const auto metrics = diagnose::parse_logs(logs, framework);
    const auto layout = options.recipe.empty() ? diagnose::Layout{} : diagnose::layout_from_recipe(options.recipe);
    const auto diagnosis = diagnose::diagnose(metrics, layout, diagnose::default_rules());
    if (options.json) {
        // Evidence lines are quoted as the log has them; bytes that are not UTF-8 become U+FFFD.
        std::cout << diagnose::to_json(metrics, diagnosis).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    } else {
        std::cout << diagnose::to_text(metrics, diagnosis);
    }
    return 0;
}

const Registration k_registration{40, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<DiagnoseOptions>();
    auto* sub = app.add_subcommand("diagnose", "Read trial logs into metrics, a status and a bottleneck");
    sub->add_option("LOG", options->logs, "Log files of one trial, read in order as one stream")->required();
    sub->add_option("--framework", options->framework, "Log dialect instead of detection: " + [] {
        std::string names;
        for (const auto& name : diagnose::dialect_names()) {
            names += (names.empty() ? "" : ", ") + name;
        }
        return names;
    }());
    sub->add_option("--recipe", options->recipe, "Recipe of the run, for the parallel layout the rules read");
    sub->add_flag("--json", options->json, "Print one JSON document");
    sub->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
