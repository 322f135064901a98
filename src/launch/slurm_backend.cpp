// The Slurm backend: sbatch --parsable, squeue/sacct polling with back-off, scancel. Every command
// is exec'd with an argv (util::run_process), never through a shell.
#include <attune/core/error.hpp>
#include <attune/launch/backend.hpp>
#include <attune/launch/command.hpp>
#include <attune/launch/slurm.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>
#include <attune/util/subprocess.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace attune::launch {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double env_seconds(const char* name, double fallback) {
    const char* text = std::getenv(name);
    if (text == nullptr) return fallback;
    const auto value = util::parse_number(text);
    return value && *value > 0 ? *value : fallback;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// Sleeps up to `seconds`, waking early when the user interrupts.
void nap(double seconds, const std::atomic<bool>* interrupted) {
    const auto until = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < until && !(interrupted != nullptr && interrupted->load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

fs::path attempt_file(const TrialPlan& plan, std::string_view suffix) {
    return plan.dir / fmt::format("attempt-{}.{}", plan.attempt, suffix);
}

int trial_gpus(const gate::GatedTrial& trial, const cluster::Cluster& cluster, int* nodes, int* per_node) {
    const auto& recipe = trial.recipe();
    const auto n = trial.adapter().quantity(recipe, "nodes", cluster);
    const auto g = trial.adapter().quantity(recipe, "gpus_per_node", cluster);
    *nodes = n && *n >= 1 ? int(*n) : cluster.nodes;
    *per_node = g && *g >= 1 ? int(*g) : cluster.gpus_per_node;
    if (const auto world = trial.adapter().quantity(recipe, "world", cluster); world && *world >= 1) {
        // A recipe that gives only its world size: whole nodes of the cluster's shape.
        if (!n) *nodes = std::max(1, int(*world) / std::max(1, *per_node));
        return int(*world);
    }
    return *nodes * *per_node;
}

class SlurmBackend final : public Backend {
public:
    SlurmBackend(cluster::Cluster cluster, double max_queue_wait_s)
        : m_cluster(std::move(cluster)), m_max_queue_wait_s(max_queue_wait_s),
          m_poll_min_s(env_seconds("ATTUNE_SLURM_POLL_MIN_S", 1)), m_poll_max_s(env_seconds("ATTUNE_SLURM_POLL_MAX_S", 30)) {}

    std::string name() const override { return "slurm"; }

    Submission submit(const gate::GatedTrial& trial, const TrialPlan& plan) override {
        int nodes = 1, per_node = 0;
        trial_gpus(trial, m_cluster, &nodes, &per_node);
        slurm::JobSpec spec;
        spec.job_name = slurm::job_name(fs::absolute(plan.dir).parent_path().parent_path().filename().string(), plan.trial, plan.attempt);
        spec.nodes = nodes;
        spec.gpus_per_node = per_node;
        spec.time_limit_s = plan.time_limit_s;
        spec.output = fs::absolute(attempt_file(plan, "log"));
        spec.error = fs::absolute(attempt_file(plan, "err"));
        spec.command = trial_command(m_cluster, trial, plan);
        spec.env = slurm::recipe_environment(trial.recipe(), trial.adapter().env_sections());
        spec.env[k_trial_recipe_variable] = fs::absolute(plan.recipe_file).string();
        const std::string script = slurm::render_script(m_cluster, spec);
        const fs::path script_file = attempt_file(plan, "sbatch");
        util::write_file_atomically(script_file, script);
        // Files of an earlier run of this attempt (a launch cancelled by Ctrl-C) would be read as this one's.
        for (const auto* suffix : {"log", "err", "slurm"}) fs::remove(attempt_file(plan, suffix));
        const auto result = util::run_process({"sbatch", "--parsable", fs::absolute(script_file).string()});
        if (result.exit_code != 0)
            throw RuntimeFailure(fmt::format("sbatch {}: exit {}: {}", script_file.string(), result.exit_code,
                                             util::trim(result.err.empty() ? result.out : result.err)));
        // --parsable prints `ID` or `ID;CLUSTER`.
        std::string id(util::trim(result.out));
        id = id.substr(0, id.find(';'));
        if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '_'; }))
            throw RuntimeFailure(fmt::format("sbatch printed '{}', not a job id", util::trim(result.out)));
        spdlog::info("trial {} attempt {}: submitted Slurm job {} ({})", plan.trial, plan.attempt, id, script_file.string());
        return {id};
    }

    Outcome wait(const gate::GatedTrial& trial, const TrialPlan& plan, const Submission& job) override {
        int nodes = 1, per_node = 0;
        const int gpus = trial_gpus(trial, m_cluster, &nodes, &per_node);
        const auto waited_from = Clock::now();
        std::optional<Clock::time_point> seen_running;
        std::optional<double> seen_queue_wait;
        std::string last_state;
        std::string cancel_reason;
        Outcome outcome;
        double interval = m_poll_min_s;
        for (;;) {
            for (;;) {
                if (plan.interrupted != nullptr && plan.interrupted->load() && cancel_reason.empty()) {
                    cancel_reason = "interrupted by the user";
                    outcome.interrupted = true;
                    cancel(job);
                }
                const auto queued = util::run_process({"squeue", "-h", "-j", job.job_id, "-o", "%T"});
                const std::string state = queued.exit_code == 0 ? slurm::normalize_state(queued.out) : std::string();
                if (state.empty() || slurm::is_final(state)) break;  // gone from the queue: accounting has the rest
                if (state != last_state) spdlog::info("Slurm job {}: {}", job.job_id, state), last_state = state;
                if (state == "RUNNING" || state == "COMPLETING") {
                    if (!seen_running) seen_running = Clock::now(), seen_queue_wait = seconds_since(waited_from);
                } else if (m_max_queue_wait_s > 0 && !seen_running && cancel_reason.empty() &&
                           seconds_since(waited_from) > m_max_queue_wait_s) {
                    cancel_reason = fmt::format("still {} after --max-queue-wait {:.0f} s", state, m_max_queue_wait_s);
                    cancel(job);
                }
                nap(cancel_reason.empty() ? interval : 1.0, plan.interrupted);
                interval = std::min(m_poll_max_s, interval * 1.5);
            }
            if (read_end(job, outcome, seen_running ? seconds_since(*seen_running) : 0, seen_queue_wait)) break;
            // squeue did not answer (a controller restart?) but the job has not ended: poll on.
            spdlog::warn("Slurm job {}: squeue lost it, but accounting says {}; polling on", job.job_id, outcome.state);
            nap(m_poll_max_s, plan.interrupted);
        }
        if (outcome.gpus == 0) outcome.gpus = gpus;
        outcome.gpu_seconds = outcome.elapsed_s * outcome.gpus;
        outcome.logs = {attempt_file(plan, "log"), attempt_file(plan, "err"), attempt_file(plan, "slurm")};
        for (const auto& log : outcome.logs)
            if (!fs::exists(log)) util::write_file_atomically(log, "");
        // The scheduler's own word on how the job ended, for diagnose to read beside the job's output
        // (a node that failed may leave no line in the job's own log).
        std::string note = fmt::format("attune: slurm job {} ended in state {} (exit code {}, elapsed {:.0f} s, {} GPUs, queue wait {:.0f} s)\n",
                                       job.job_id, outcome.state, outcome.exit_code, outcome.elapsed_s, outcome.gpus, outcome.queue_wait_s);
        if (!cancel_reason.empty()) note += "attune: cancelled by attune: " + cancel_reason + "\n";
        std::ofstream(attempt_file(plan, "slurm"), std::ios::app) << note;
        spdlog::info("Slurm job {}: {} after {:.0f} s ({:.0f} s queued), {:.0f} GPU-s from {}", job.job_id, outcome.state,
                     outcome.elapsed_s, outcome.queue_wait_s, outcome.gpu_seconds, outcome.charged_from);
        return outcome;
    }

    void cancel(const Submission& job) override {
        if (job.job_id.empty()) return;
        const auto r = util::run_process({"scancel", job.job_id});
        if (r.exit_code != 0) spdlog::warn("scancel {}: {}", job.job_id, util::trim(r.err));
        else spdlog::info("Slurm job {}: scancel sent", job.job_id);
    }

