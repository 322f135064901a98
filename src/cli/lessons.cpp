#include <attune/campaign/campaign.hpp>
#include <attune/cli/command.hpp>
#include <attune/core/error.hpp>
#include <attune/report/lessons.hpp>
#include <attune/util/files.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace attune::cli {

namespace {

struct LessonsOptions {
    std::string dir;
    std::string output;
};

int execute(const LessonsOptions& o) {
    const auto opened = campaign::reopen(o.dir, /*lock=*/false);
    const auto record = campaign::fold(opened.journal.events());
    if (!record.end) throw InputError(fmt::format("{}: the campaign has not finished; lessons come from finished campaigns", o.dir));
    const std::string text = report::lessons(record, report::lesson_of(record, opened.context));
    if (o.output.empty()) fmt::print("{}", text);
    else util::write_file_atomically(o.output, text);
    return 0;
}

const Registration k_registration{35, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<LessonsOptions>();
    auto* command = app.add_subcommand("lessons", "Write what a finished campaign learned as a skills/lessons/ file");
    command->add_option("CAMPAIGN_DIR", options->dir, "The campaign folder")->required();
    command->add_option("-o,--output", options->output, "Write to this file instead of stdout");
    command->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
