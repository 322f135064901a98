// Prints the simulator's calibration table against data/calibration/published.csv, then the rows of
// the families data/calibration/recipes.yaml renders as recipes, estimated through their adapters;
// or one row at length (layout, memory, step-time breakdown).
// Usage: sim_calibration [PATH_TO_published.csv] [--row LINE]
#include <attune/sim/calibration.hpp>
#include <attune/core/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    std::string path = ATTUNE_SOURCE_DIR "/data/calibration/published.csv";
    int line = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--row" && i + 1 < argc) {
            line = std::atoi(argv[++i]);
        } else if (arg.starts_with("-")) {
            std::fprintf(stderr, "usage: sim_calibration [PATH_TO_published.csv] [--row LINE]\n");
            return 2;
        } else {
            path = arg;
        }
    }
    try {
        const auto summary = attune::sim::run_calibration(path);
        if (line == 0) {
            std::fputs(attune::sim::format_calibration(summary).c_str(), stdout);
            const auto through = attune::sim::calibrate_through_recipes(summary, ATTUNE_SOURCE_DIR "/data/calibration/recipes.yaml");
            return std::fputs(attune::sim::format_recipe_calibration(through).c_str(), stdout), 0;
        }
        const auto row = std::find_if(summary.rows.begin(), summary.rows.end(), [&](const auto& r) { return r.line == line; });
        if (row == summary.rows.end()) return std::fprintf(stderr, "sim_calibration: no row at line %d of %s\n", line, path.c_str()), 2;
        std::fputs(attune::sim::explain_calibration_row(*row).c_str(), stdout);
        return 0;
    } catch (const attune::InputError& error) {
        std::fprintf(stderr, "sim_calibration: %s\n", error.what());
        return 2;
    }
}
