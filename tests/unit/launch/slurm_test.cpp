// The Slurm backend's pure parts: quoting, the sbatch script, time formats, and the reading of
// squeue/sacct/scontrol output (issue 6). The real cluster is in tests/integration/slurm.
#include <attune/cluster/cluster.hpp>
#include <attune/core/error.hpp>
#include <attune/launch/slurm.hpp>
#include <attune/recipe/document.hpp>
#include <attune/util/subprocess.hpp>

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace {

namespace slurm = attune::launch::slurm;
using attune::InputError;

attune::cluster::Cluster test_cluster() {
    attune::cluster::Cluster c;
    c.name = "test";
    c.partition = "gpu";
    c.account = "proj-42";
    c.launcher = {"python", "-m", "nemo.collections.llm.run"};
    return c;
}

slurm::JobSpec test_spec() {
    slurm::JobSpec spec;
    spec.job_name = "attune-c-t1.1";
    spec.nodes = 2;
    spec.gpus_per_node = 8;
    spec.time_limit_s = 345;
    spec.output = "/camp/trials/1/attempt-1.log";
    spec.error = "/camp/trials/1/attempt-1.err";
    spec.command = {"python", "-m", "nemo.collections.llm.run", "/camp/recipes/trial-001.yaml"};
    return spec;
}

/// What sh makes of a quoted word: run it through a real shell and read it back.
std::string through_sh(const std::string& quoted) {
    const auto r = attune::util::run_process({"sh", "-c", "printf '%s' " + quoted});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
}

TEST(SlurmQuote, RoundTripsHostileTextThroughARealShell) {
    for (const std::string value : {"plain", "with space", "it's", "$(rm -rf /)", "`id`", "a;b|c&d", "\"dq\"", "'", "''",
                                    "back\\slash", "$HOME ${X:-y}", "*?[a]", "", "ünïcödé", "--flag=x y"})
        EXPECT_EQ(through_sh(slurm::shell_quote(value, "test")), value) << value;
}

TEST(SlurmQuote, RejectsNewlineCarriageReturnAndNul) {
    EXPECT_THROW(slurm::shell_quote("a\nb", "x"), InputError);
    EXPECT_THROW(slurm::shell_quote("a\rb", "x"), InputError);
    EXPECT_THROW(slurm::shell_quote(std::string("a\0b", 3), "x"), InputError);
    try {
        slurm::shell_quote("a\nb", "environment variable NCCL_ALGO");
        FAIL();
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("environment variable NCCL_ALGO"), std::string::npos) << e.what();
    }
}

TEST(SlurmDirective, AcceptsSchedulerNamesAndRefusesAnythingElse) {
    EXPECT_EQ(slurm::directive_value("gpu-h100_a,b:c", "partition"), "gpu-h100_a,b:c");
    EXPECT_EQ(slurm::directive_value("/tmp/x/attempt-1.log", "output"), "/tmp/x/attempt-1.log");
    EXPECT_THROW(slurm::directive_value("a b", "partition"), InputError);
    EXPECT_THROW(slurm::directive_value("a\nb", "partition"), InputError);
    EXPECT_THROW(slurm::directive_value("x;rm", "account"), InputError);
    EXPECT_THROW(slurm::directive_value("", "account"), InputError);
}

TEST(SlurmTime, FormatsSecondsAsSlurmTimeRoundedUpToAMinuteAtLeast) {
    EXPECT_EQ(slurm::time_limit(1), "00:01:00");
    EXPECT_EQ(slurm::time_limit(344.2), "00:05:45");
    EXPECT_EQ(slurm::time_limit(3600), "01:00:00");
    EXPECT_EQ(slurm::time_limit(90061), "1-01:01:01");
}

TEST(SlurmJobName, NamesCampaignTrialAndAttemptWithSafeCharacters) {
    EXPECT_EQ(slurm::job_name("llama 8b;x", 3, 2), "attune-llama_8b_x-t3.2");
}

