// Prints the simulator's calibration table against ../shared/calibration/published.csv.
// Usage: sim_calibration [PATH_TO_published.csv]
#include <attune/sim/calibration.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : ATTUNE_SOURCE_DIR "/../shared/calibration/published.csv";
    const auto summary = attune::sim::run_calibration(path);
    std::fputs(attune::sim::format_calibration(summary).c_str(), stdout);
    return 0;
}
