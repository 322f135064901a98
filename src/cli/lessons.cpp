#include <attune/campaign/campaign.hpp>
#include <attune/campaign/trial_io.hpp>
#include <attune/cli/command.hpp>
#include <attune/core/error.hpp>
#include <attune/report/lessons.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/util/files.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace attune::cli {

namespace {

struct LessonsOptions {
    std::string dir;
    std::string output;
};

report::LessonFacts facts_of(const campaign::Context& context) {
    report::LessonFacts facts;
    const auto& adapter = *context.adapter;
    facts.model = adapter.model_name(context.original).value_or(context.original.origin());
    facts.gpus = campaign::gpus_of(context.original, adapter, context.cluster);
    facts.seq_len = int(adapter.quantity(context.original, "seq_len", context.cluster).value_or(0));
    try {
        const auto in = sim::from_recipe(context.original, adapter, context.cluster);
        facts.params_b = sim::total_params(in.model) / 1e9;
        facts.moe = in.model.experts > 0;
    } catch (const InputError&) {
        // The model's shape is not in the recipe: the lessons file leaves its size at 0.
    }
    return facts;
}

int execute(const LessonsOptions& o) {
    const auto opened = campaign::reopen(o.dir, /*lock=*/false);
    const auto record = campaign::fold(opened.journal.events());
    if (!record.end) throw InputError(fmt::format("{}: the campaign has not finished; lessons come from finished campaigns", o.dir));
    const std::string text = report::lessons(record, facts_of(opened.context));
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
