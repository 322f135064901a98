#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose {

/// How a run ended, judged from its log text alone.
enum class Status { ok, oom, nccl_timeout, nccl_error, time_limit, node_failure, preempted, crash, diverged, hang, too_short };

/// The spelling used in JSON and on the command line (`nccl-timeout`, `too-short`).
std::string_view status_name(Status status);

/// One line of the log that decided something: its 1-based line number and its text.
struct Evidence {
    std::size_t line = 0;
    std::string text;
};

/// The metrics a framework printed for one optimisation step, in normalised units; empty where not printed.
struct StepRecord {
    long long step = 0;
    std::optional<double> step_time_s;
    std::optional<double> tokens_per_s_per_gpu;
    std::optional<double> tflops_per_gpu;
    std::optional<double> loss;        ///< a printed nan/inf is kept as NaN/inf
    std::optional<double> grad_norm;
    std::optional<double> memory_gib;  ///< per-step peak, GiB
    bool loss_printed = false;         ///< the record had a loss field (possibly nan)
};

/// Steady-state figures over the steps left after warm-up and outliers are discarded.
struct SteadySummary {
    std::size_t steps_used = 0;
    std::optional<double> step_time_s;           ///< median
    std::optional<double> tokens_per_s_per_gpu;  ///< median
    std::optional<double> tflops_per_gpu;        ///< median
    std::optional<double> noise;                 ///< median absolute deviation / median of the step time (or throughput)
};

/// Everything read from a trial's logs.
struct RunMetrics {
    std::string dialect;
    Status status = Status::ok;
    std::vector<Evidence> evidence;
    std::vector<StepRecord> steps;  ///< one per distinct step, in the order printed
    std::optional<long long> last_step;
    std::optional<double> peak_memory_gib;
    SteadySummary steady;
};

}  // namespace attune::diagnose
