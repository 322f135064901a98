#pragma once

#include <string>
#include <string_view>

namespace attune::campaign {

/// Parses a GPU-time budget: `200gpuh`, `200 gpu-h`, `1.5gpuh`, `12000gpumin`. Returns
/// GPU-seconds. Throws InputError naming the value and the accepted forms otherwise (`0`,
/// negative amounts and other units included).
double parse_budget(std::string_view text);

/// GPU-seconds as GPU-hours for people: `12.5 GPU-h`.
std::string format_gpu_hours(double gpu_seconds);

}  // namespace attune::campaign
