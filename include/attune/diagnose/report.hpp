#pragma once

#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/run_metrics.hpp>

#include <nlohmann/json.hpp>
#include <string>

namespace attune::diagnose {

/// The `attune diagnose --json` document: dialect, status, steps_seen, last_step, steps[], steady{},
/// peak_memory_gib, bottleneck, bottleneck_rule, headroom[], facts{} (the numbers the rules read),
/// evidence[]; null where the log does not say (NaN losses are null).
nlohmann::json to_json(const RunMetrics& metrics, const Diagnosis& diagnosis);

/// The human-readable summary printed without --json.
std::string to_text(const RunMetrics& metrics, const Diagnosis& diagnosis);

}  // namespace attune::diagnose
