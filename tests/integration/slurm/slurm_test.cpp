// Against a REAL single-node Slurm on localhost (scripts/slurm-local.sh; ctest's `slurm` fixture
// starts it): the Slurm backend and `attune tune --backend slurm` launch real jobs whose training
// is `attune sim train` (issue 6). These tests FAIL, never skip, when Slurm is not there.
#include "support/run.hpp"

#include <attune/campaign/trial_io.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/gate/policy.hpp>
#include <attune/launch/backend.hpp>
#include <attune/util/files.hpp>
#include <attune/util/subprocess.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace {

namespace fs = std::filesystem;
using attune::test_support::journal_events;
using attune::test_support::run_attune;
using attune::test_support::TempDir;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string k_recipe = std::string(ATTUNE_FIXTURES) + "/slurm/llama3-8b-1node.yaml";

std::string run(const std::vector<std::string>& argv) {
    const auto r = attune::util::run_process(argv, 30s);
    return r.out;
}

class Slurm : public ::testing::Test {
protected:
    void SetUp() override {
        ::setenv("SLURM_CONF", (fs::path(ATTUNE_SLURM_DIR) / "etc/slurm.conf").c_str(), 1);
        ::setenv("ATTUNE_SLURM_POLL_MIN_S", "0.2", 1);
        ::setenv("ATTUNE_SLURM_POLL_MAX_S", "1", 1);
        const auto ping = attune::util::run_process({"scontrol", "ping"}, 20s);
        ASSERT_TRUE(ping.exit_code == 0 && ping.out.find("UP") != std::string::npos)
            << "The test Slurm cluster is not up (SLURM_CONF=" << std::getenv("SLURM_CONF") << "): start it with "
            << "`scripts/slurm-local.sh up " << ATTUNE_SLURM_DIR << "` (ctest does so in the `slurm` fixture).\n"
            << ping.out << ping.err;
        // A node left DOWN by an earlier failed run would hold every job.
        run({"scontrol", "update", "nodename=localhost", "state=resume"});
    }

    /// The local-slurm example with the absolute path of the binary under test as the training command.
    fs::path cluster_file(const std::string& launcher_yaml) const {
        std::string text = attune::util::read_text_file(fs::path(ATTUNE_SOURCE_DIR) / "examples/clusters/local-slurm.yaml");
        const auto at = text.find("launcher:");
        text.replace(at, text.find('\n', at) - at, "launcher: " + launcher_yaml);
        return m_dir.write("local-slurm.yaml", text);
    }

    static std::string sim_train(int steps, double time_scale = 0) {
        return "[" + std::string(ATTUNE_BINARY) + ", sim, train, --steps, \"" + std::to_string(steps) + "\", --time-scale, \"" +
               std::to_string(time_scale) + "\"]";
    }

    TempDir m_dir;
};

// ------------------------------------------------------------------ the backend on its own

struct Launched {
    attune::cluster::Cluster cluster;
    std::optional<attune::gate::LoadedRecipe> loaded;
    std::optional<attune::gate::GatedTrial> trial;
    attune::launch::TrialPlan plan;
    std::unique_ptr<attune::launch::Backend> backend;
};

std::unique_ptr<Launched> prepare(const fs::path& cluster_file, const fs::path& dir, double time_limit_s, double max_queue_wait_s = 0) {
    auto l = std::make_unique<Launched>();
    const auto& rules = attune::gate::default_rules();
    l->cluster = attune::cluster::load_cluster(cluster_file);
    l->loaded.emplace(attune::gate::load_recipe(k_recipe, rules));
    attune::gate::CheckOptions options;
    options.purpose = attune::gate::Purpose::trial_run;
    const auto policy = attune::gate::load_policy(attune::data_dir(), std::nullopt);
    l->trial = attune::gate::admit(l->loaded->document, l->loaded->document, *l->loaded->adapter, rules, policy, l->cluster, options).second;
    l->plan.trial = 1;
    l->plan.dir = dir / "trials/1";
    fs::create_directories(l->plan.dir);
    l->plan.recipe_file = dir / "trial-001.yaml";
    attune::util::write_file_atomically(l->plan.recipe_file, l->loaded->document.text());
    l->plan.steps = 10;
    l->plan.time_limit_s = time_limit_s;
    l->backend = attune::launch::make_slurm_backend(l->cluster, max_queue_wait_s);
    return l;
}

