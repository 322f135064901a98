#pragma once
// The Slurm backend's pure parts: the sbatch script, shell quoting, time limits and the reading
// of squeue/sacct/scontrol output. Kept apart from the process calls so that they are unit-tested
// without a cluster (tests/unit/launch/slurm_test.cpp).

#include <attune/cluster/cluster.hpp>
#include <attune/recipe/document.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::launch::slurm {

/// `value` single-quoted for POSIX sh (a `'` becomes `'\''`). Throws InputError naming `what`
/// when the value holds a newline, a carriage return or a NUL, which no script line can carry.
std::string shell_quote(std::string_view value, std::string_view what);

/// A value for an `#SBATCH` line, which sbatch reads itself (not the shell): only
/// `[A-Za-z0-9._,:=/@+%~-]` pass; anything else throws InputError naming `what`.
std::string directive_value(std::string_view value, std::string_view what);

/// Seconds in Slurm's time format: `HH:MM:SS`, or `D-HH:MM:SS` from a day up; rounded up to a
/// whole second and at least one minute (Slurm's granularity).
std::string time_limit(double seconds);

/// A job name Slurm shows in squeue: `attune-<campaign>-t<trial>.<attempt>`, other characters as `_`.
std::string job_name(std::string_view campaign, int trial, int attempt);

/// The variables a trial recipe's environment sections (the adapter's `env_sections`) set:
/// `env_vars.NCCL_ALGO: Ring` gives NCCL_ALGO=Ring, as the framework's launcher would export them.
std::map<std::string, std::string> recipe_environment(const recipe::Document& recipe, const std::vector<std::string>& sections);

/// Everything one sbatch script needs beyond the cluster file.
struct JobSpec {
    std::string job_name;
    int nodes = 1;
    int gpus_per_node = 0;
    double time_limit_s = 0;                 ///< 0: the cluster's time_limit, else none
    std::filesystem::path output;            ///< stdout of the job
    std::filesystem::path error;             ///< stderr of the job
    std::vector<std::string> command;        ///< the training command (launch::trial_command)
    std::map<std::string, std::string> env;  ///< the recipe's environment (over the cluster's)
};

/// The sbatch script: directives from the cluster and the spec, the environment exported with
/// quoted values, and `exec srun [pyxis flags] COMMAND...` with every word quoted. Throws
/// InputError when a value cannot be written safely (see shell_quote, directive_value) or a
/// variable name is not `[A-Za-z_][A-Za-z0-9_]*`.
std::string render_script(const cluster::Cluster& cluster, const JobSpec& spec);

/// A scheduler state as one word: `CANCELLED by 0` and `CANCELLED+` read CANCELLED.
std::string normalize_state(std::string_view state);

/// True for states a job never leaves (COMPLETED, FAILED, TIMEOUT, NODE_FAIL, PREEMPTED,
/// OUT_OF_MEMORY, CANCELLED, BOOT_FAIL, DEADLINE).
bool is_final(std::string_view state);

/// The RunMetrics status a final state means on its own (`node-failure` for NODE_FAIL,
/// `time-limit` for TIMEOUT, ...), empty for COMPLETED. The trial's status is still read from its
/// logs by diagnose; the backend writes `ended in state X` there for it to read.
std::string status_of_state(std::string_view state);

/// GPUs in a TRES list (`billing=1,cpu=1,gres/gpu=8,node=1`, `gres/gpu:h100=8`); nullopt when absent.
std::optional<int> gpus_in_tres(std::string_view tres);

/// The allocation line of one job as `sacct -X -n -P --format=JobID,State,ExitCode,ElapsedRaw,AllocTRES,Submit,Start`
/// prints it.
struct Accounting {
    std::string state;            ///< normalised
    std::string exit_code;        ///< `3:0`
    double elapsed_s = 0;         ///< ElapsedRaw
    std::optional<int> gpus;      ///< from AllocTRES
    std::optional<double> queue_wait_s;  ///< Start - Submit
};

/// The line of `job_id` in sacct's output; nullopt when it is not there yet.
std::optional<Accounting> parse_sacct(std::string_view output, std::string_view job_id);

/// `scontrol show job -o ID` as key=value pairs (JobState, ExitCode, RunTime, ...).
std::map<std::string, std::string> parse_scontrol(std::string_view output);

}  // namespace attune::launch::slurm
