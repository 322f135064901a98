// The local backend: a child process group with a time limit, log capture, interrupt and
// re-attach after a crash; and `attune tune --backend local` end to end (issue 6).
#include "support/run.hpp"

#include <attune/campaign/trial_io.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/gate/policy.hpp>
#include <attune/launch/backend.hpp>
#include <attune/util/files.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
using attune::test_support::TempDir;
using namespace std::chrono_literals;

const std::string k_recipe = std::string(ATTUNE_FIXTURES) + "/slurm/llama3-8b-1node.yaml";

struct Local {
    TempDir dir;
    attune::cluster::Cluster cluster;
    std::optional<attune::gate::LoadedRecipe> loaded;
    std::optional<attune::gate::GatedTrial> trial;
    attune::launch::TrialPlan plan;
    std::unique_ptr<attune::launch::Backend> backend;

    explicit Local(std::vector<std::string> launcher, double time_limit_s = 600) {
        ::setenv("ATTUNE_LOCAL_KILL_GRACE_S", "1", 1);
        const auto& rules = attune::gate::default_rules();
        cluster.nodes = 1;
        cluster.launcher = std::move(launcher);
        cluster.env = {{"FROM_CLUSTER", "it's here"}};
        loaded.emplace(attune::gate::load_recipe(k_recipe, rules));
        attune::gate::CheckOptions options;
        options.purpose = attune::gate::Purpose::trial_run;
        trial = attune::gate::admit(loaded->document, loaded->document, *loaded->adapter, rules,
                                    attune::gate::load_policy(attune::data_dir(), std::nullopt), cluster, options).second;
        plan.trial = 0;
        plan.dir = dir.path() / "trials/0";
        fs::create_directories(plan.dir);
        plan.recipe_file = dir.path() / "trial-000.yaml";
        attune::util::write_file_atomically(plan.recipe_file, loaded->document.text());
        plan.time_limit_s = time_limit_s;
        backend = attune::launch::make_local_backend(cluster);
    }

    std::string status(const attune::launch::Outcome& outcome) const {
        return attune::campaign::read_trial(outcome.logs, loaded->document, *loaded->adapter, cluster).measured.status;
    }
};

TEST(LocalBackend, RunsTheTrainingCommandWithTheRecipeAndChargesWallTimeTimesGpus) {
    Local l({ATTUNE_BINARY, "sim", "train", "--steps", "10"});
    ASSERT_TRUE(l.trial);
    const auto job = l.backend->submit(*l.trial, l.plan);
    EXPECT_EQ(job.job_id.rfind("local-", 0), 0u) << job.job_id;
    const auto outcome = l.backend->wait(*l.trial, l.plan, job);
    EXPECT_EQ(outcome.state, "COMPLETED");
    EXPECT_EQ(outcome.exit_code, 0);
    EXPECT_EQ(outcome.gpus, 8);
    EXPECT_NEAR(outcome.gpu_seconds, outcome.elapsed_s * 8, 1e-9);
    EXPECT_EQ(l.status(outcome), "ok");
}

TEST(LocalBackend, PassesTheEnvironmentAndTheRecipePathAsArgvWithoutAShell) {
    Local l({"sh", "-c", "printf '%s|%s\\n' \"$FROM_CLUSTER\" \"$1\"", "sh"});
    const auto outcome = l.backend->wait(*l.trial, l.plan, l.backend->submit(*l.trial, l.plan));
    EXPECT_EQ(attune::util::read_text_file(outcome.logs.at(0)), "it's here|" + fs::absolute(l.plan.recipe_file).string() + "\n");
}

TEST(LocalBackend, KillsTheProcessGroupAtTheTimeLimit) {
    Local l({"sh", "-c", "sleep 60 & sleep 60", "sh"}, 1);
    const auto start = std::chrono::steady_clock::now();
    const auto outcome = l.backend->wait(*l.trial, l.plan, l.backend->submit(*l.trial, l.plan));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
    EXPECT_EQ(outcome.state, "TIMEOUT");
    EXPECT_EQ(l.status(outcome), "time-limit");
}

TEST(LocalBackend, FailedCommandIsACrashWithItsExitCode) {
    Local l({"sh", "-c", "echo boom; exit 3", "sh"});
    const auto outcome = l.backend->wait(*l.trial, l.plan, l.backend->submit(*l.trial, l.plan));
    EXPECT_EQ(outcome.state, "FAILED");
    EXPECT_EQ(outcome.exit_code, 3);
    EXPECT_EQ(l.status(outcome), "crash");
}