std::string status_of(const Launched& l, const attune::launch::Outcome& outcome) {
    return attune::campaign::read_trial(outcome.logs, l.loaded->document, *l.loaded->adapter, l.cluster).measured.status;
}

/// Polls squeue until the job is RUNNING.
void wait_running(const std::string& job_id) {
    for (int i = 0; i < 300; ++i) {
        if (run({"squeue", "-h", "-j", job_id, "-o", "%T"}).find("RUNNING") != std::string::npos) return;
        std::this_thread::sleep_for(100ms);
    }
    FAIL() << "job " << job_id << " never ran";
}

TEST_F(Slurm, CompletedJobIsChargedElapsedRawTimesAllocatedGpusFromSacct) {
    auto l = prepare(cluster_file(sim_train(10, 0.05)), m_dir.path(), 600);
    ASSERT_TRUE(l->trial);
    const auto job = l->backend->submit(*l->trial, l->plan);
    EXPECT_TRUE(fs::exists(l->plan.dir / "attempt-1.sbatch"));
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    EXPECT_EQ(outcome.state, "COMPLETED");
    EXPECT_EQ(outcome.exit_code, 0);
    EXPECT_EQ(outcome.gpus, 8);
    EXPECT_NE(outcome.charged_from.find("sacct"), std::string::npos) << outcome.charged_from;
    const std::string acct = run({"sacct", "-X", "-n", "-P", "-j", job.job_id, "--format=ElapsedRaw,AllocTRES"});
    const double elapsed = std::stod(acct.substr(0, acct.find('|')));
    EXPECT_NE(acct.find("gres/gpu=8"), std::string::npos) << acct;
    EXPECT_DOUBLE_EQ(outcome.gpu_seconds, elapsed * 8);
    EXPECT_GE(outcome.queue_wait_s, 0);
    EXPECT_EQ(status_of(*l, outcome), "ok");
    // The environment reached the job: the cluster's variable is in the script, quoted.
    EXPECT_NE(attune::util::read_text_file(l->plan.dir / "attempt-1.sbatch").find("export ATTUNE_TRIAL_ON='local-slurm'"), std::string::npos);
}

TEST_F(Slurm, JobThatExitsNonZeroIsFailedWithItsExitCodeAndReadAsACrash) {
    auto l = prepare(cluster_file(R"([sh, -c, "echo starting; exit 3", sh])"), m_dir.path(), 600);
    const auto job = l->backend->submit(*l->trial, l->plan);
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    EXPECT_EQ(outcome.state, "FAILED");
    EXPECT_EQ(outcome.exit_code, 3);
    EXPECT_EQ(status_of(*l, outcome), "crash");
}

TEST_F(Slurm, JobKilledByItsTimeLimitIsATimeLimitOutcome) {
    // Slurm's granularity is one minute and slurmctld checks limits periodically: 60 to ~90 s.
    auto l = prepare(cluster_file(R"([sh, -c, "echo started; sleep 300", sh])"), m_dir.path(), 1);
    const auto job = l->backend->submit(*l->trial, l->plan);
    EXPECT_NE(attune::util::read_text_file(l->plan.dir / "attempt-1.sbatch").find("#SBATCH --time=00:01:00"), std::string::npos);
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    EXPECT_EQ(outcome.state, "TIMEOUT");
    EXPECT_GE(outcome.elapsed_s, 55);
    EXPECT_EQ(status_of(*l, outcome), "time-limit");
}

TEST_F(Slurm, NodeSetDownWhileATrialRunsIsANodeFailure) {
    auto l = prepare(cluster_file(R"([sh, -c, "echo started; sleep 120", sh])"), m_dir.path(), 600);
    const auto job = l->backend->submit(*l->trial, l->plan);
    wait_running(job.job_id);
    run({"scontrol", "update", "nodename=localhost", "state=down", "reason=attune-test"});
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    run({"scontrol", "update", "nodename=localhost", "state=resume"});
    EXPECT_EQ(outcome.state, "NODE_FAIL");
    EXPECT_EQ(status_of(*l, outcome), "node-failure");
}

