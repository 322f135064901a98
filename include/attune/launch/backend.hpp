#pragma once
// Backends run gated trials: sim (in-process world), local (a child process), slurm (sbatch).
// A campaign submits, journals the job id, then waits; after a crash it re-attaches by job id.

#include <attune/cluster/cluster.hpp>
#include <attune/gate/gated_trial.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::launch {

/// How one attempt of a trial is run.
struct TrialPlan {
    int trial = 0;
    int attempt = 1;
    int steps = 0;                       ///< optimisation steps to run
    double time_limit_s = 0;             ///< the job is killed past this (its worst-case cost)
    std::filesystem::path dir;           ///< trials/<n>/: logs and the backend's own files go here
    std::filesystem::path recipe_file;   ///< the trial recipe as the framework reads it
    std::uint64_t run_id = 0;            ///< distinguishes repeated runs of one configuration
    int early_stop_min_steps = 0;        ///< stop once throughput is stable after this many timed steps; 0: never
    /// Set by the user's Ctrl-C: wait() cancels the job and returns an interrupted Outcome.
    const std::atomic<bool>* interrupted = nullptr;
};

/// A submitted job, as the journal records it.
struct Submission {
    std::string job_id;
};

/// What an attempt cost and where its output is. The status of the run is read from the logs by
/// diagnose, not decided here; `state` is the scheduler's word for how the job ended.
struct Outcome {
    std::vector<std::filesystem::path> logs;
    int exit_code = 0;
    std::string state;                   ///< COMPLETED, FAILED, TIMEOUT, NODE_FAIL, ... (Slurm words)
    double elapsed_s = 0;
    int gpus = 0;
    double gpu_seconds = 0;              ///< what the ledger charges
    std::string charged_from;            ///< "simulated clock", "sacct", "observed start/end"
    double queue_wait_s = 0;             ///< submit to start: reported, never charged
    /// The wait ended because `TrialPlan::interrupted` was set: the job was cancelled and the
    /// attempt is not measured (a resumed campaign launches it again).
    bool interrupted = false;
};

class Backend {
public:
    virtual ~Backend() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    virtual Submission submit(const gate::GatedTrial& trial, const TrialPlan& plan) = 0;
    /// Blocks until the job ends, or until `plan.interrupted` is set (then cancels it). Also used
    /// to re-attach to a job submitted before a crash.
    virtual Outcome wait(const gate::GatedTrial& trial, const TrialPlan& plan, const Submission& job) = 0;
    /// Stops the job if it is still queued or running; a job already ended is no error.
    virtual void cancel(const Submission& job) = 0;
};

/// Simulated job start-up charged to every trial (container, NCCL init, model build), seconds.
inline constexpr double k_sim_startup_s = 150;

/// The start-up a backend charges every trial when it is fixed before anything runs (the simulated
/// cluster's); nullopt where only the trials' own charges tell it (a real node or cluster).
std::optional<double> fixed_startup_s(std::string_view backend);

/// The embedded simulated cluster: trials run in-process in a seeded world the estimator does not
/// see; time is simulated, so a campaign of hundreds of GPU-hours takes seconds.
std::unique_ptr<Backend> make_sim_backend(const cluster::Cluster& cluster, std::uint64_t world_seed);

/// A child process group on this machine: argv = cluster.launcher + the trial recipe's path, with
/// the cluster's and the recipe's environment, a time limit (SIGTERM, then SIGKILL of the group)
/// and GPU-seconds = wall time x the trial's GPUs (docs/backends.md).
std::unique_ptr<Backend> make_local_backend(const cluster::Cluster& cluster);

/// Slurm: one sbatch script per trial, `sbatch --parsable`, squeue/sacct polling, scancel
/// (docs/backends.md). `max_queue_wait_s` > 0 cancels a job still pending after that long.
std::unique_ptr<Backend> make_slurm_backend(const cluster::Cluster& cluster, double max_queue_wait_s = 0);

}  // namespace attune::launch

namespace attune::launch {

/// Serves a recorded campaign's outcomes instead of launching: (trial, attempt) -> what was
/// measured then (log paths absolute, in the recorded folder). A trial the record lacks
/// "crashes" with a log that says so: the replay has diverged.
std::unique_ptr<Backend> make_replay_backend(std::map<std::pair<int, int>, Outcome> recorded);

}  // namespace attune::launch
