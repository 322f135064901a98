#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose {

/// How a run ended, judged from its log text alone. `unknown`: a text log with neither a training
/// record nor a failure sign attune recognises.
enum class Status { ok, oom, nccl_timeout, nccl_error, time_limit, node_failure, preempted, crash, diverged, hang, too_short, unknown };

/// The spelling used in JSON and on the command line (`nccl-timeout`, `too-short`).
std::string_view status_name(Status status);

/// What an `oom` ran out of (RunMetrics::cause).
inline constexpr std::string_view k_gpu_memory = "gpu-memory";
inline constexpr std::string_view k_host_memory = "host-memory";

/// One line of the log that decided something: its 1-based line number and its text.
struct Evidence {
    std::size_t line = 0;
    std::string text;
};

/// A std::optional<double> in 8 bytes instead of 16, for the per-step fields a multi-GB log holds by
/// the million: "absent" is one signalling-NaN bit pattern, which neither parsing nor arithmetic
/// produces (a printed nan is a quiet NaN and stays a value). Reads as std::optional<double> does
/// (has_value, explicit bool, *, value_or) and converts to one.
class OptionalDouble {
public:
    constexpr OptionalDouble() = default;
    constexpr OptionalDouble(std::nullopt_t) {}                 // NOLINT(google-explicit-constructor): as std::optional
    constexpr OptionalDouble(double value) : m_value(value) {}  // NOLINT(google-explicit-constructor): as std::optional

    [[nodiscard]] constexpr bool has_value() const { return std::bit_cast<std::uint64_t>(m_value) != k_absent; }
    constexpr explicit operator bool() const { return has_value(); }
    /// The value; only meaningful when has_value().
    constexpr double operator*() const { return m_value; }
    [[nodiscard]] constexpr double value_or(double fallback) const { return has_value() ? m_value : fallback; }
    constexpr operator std::optional<double>() const {  // NOLINT(google-explicit-constructor): reads as the optional it stands for
        return has_value() ? std::optional<double>(m_value) : std::nullopt;
    }

private:
    static constexpr std::uint64_t k_absent = 0x7ff4'0000'0000'a75eULL;  // exponent all ones, quiet bit clear
    double m_value = std::bit_cast<double>(k_absent);
};

/// The metrics a framework printed for one optimisation step, in normalised units; empty where not
/// printed. 64 bytes: a 2 GiB log holds millions of these.
struct StepRecord {
    long long step = 0;
    OptionalDouble step_time_s;
    OptionalDouble tokens_per_s_per_gpu;
    OptionalDouble tflops_per_gpu;
    OptionalDouble loss;        ///< a printed nan/inf is kept as NaN/inf
    OptionalDouble grad_norm;
    OptionalDouble memory_gib;  ///< per-step peak, GiB
    bool loss_printed = false;  ///< the record had a loss field (possibly nan)
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
    std::string dialect;  ///< empty when nothing in the log named one
    Status status = Status::ok;
    /// What an `oom` ran out of: "gpu-memory" (the framework's allocator) or "host-memory" (the kernel's
    /// or Slurm's OOM killer, a cgroup limit): the remedies differ. Empty for other statuses.
    std::string cause;
    std::vector<Evidence> evidence;
    std::vector<StepRecord> steps;  ///< one per distinct step, in the order printed
    std::optional<long long> last_step;
    std::optional<double> peak_memory_gib;
    SteadySummary steady;
};

}  // namespace attune::diagnose