TEST_F(Slurm, TrialStillQueuedAfterMaxQueueWaitIsCancelledAndNotCharged) {
    auto l = prepare(cluster_file(sim_train(10)), m_dir.path(), 600, /*max_queue_wait_s=*/2);
    run({"scontrol", "update", "nodename=localhost", "state=drain", "reason=attune-test-queue"});
    const auto job = l->backend->submit(*l->trial, l->plan);
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    run({"scontrol", "update", "nodename=localhost", "state=resume"});
    EXPECT_EQ(outcome.state, "CANCELLED");
    EXPECT_EQ(outcome.gpu_seconds, 0);
    EXPECT_NE(attune::util::read_text_file(l->plan.dir / "attempt-1.slurm").find("--max-queue-wait"), std::string::npos);
    EXPECT_NE(status_of(*l, outcome), "ok");
}

TEST_F(Slurm, InterruptCancelsTheRunningJob) {
    auto l = prepare(cluster_file(R"([sh, -c, "echo started; sleep 120", sh])"), m_dir.path(), 600);
    std::atomic<bool> interrupted{false};
    l->plan.interrupted = &interrupted;
    const auto job = l->backend->submit(*l->trial, l->plan);
    std::thread user([&] {
        wait_running(job.job_id);
        interrupted = true;
    });
    const auto outcome = l->backend->wait(*l->trial, l->plan, job);
    user.join();
    EXPECT_TRUE(outcome.interrupted);
    EXPECT_EQ(outcome.state, "CANCELLED");
    EXPECT_LT(outcome.elapsed_s, 60);
    EXPECT_EQ(run({"squeue", "-h", "-j", job.job_id, "-o", "%T"}), "");
}

// ------------------------------------------------------------------ attune tune --backend slurm

std::vector<std::string> tune_args(const fs::path& campaign, const fs::path& cluster) {
    return {"-q", "tune", k_recipe, "--backend", "slurm", "--cluster", cluster.string(), "--budget", "2gpuh",
            "--trial-steps", "10", "--campaign", campaign.string(), "--json"};
}

/// Every job id the journal launched, and what the metrics and cancelled events charged in all.
struct Charged {
    std::vector<std::string> jobs;
    double gpu_seconds = 0;
};

Charged charged(const std::vector<json>& events) {
    Charged c;
    for (const auto& e : events) {
        if (e["type"] == "launched") c.jobs.push_back(e["job_id"].get<std::string>());
        if (e["type"] == "metrics" || e["type"] == "cancelled") c.gpu_seconds += e["gpu_seconds"].get<double>();
    }
    return c;
}

/// What accounting says the jobs cost: ElapsedRaw x the GPUs in AllocTRES, summed.
double accounted(const std::vector<std::string>& jobs) {
    double total = 0;
    for (const auto& id : jobs) {
        const std::string line = run({"sacct", "-X", "-n", "-P", "-j", id, "--format=ElapsedRaw,AllocTRES"});
        const auto gpus = line.find("gres/gpu=");
        EXPECT_NE(gpus, std::string::npos) << id << ": " << line;
        if (gpus == std::string::npos) continue;
        total += std::stod(line.substr(0, line.find('|'))) * std::stod(line.substr(gpus + 9));
    }
    return total;
}

TEST_F(Slurm, TuneEndToEndLaunchesRealJobsAndChargesWhatAccountingReports) {
    const fs::path campaign = m_dir.path() / "campaign";
    const auto result = run_attune(tune_args(campaign, cluster_file(sim_train(10, 0.05))));  // ~1.5 s per job
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto summary = json::parse(result.out);
    EXPECT_GT(summary["gpu_hours_spent"].get<double>(), 0);
    const auto events = journal_events(campaign);
    const auto c = charged(events);
    ASSERT_GE(c.jobs.size(), 2u);
    std::set<std::string> unique(c.jobs.begin(), c.jobs.end());
    EXPECT_EQ(unique.size(), c.jobs.size()) << "a job id journaled twice";
    for (const auto& e : events)
        if (e["type"] == "metrics") {
            EXPECT_NE(e["charged_from"].get<std::string>().find("sacct"), std::string::npos) << e.dump();
            EXPECT_TRUE(e.contains("queue_wait_s"));
        }
    EXPECT_NEAR(c.gpu_seconds, accounted(c.jobs), 1e-6);
    EXPECT_TRUE(fs::exists(campaign / "trials/0/attempt-1.sbatch"));
    EXPECT_TRUE(fs::exists(campaign / "trials/0/attempt-1.log"));
    EXPECT_TRUE(fs::exists(campaign / "best.yaml"));
}