private:
    /// Fills the outcome from accounting once the job has left the queue; false when the job has
    /// not ended after all. sacct first (retried while slurmdbd catches up); without accounting,
    /// scontrol (which keeps a finished job for MinJobAge) and the times observed here.
    bool read_end(const Submission& job, Outcome& outcome, double observed_elapsed, std::optional<double> seen_queue_wait) const {
        std::optional<slurm::Accounting> acct;
        std::string acct_problem;
        for (int tries = 0; tries < 20; ++tries) {
            const auto r = util::run_process({"sacct", "-X", "-n", "-P", "-j", job.job_id,
                                              "--format=JobID,State,ExitCode,ElapsedRaw,AllocTRES,Submit,Start"});
            if (r.exit_code != 0) {
                acct_problem = std::string(util::trim(r.err.empty() ? r.out : r.err));
                acct.reset();
                break;
            }
            acct = slurm::parse_sacct(r.out, job.job_id);
            if (acct && slurm::is_final(acct->state)) break;
            acct_problem = acct ? "sacct says " + acct->state : "sacct does not know the job";
            std::this_thread::sleep_for(std::chrono::milliseconds(500));
        }
        if (acct) {
            outcome.state = acct->state;
            if (!slurm::is_final(acct->state)) return false;
            outcome.exit_code = exit_status(acct->exit_code);
            outcome.elapsed_s = acct->elapsed_s;
            outcome.gpus = acct->gpus.value_or(0);
            outcome.queue_wait_s = acct->queue_wait_s.value_or(seen_queue_wait.value_or(0));
            outcome.charged_from = acct->gpus ? "sacct ElapsedRaw x AllocTRES gres/gpu"
                                              : "sacct ElapsedRaw x the trial's GPUs (AllocTRES has no gres/gpu)";
            return true;
        }
        const auto shown = util::run_process({"scontrol", "show", "job", "-o", job.job_id});
        const auto fields = slurm::parse_scontrol(shown.out);
        const auto it = fields.find("JobState");
        outcome.state = it != fields.end() ? slurm::normalize_state(it->second) : (outcome.interrupted ? "CANCELLED" : "UNKNOWN");
        if (it != fields.end() && !slurm::is_final(outcome.state)) return false;
        if (const auto code = fields.find("ExitCode"); code != fields.end()) outcome.exit_code = exit_status(code->second);
        const auto run_time = fields.contains("RunTime") ? cluster::slurm_time_seconds(fields.at("RunTime")) : std::nullopt;
        outcome.elapsed_s = run_time.value_or(observed_elapsed);
        outcome.queue_wait_s = seen_queue_wait.value_or(0);
        outcome.charged_from = fmt::format("observed start/end ({} x the trial's GPUs; accounting unavailable: {})",
                                           run_time ? "scontrol RunTime" : "polled wall time", acct_problem);
        return true;
    }

    /// `3:0` (exit code : signal) as one number, 128 + signal when a signal ended it.
    static int exit_status(std::string_view text) {
        const auto parts = util::split(text, ':');
        const int code = parts.empty() ? 0 : int(util::parse_number(parts[0]).value_or(0));
        const int signal = parts.size() > 1 ? int(util::parse_number(parts[1]).value_or(0)) : 0;
        return code != 0 ? code : (signal != 0 ? 128 + signal : 0);
    }

    cluster::Cluster m_cluster;
    double m_max_queue_wait_s;
    double m_poll_min_s;
    double m_poll_max_s;
};

}  // namespace

std::unique_ptr<Backend> make_slurm_backend(const cluster::Cluster& cluster, double max_queue_wait_s) {
    return std::make_unique<SlurmBackend>(cluster, max_queue_wait_s);
}

}  // namespace attune::launch
