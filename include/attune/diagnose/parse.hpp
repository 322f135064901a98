#pragma once

#include <attune/diagnose/run_metrics.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose {

/// The dialect names `--framework` accepts, in detection order.
const std::vector<std::string>& dialect_names();

/// Reads the logs of one trial (several files are read in order as one stream) into RunMetrics.
/// `framework` forces a dialect; otherwise the dialect is detected from the content. Throws
/// InputError for a missing file, an unknown `framework` (with a suggestion), or content in which
/// no dialect and no failure sign is recognised. Never throws on malformed lines.
RunMetrics parse_logs(const std::vector<std::filesystem::path>& logs, const std::optional<std::string>& framework);

/// Fills `metrics.steady` and `metrics.status` (`too-short`) from the steps: the first step and
/// steps far from the median are warm-up or outliers and are discarded.
void summarise(RunMetrics& metrics);

}  // namespace attune::diagnose