TEST_F(Slurm, CtrlCCancelsTheRunningTrialAndResumeFinishesTheCampaign) {
    const fs::path campaign = m_dir.path() / "campaign";
    const auto cluster = cluster_file(sim_train(10, 0.1));  // about 3 s of "training" per trial
    std::vector<std::string> argv{ATTUNE_BINARY};
    const auto args = tune_args(campaign, cluster);
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = attune::util::spawn_process_group(argv, m_dir.path() / "tune.log", {});
    std::string job;
    for (int i = 0; i < 600 && job.empty(); ++i) {
        std::this_thread::sleep_for(100ms);
        if (!fs::exists(campaign / "journal.jsonl")) continue;
        for (const auto& e : journal_events(campaign))
            if (e["type"] == "launched") job = e["job_id"];
    }
    ASSERT_FALSE(job.empty()) << attune::util::read_text_file(m_dir.path() / "tune.log");
    wait_running(job);
    ::kill(pid, SIGINT);
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_EQ(WEXITSTATUS(status), 130) << attune::util::read_text_file(m_dir.path() / "tune.log");
    EXPECT_EQ(run({"squeue", "-h", "-j", job, "-o", "%T"}), "") << "the job must be cancelled, not left running";
    EXPECT_NE(run({"sacct", "-X", "-n", "-P", "-j", job, "--format=State"}).find("CANCELLED"), std::string::npos);
    const auto events = journal_events(campaign);
    ASSERT_EQ(events.back()["type"], "cancelled") << events.back().dump();
    EXPECT_EQ(events.back()["job_id"], job);

    // Resume launches the cancelled attempt again and finishes; every job is charged once.
    const auto resumed = run_attune({"-q", "tune", "--resume", "--campaign", campaign.string(), "--json"});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const auto c = charged(journal_events(campaign));
    EXPECT_EQ(c.jobs.front(), job);
    EXPECT_NE(c.jobs.at(1), job);
    EXPECT_NEAR(c.gpu_seconds, accounted(c.jobs), 1e-6);
}

TEST_F(Slurm, ResumeReattachesToAQueuedTrialByJobIdInsteadOfLaunchingAgain) {
    const fs::path campaign = m_dir.path() / "campaign";
    const auto cluster = cluster_file(sim_train(10, 0.05));
    // Hold the node so that the baseline stays PENDING, crash attune right after `launched`
    // (campaign-start, trial-proposed, gate-verdict, preflight, launched), then resume.
    run({"scontrol", "update", "nodename=localhost", "state=drain", "reason=attune-test-queue"});
    const auto crashed = run_attune(tune_args(campaign, cluster), {}, {"ATTUNE_FAULT_ABORT_AFTER_EVENTS=5"});
    EXPECT_NE(crashed.exit_code, 0);
    const auto before = charged(journal_events(campaign));
    ASSERT_EQ(before.jobs.size(), 1u);
    EXPECT_NE(run({"squeue", "-h", "-j", before.jobs[0], "-o", "%T"}).find("PENDING"), std::string::npos);
    std::thread release([] {
        std::this_thread::sleep_for(3s);
        run({"scontrol", "update", "nodename=localhost", "state=resume"});
    });
    const auto resumed = run_attune({"-q", "tune", "--resume", "--campaign", campaign.string(), "--json"});
    release.join();
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const auto events = journal_events(campaign);
    const auto after = charged(events);
    EXPECT_EQ(after.jobs.front(), before.jobs.front());
    int baseline_launches = 0;
    for (const auto& e : events)
        if (e["type"] == "launched" && e["trial"] == 0) ++baseline_launches;
    EXPECT_EQ(baseline_launches, 1);
    EXPECT_NEAR(after.gpu_seconds, accounted(after.jobs), 1e-6);
    for (const auto& e : events)
        if (e["type"] == "metrics" && e["trial"] == 0) EXPECT_GE(e["queue_wait_s"].get<double>(), 2) << e.dump();
}

}  // namespace