TEST(SlurmScript, HasEveryDirectiveTheClusterAndTrialAskFor) {
    auto c = test_cluster();
    c.qos = "high";
    c.reservation = "maint";
    c.constraint = "h100";
    c.container_image = "nvcr.io/nvidia/nemo:24.07";
    c.container_mounts = "/fsx:/fsx";
    const auto script = slurm::render_script(c, test_spec());
    for (const std::string line : {"#!/bin/bash\n", "#SBATCH --job-name=attune-c-t1.1\n", "#SBATCH --nodes=2\n",
                                   "#SBATCH --gpus-per-node=8\n", "#SBATCH --partition=gpu\n", "#SBATCH --account=proj-42\n",
                                   "#SBATCH --qos=high\n", "#SBATCH --reservation=maint\n", "#SBATCH --constraint=h100\n",
                                   "#SBATCH --exclusive\n", "#SBATCH --time=00:05:45\n",
                                   "#SBATCH --output=/camp/trials/1/attempt-1.log\n", "#SBATCH --error=/camp/trials/1/attempt-1.err\n",
                                   "#SBATCH --no-requeue\n",
                                   "exec srun --container-image='nvcr.io/nvidia/nemo:24.07' --container-mounts='/fsx:/fsx' 'python' '-m' "
                                   "'nemo.collections.llm.run' '/camp/recipes/trial-001.yaml'\n"})
        EXPECT_NE(script.find(line), std::string::npos) << "missing: " << line << "in:\n" << script;
}

TEST(SlurmScript, UsesGresWhenTheClusterSaysSoAndItsTimeLimitWhenTheTrialHasNone) {
    auto c = test_cluster();
    c.gpus_flag = "gres";
    c.exclusive = false;
    c.time_limit = "00:30:00";
    auto spec = test_spec();
    spec.time_limit_s = 0;
    const auto script = slurm::render_script(c, spec);
    EXPECT_NE(script.find("#SBATCH --gres=gpu:8\n"), std::string::npos) << script;
    EXPECT_NE(script.find("#SBATCH --time=00:30:00\n"), std::string::npos) << script;
    EXPECT_EQ(script.find("--exclusive"), std::string::npos) << script;
    EXPECT_EQ(script.find("container"), std::string::npos) << script;
}

TEST(SlurmScript, QuotesEnvironmentValuesAndTheRecipeOverridesTheCluster) {
    auto c = test_cluster();
    c.env = {{"NCCL_DEBUG", "WARN"}, {"SHARED", "from cluster"}};
    auto spec = test_spec();
    spec.env = {{"SHARED", "$(touch /tmp/pwned) it's"}, {"NCCL_ALGO", "Ring"}};
    const auto script = slurm::render_script(c, spec);
    EXPECT_NE(script.find("export NCCL_DEBUG='WARN'\n"), std::string::npos) << script;
    EXPECT_NE(script.find("export NCCL_ALGO='Ring'\n"), std::string::npos) << script;
    EXPECT_NE(script.find("export SHARED='$(touch /tmp/pwned) it'\\''s'\n"), std::string::npos) << script;
    EXPECT_EQ(script.find("from cluster"), std::string::npos) << script;
}

TEST(SlurmScript, RefusesWhatCannotBeWrittenSafely) {
    auto spec = test_spec();
    spec.env = {{"BAD NAME", "x"}};
    EXPECT_THROW(slurm::render_script(test_cluster(), spec), InputError);
    spec.env = {{"X", "line1\nline2"}};
    EXPECT_THROW(slurm::render_script(test_cluster(), spec), InputError);
    auto c = test_cluster();
    c.partition = "gpu\n#SBATCH --account=someone-else";
    EXPECT_THROW(slurm::render_script(c, test_spec()), InputError);
    spec = test_spec();
    spec.output = "/a path with spaces/x.log";
    EXPECT_THROW(slurm::render_script(test_cluster(), spec), InputError);
}

TEST(SlurmScript, RunsAsBashWithTheValuesIntact) {
    // The rendered script, with srun replaced by a function that prints its argv, run by bash.
    auto spec = test_spec();
    spec.command = {"echo-args", "a b", "it's", "/camp/recipes/trial-001.yaml"};
    spec.env = {{"TRICKY", "$(echo no) `echo no` ; echo no"}};
    std::string script = slurm::render_script(test_cluster(), spec);
    script.replace(script.find("exec srun"), 9, "srun() { printf '[%s]' \"$@\"; printf '%s' \"$TRICKY\"; }; srun");
    const auto r = attune::util::run_process({"bash", "-c", script});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "[echo-args][a b][it's][/camp/recipes/trial-001.yaml]$(echo no) `echo no` ; echo no");
}

