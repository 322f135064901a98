#include <attune/campaign/budget.hpp>
#include <attune/core/error.hpp>
#include <attune/util/strings.hpp>

#include <cmath>
#include <fmt/core.h>

namespace attune::campaign {

double parse_budget(std::string_view text) {
    const std::string written(text);
    std::string compact;
    for (char c : written)
        if (c != ' ' && c != '\t') compact += c;
    compact = util::to_lower(compact);
    const auto unit_start = compact.find_first_not_of("0123456789.+-eE");
    const auto amount = util::parse_number(compact.substr(0, unit_start));
    const std::string unit = unit_start == std::string::npos ? std::string() : compact.substr(unit_start);
    double seconds_per_unit = 0;
    if (unit == "gpuh" || unit == "gpu-h" || unit == "gpuhours" || unit == "gpu-hours") seconds_per_unit = 3600;
    if (unit == "gpumin" || unit == "gpu-min") seconds_per_unit = 60;
    if (!amount || seconds_per_unit == 0 || !std::isfinite(*amount) || *amount <= 0)
        throw InputError("--budget '" + written +
                         "': expected a positive GPU-time such as 200gpuh, '200 gpu-h' or 12000gpumin");
    return *amount * seconds_per_unit;
}

std::string format_gpu_hours(double gpu_seconds) { return fmt::format("{:.1f} GPU-h", gpu_seconds / 3600.0); }

}  // namespace attune::campaign
