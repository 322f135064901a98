#pragma once

#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/run_metrics.hpp>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace attune::diagnose {

/// The `attune diagnose --json` document: dialect, status, cause, steps_seen, last_step, steady{},
/// peak_memory_gib, bottleneck, bottleneck_rule, headroom[], facts{} (the numbers the rules read),
/// evidence[]; null where the log does not say. Its size does not grow with the log.
nlohmann::json to_json(const RunMetrics& metrics, const Diagnosis& diagnosis);

/// Prints `document` (indented by 2) with the per-step series added as its last member, "steps":
/// one object per step, written as it goes, so that a log of millions of steps is never held as a
/// JSON tree (NaN losses are null). Bytes that are not UTF-8 become U+FFFD.
void write_json(std::ostream& out, const nlohmann::json& document, const RunMetrics& metrics, bool with_steps);

/// The human-readable summary printed without --json.
std::string to_text(const RunMetrics& metrics, const Diagnosis& diagnosis);

}  // namespace attune::diagnose
