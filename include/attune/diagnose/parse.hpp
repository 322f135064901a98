#pragma once

#include <attune/diagnose/run_metrics.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose {

/// The dialect names `--framework` accepts, in detection order.
const std::vector<std::string>& dialect_names();

/// When a silent log is a hang. The log's own timestamps are always compared: a run whose last
/// progress record is followed, with no line naming another cause, by a line printed more than the
/// threshold later (a Slurm time limit, a user scancel, a heartbeat timeout) is `hang`.
struct HangCheck {
    /// The silence that makes a hang, in seconds; by default the larger of 30 min and 20 intervals
    /// between progress records.
    std::optional<double> after_s;
    /// The time now, for a job still running: with `after_s`, a log that shows no failure and was
    /// last modified more than `after_s` before `now` is `hang` too. Unset: modification times are not read.
    std::optional<std::chrono::system_clock::time_point> now;
};

/// When parse_logs reads a file on two threads: a regular file of at least `min_bytes` is cut at a
/// record line near `at` (a fraction of its size), the part after the cut is parsed on a second
/// thread while this one parses the part before, and the two are merged. The result is exactly what
/// one thread gives; where the merge could differ (see src/diagnose/split.hpp) the rest of the file
/// is read again on this thread. Tests lower `min_bytes` and move `at` to cut small logs anywhere.
struct SplitPolicy {
    std::uintmax_t min_bytes = default_split_bytes();
    double at = 0.5;

    /// 64 MiB where the machine has a second core; never on one core.
    static std::uintmax_t default_split_bytes();
};

/// Reads the logs of one trial (several files are read in order as one stream) into RunMetrics.
/// `dialect` forces a dialect; otherwise the dialect is detected from the content. Throws
/// InputError for a missing file, an unknown `dialect` (with a suggestion), or content in which
/// no dialect and no failure sign is recognised. Never throws on malformed lines.
RunMetrics parse_logs(const std::vector<std::filesystem::path>& logs, const std::optional<std::string>& dialect,
                      const HangCheck& hang = {}, const SplitPolicy& split = {});

/// Fills `metrics.steady` and `metrics.status` (`too-short`) from the steps: the first step and
/// steps far from the median are warm-up or outliers and are discarded.
void summarise(RunMetrics& metrics);

}  // namespace attune::diagnose