TEST(LocalBackend, InterruptStopsTheRunningTrial) {
    Local l({"sh", "-c", "sleep 60", "sh"});
    std::atomic<bool> interrupted{false};
    l.plan.interrupted = &interrupted;
    const auto job = l.backend->submit(*l.trial, l.plan);
    std::thread user([&] {
        std::this_thread::sleep_for(300ms);
        interrupted = true;
    });
    const auto outcome = l.backend->wait(*l.trial, l.plan, job);
    user.join();
    EXPECT_TRUE(outcome.interrupted);
    EXPECT_EQ(outcome.state, "CANCELLED");
    EXPECT_LT(outcome.elapsed_s, 10);
}

TEST(LocalBackend, ReattachAfterACrashRunsTheTrialAgainWhenItsProcessIsGone) {
    Local l({ATTUNE_BINARY, "sim", "train", "--steps", "10"});
    // A fresh backend (a restarted attune) given a job id whose process no longer exists.
    const auto outcome = l.backend->wait(*l.trial, l.plan, attune::launch::Submission{"local-999999999"});
    EXPECT_EQ(outcome.state, "COMPLETED");
    EXPECT_EQ(l.status(outcome), "ok");
}

TEST(LocalBackend, TuneEndToEnd) {
    TempDir dir;
    const auto cluster = dir.write("local.yaml", "name: local\ngpu: h100\nnodes: 1\ngpus_per_node: 8\nlauncher: [" +
                                                     std::string(ATTUNE_BINARY) + ", sim, train, --steps, \"10\"]\n");
    const auto r = attune::test_support::run_attune({"-q", "tune", k_recipe, "--backend", "local", "--cluster", cluster.string(),
                                                     "--budget", "2gpuh", "--trial-steps", "10", "--campaign",
                                                     (dir.path() / "c").string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto summary = nlohmann::json::parse(r.out);
    EXPECT_GT(summary["gpu_hours_spent"].get<double>(), 0);
    EXPECT_LT(summary["gpu_hours_spent"].get<double>(), 0.5);
    std::ifstream journal(dir.path() / "c/journal.jsonl");
    int launched = 0;
    for (std::string line; std::getline(journal, line);) {
        const auto event = nlohmann::json::parse(line);
        if (event["type"] == "launched") ++launched;
        // A real node's start-up is learned from the trials' charges, not the simulated cluster's constant.
        if (event["type"] == "campaign-start") EXPECT_TRUE(event["fixed_startup_s"].is_null()) << line;
    }
    EXPECT_GE(launched, 2);
}

TEST(LocalBackend, TunesOnAGpuAttuneHasNoSpecsForFromTheTrialsAlone) {
    TempDir dir;
    const auto cluster = dir.write("mi300x.yaml", "name: mi300x-node\ngpu: MI300X\nnodes: 1\ngpus_per_node: 8\nlauncher: [" +
                                                      std::string(ATTUNE_BINARY) + ", sim, train, --steps, \"10\"]\n");
    // No estimate: a trial's worst case is its time limit, 1 h x 8 GPUs, so the budget is larger.
    const auto r = attune::test_support::run_attune({"tune", k_recipe, "--backend", "local", "--cluster", cluster.string(),
                                                     "--budget", "40gpuh", "--trial-steps", "10", "--campaign",
                                                     (dir.path() / "c").string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("no specs for GPU 'mi300x'"), std::string::npos) << r.err;
    const auto summary = nlohmann::json::parse(r.out);
    EXPECT_GT(summary["speedup"].get<double>(), 1.1) << "the rules improve the recipe from diagnosis alone: " << r.out;
    const auto sim = attune::test_support::run_attune({"tune", k_recipe, "--cluster", cluster.string(), "--budget", "40gpuh",
                                                       "--campaign", (dir.path() / "s").string()});
    EXPECT_EQ(sim.exit_code, 2) << "the simulated cluster needs the GPU's specs";
    EXPECT_NE(sim.err.find("mi300x"), std::string::npos) << sim.err;
    // A misspelt GPU is not refused on a real backend, but the warning names the GPU it resembles.
    const auto typo = dir.write("typo.yaml", "name: typo\ngpu: h10\nnodes: 1\ngpus_per_node: 8\nlauncher: [/bin/true]\n");
    const auto warned = attune::test_support::run_attune({"tune", k_recipe, "--backend", "local", "--cluster", typo.string(),
                                                          "--budget", "1gpuh", "--campaign", (dir.path() / "t").string()});
    EXPECT_EQ(warned.exit_code, 0) << warned.err;
    EXPECT_NE(warned.err.find("did you mean 'h100'?"), std::string::npos) << warned.err;
}

TEST(Backends, UnknownBackendNameIsABadInputBeforeAnythingIsWritten) {
    TempDir dir;
    const auto r = attune::test_support::run_attune({"tune", k_recipe, "--backend", "kubernetes", "--campaign", (dir.path() / "c").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("expected one of sim, local, slurm"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir.path() / "c/journal.jsonl"));
}

}  // namespace
