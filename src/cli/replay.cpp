#include <attune/campaign/replay.hpp>
#include <attune/cli/command.hpp>
#include <attune/core/error.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace attune::cli {

namespace {

struct ReplayOptions {
    std::string dir;
    bool json = false;
};

int execute(const ReplayOptions& o) {
    const auto result = campaign::replay(o.dir);
    if (o.json) {
        fmt::print("{}\n", nlohmann::json{{"campaign_dir", o.dir},
                                          {"agrees", result.agrees()},
                                          {"compared", result.compared},
                                          {"differences", result.differences}}
                               .dump(2));
    } else if (result.agrees()) {
        fmt::print("replay agrees: {} decisions recomputed, none differ\n", result.compared);
    } else {
        fmt::print("replay diverged: {} of {} decisions differ\n", result.differences.size(), result.compared);
        for (const auto& d : result.differences)
            fmt::print("  step {}:\n    recorded {}\n    replayed {}\n", d["step"].get<std::size_t>(), d["recorded"].dump(), d["replayed"].dump());
    }
    return static_cast<int>(result.agrees() ? ExitCode::ok : ExitCode::diverged);
}

const Registration k_registration{40, [](CLI::App& app, Action& chosen) {
    auto options = std::make_shared<ReplayOptions>();
    auto* command = app.add_subcommand("replay", "Re-drive a recorded campaign through today's code and compare every decision");
    command->add_option("CAMPAIGN_DIR", options->dir, "A finished campaign folder")->required();
    command->add_flag("--json", options->json, "Print one JSON document");
    command->callback([options, &chosen] { chosen = [options] { return execute(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