TEST(SlurmEnvironment, TakesTheRecipesEnvironmentSectionsOnly) {
    const auto doc = attune::recipe::Document::parse(
        "env_vars:\n  NCCL_ALGO: Ring\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\n  UNSET: null\nmodel:\n  tp: 2\n", "recipe.yaml", {"env_vars"});
    const auto env = slurm::recipe_environment(doc, {"env_vars"});
    EXPECT_EQ(env, (std::map<std::string, std::string>{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}, {"NCCL_ALGO", "Ring"}}));
    EXPECT_TRUE(slurm::recipe_environment(doc, {}).empty());
}

TEST(SlurmState, NormalisesAndKnowsFinalStates) {
    EXPECT_EQ(slurm::normalize_state("CANCELLED by 0"), "CANCELLED");
    EXPECT_EQ(slurm::normalize_state("CANCELLED+"), "CANCELLED");
    EXPECT_EQ(slurm::normalize_state(" RUNNING\n"), "RUNNING");
    for (const char* s : {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY", "CANCELLED+"})
        EXPECT_TRUE(slurm::is_final(s)) << s;
    for (const char* s : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED", "SUSPENDED", ""})
        EXPECT_FALSE(slurm::is_final(s)) << s;
}

TEST(SlurmState, MapsEachEndToTheStatusDiagnoseUses) {
    EXPECT_EQ(slurm::status_of_state("COMPLETED"), "");
    EXPECT_EQ(slurm::status_of_state("TIMEOUT"), "time-limit");
    EXPECT_EQ(slurm::status_of_state("NODE_FAIL"), "node-failure");
    EXPECT_EQ(slurm::status_of_state("PREEMPTED"), "preempted");
    EXPECT_EQ(slurm::status_of_state("OUT_OF_MEMORY"), "oom");
    EXPECT_EQ(slurm::status_of_state("FAILED"), "crash");
    EXPECT_EQ(slurm::status_of_state("CANCELLED by 1000"), "hang");
}

TEST(SlurmAccounting, ReadsGpusFromAllocTres) {
    EXPECT_EQ(slurm::gpus_in_tres("billing=1,cpu=1,gres/gpu=8,node=1"), 8);
    EXPECT_EQ(slurm::gpus_in_tres("cpu=2,gres/gpu:h100=4,node=1"), 4);
    EXPECT_EQ(slurm::gpus_in_tres("billing=1,cpu=1,node=1"), std::nullopt);
    EXPECT_EQ(slurm::gpus_in_tres(""), std::nullopt);
}

TEST(SlurmAccounting, ReadsTheAllocationLineOfTheJob) {
    const std::string out = "11|COMPLETED|0:0|3|billing=1,cpu=1,gres/gpu=8,node=1|2026-12-03T07:10:50|2026-12-03T07:10:52\n"
                            "12|CANCELLED by 0|0:15|1|billing=1,cpu=1,node=1|2026-12-03T07:10:50|2026-12-03T07:10:51\n";
    const auto a = slurm::parse_sacct(out, "11");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->state, "COMPLETED");
    EXPECT_EQ(a->exit_code, "0:0");
    EXPECT_EQ(a->elapsed_s, 3);
    EXPECT_EQ(a->gpus, 8);
    EXPECT_EQ(a->queue_wait_s, 2);
    const auto b = slurm::parse_sacct(out, "12");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->state, "CANCELLED");
    EXPECT_EQ(b->gpus, std::nullopt);
    EXPECT_FALSE(slurm::parse_sacct(out, "13"));
    EXPECT_FALSE(slurm::parse_sacct("", "11"));
}

TEST(SlurmAccounting, ReadsScontrolKeyValues) {
    const auto f = slurm::parse_scontrol("JobId=5 JobName=x JobState=TIMEOUT Reason=TimeLimit ExitCode=0:0 RunTime=00:01:04\n");
    EXPECT_EQ(f.at("JobState"), "TIMEOUT");
    EXPECT_EQ(attune::cluster::slurm_time_seconds(f.at("RunTime")), 64);
}

}  // namespace
