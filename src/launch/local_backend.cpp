// The local backend: the trial command as a child process group on this machine.
#include <attune/core/error.hpp>
#include <attune/launch/backend.hpp>
#include <attune/launch/command.hpp>
#include <attune/launch/slurm.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>
#include <attune/util/subprocess.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <set>
#include <sys/wait.h>
#include <thread>

namespace attune::launch {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double kill_grace_s() {
    const char* text = std::getenv("ATTUNE_LOCAL_KILL_GRACE_S");
    const auto value = text != nullptr ? util::parse_number(text) : std::nullopt;
    return value && *value >= 0 ? *value : 30.0;
}

fs::path attempt_file(const TrialPlan& plan, std::string_view suffix) {
    return plan.dir / fmt::format("attempt-{}.{}", plan.attempt, suffix);
}

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
    return text;
}

class LocalBackend final : public Backend {
public:
    explicit LocalBackend(cluster::Cluster cluster) : m_cluster(std::move(cluster)) {}

    std::string name() const override { return "local"; }

    Submission submit(const gate::GatedTrial& trial, const TrialPlan& plan) override {
        const pid_t pid = start(trial, plan);
        return {fmt::format("local-{}", pid)};
    }

    Outcome wait(const gate::GatedTrial& trial, const TrialPlan& plan, const Submission& job) override {
        pid_t pid = pid_of(job);
        if (!m_children.contains(pid)) {
            // Re-attach after a crash: a trial still running is not ours to reap, so start it again
            // (after stopping the orphan, which would otherwise compete for the GPUs); a trial
            // that is gone is simply run again with the same run id.
            if (util::process_alive(pid) && owned(pid, plan)) {
                spdlog::warn("trial {}: process {} from before the restart is still running; stopping it and running the trial again",
                             plan.trial, pid);
                stop_group(pid, /*reap=*/false);
            }
            pid = start(trial, plan);
        }
        const auto started = m_started.at(pid);
        Outcome outcome;
        std::string reason;
        int status = 0;
        for (;;) {
            const pid_t done = ::waitpid(pid, &status, WNOHANG);
            if (done == pid) break;
            const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
            if (plan.interrupted != nullptr && plan.interrupted->load()) {
                reason = "interrupted by the user";
                outcome.interrupted = true;
            } else if (plan.time_limit_s > 0 && elapsed > plan.time_limit_s) {
                reason = fmt::format("the time limit of {:.0f} s", plan.time_limit_s);
            }
            if (!reason.empty()) {
                status = stop_group(pid, /*reap=*/true);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        m_children.erase(pid);
        outcome.elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();
        m_started.erase(pid);
        outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
        if (outcome.interrupted) outcome.state = "CANCELLED";
        else if (!reason.empty()) outcome.state = "TIMEOUT";
        else outcome.state = outcome.exit_code == 0 ? "COMPLETED" : "FAILED";
        int nodes = 1, per_node = 0;
        outcome.gpus = gpus(trial, &nodes, &per_node);
        outcome.gpu_seconds = outcome.elapsed_s * outcome.gpus;
        outcome.charged_from = "observed wall time x the trial's GPUs";
        const fs::path note_file = attempt_file(plan, "local");
        std::ofstream note(note_file, std::ios::app);
        note << fmt::format("attune: local job {} ended in state {} (exit code {}, elapsed {:.1f} s, {} GPUs)\n", pid,
                            outcome.state, outcome.exit_code, outcome.elapsed_s, outcome.gpus);
        if (!reason.empty()) note << fmt::format("attune: stopped by attune at {}: {}\n", utc_now(), reason);
        note.close();
        outcome.logs = {attempt_file(plan, "log"), note_file};
        return outcome;
    }

    void cancel(const Submission& job) override {
        const pid_t pid = pid_of(job);
        if (pid > 0 && m_children.contains(pid)) {
            stop_group(pid, /*reap=*/true);
            m_children.erase(pid);
        }
    }

private:
    static pid_t pid_of(const Submission& job) {
        if (!job.job_id.starts_with("local-")) return -1;
        return pid_t(util::parse_number(std::string_view(job.job_id).substr(6)).value_or(-1));
    }

    /// The process is the trial's (its environment names the trial recipe), not a reused pid.
    static bool owned(pid_t pid, const TrialPlan& plan) {
        std::ifstream environ("/proc/" + std::to_string(pid) + "/environ");
        const std::string text((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
        const std::string entry = std::string(k_trial_recipe_variable) + "=" + fs::absolute(plan.recipe_file).string();
        return text.find(std::string(1, '\0') + entry + '\0') != std::string::npos || text.starts_with(entry + '\0');
    }

    int gpus(const gate::GatedTrial& trial, int* nodes, int* per_node) const {
        const auto& recipe = trial.recipe();
        const auto world = trial.adapter().quantity(recipe, "world", m_cluster);
        *nodes = 1, *per_node = m_cluster.gpus_per_node;
        return world && *world >= 1 ? int(*world) : m_cluster.gpus_per_node;
    }

    pid_t start(const gate::GatedTrial& trial, const TrialPlan& plan) {
        const std::vector<std::string> argv = trial_command(m_cluster, trial, plan);
        std::map<std::string, std::string> env = m_cluster.env;
        for (const auto& [name, value] : slurm::recipe_environment(trial.recipe(), trial.adapter().env_sections())) env[name] = value;
        env[k_trial_recipe_variable] = fs::absolute(plan.recipe_file).string();
        const fs::path log = attempt_file(plan, "log");
        fs::remove(log), fs::remove(attempt_file(plan, "local"));
        pid_t pid = 0;
        try {
            pid = util::spawn_process_group(argv, log, env);
        } catch (const std::exception& e) {
            throw RuntimeFailure(fmt::format("trial {}: cannot start {}: {}", plan.trial, argv.front(), e.what()));
        }
        m_children.insert(pid);
        m_started[pid] = Clock::now();
        spdlog::info("trial {} attempt {}: started {} as process group {}", plan.trial, plan.attempt, argv.front(), pid);
        return pid;
    }

    /// SIGTERM to the group, then SIGKILL after the grace period; returns the wait status when reaped.
    static int stop_group(pid_t pid, bool reap) {
        ::kill(-pid, SIGTERM);
        const auto deadline = Clock::now() + std::chrono::duration<double>(kill_grace_s());
        int status = 0;
        while (Clock::now() < deadline) {
            if (reap ? ::waitpid(pid, &status, WNOHANG) == pid : !util::process_alive(pid)) {
                ::kill(-pid, SIGKILL);  // what the leader left behind
                return status;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        ::kill(-pid, SIGKILL);
        if (reap) ::waitpid(pid, &status, 0);
        return status;
    }

    cluster::Cluster m_cluster;
    std::set<pid_t> m_children;
    std::map<pid_t, Clock::time_point> m_started;
};

}  // namespace

std::unique_ptr<Backend> make_local_backend(const cluster::Cluster& cluster) {
    return std::make_unique<LocalBackend>(cluster);
}

}  // namespace attune::launch
