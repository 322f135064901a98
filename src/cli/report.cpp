#include <attune/campaign/campaign.hpp>
#include <attune/cli/command.hpp>
#include <attune/core/error.hpp>
#include <attune/report/report.hpp>
#include <attune/util/files.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace attune::cli {

namespace {

struct ReportOptions {
    std::string dir;
    std::string format = "md";
    std::string output;
};

int execute(const ReportOptions& o) {
    // A report reads; it never takes the lock, so it works on a running campaign too.
    const auto opened = campaign::reopen(o.dir, /*lock=*/false);
    const auto record = campaign::fold(opened.journal.events());
    std::string text;
    if (o.format == "md") text = report::markdown(record, o.dir);
    else if (o.format == "html") text = report::html(record, o.dir);
    else if (o.format == "json") text = report::summary_json(record, o.dir).dump(2) + "\n";
    else throw InputError(fmt::format("--format {}: expected md, html or json", o.format));
    if (o.output.empty()) fmt::print("{}", text);
    else util::write_file_atomically(o.output, text);
    return 0;
}

const Registration k_registration{30, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<ReportOptions>();
    auto* command = app.add_subcommand("report", "Write a campaign's report: trials, plot, verdicts, diagnoses, diff");
    command->add_option("CAMPAIGN_DIR", options->dir, "The campaign folder")->required();
    command->add_option("--format", options->format, "md, html or json")->capture_default_str();
    command->add_option("-o,--output", options->output, "Write to this file instead of stdout");
    command->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
