// The training command of a trial: the cluster's launcher as a template ({recipe}, {steps},
// {overrides}) or a prefix to which the family's launch arguments are appended.
#include "support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/gate/policy.hpp>
#include <attune/launch/command.hpp>

#include <gtest/gtest.h>

#include <filesystem>

namespace {

namespace fs = std::filesystem;
using namespace attune;

struct Trial {
    cluster::Cluster cluster;
    gate::LoadedRecipe loaded;
    std::optional<gate::GatedTrial> trial;
    launch::TrialPlan plan;

    explicit Trial(std::vector<std::string> launcher)
        : loaded(gate::load_recipe(std::string(ATTUNE_FIXTURES) + "/slurm/llama3-8b-1node.yaml", gate::default_rules())) {
        cluster.nodes = 1;
        cluster.launcher = std::move(launcher);
        const auto candidate = loaded.document.with_edits({{"model.micro_batch_size", recipe::Value::number(2)},
                                                           {"trainer.max_steps", recipe::Value::number(12)}});
        gate::CheckOptions options;
        options.purpose = gate::Purpose::trial_run;
        trial = gate::admit(loaded.document, candidate, *loaded.adapter, gate::default_rules(),
                            gate::load_policy(data_dir(), std::nullopt), cluster, options).second;
        plan.steps = 12;
        plan.recipe_file = "/camp/recipes/trial-003.yaml";
    }

    [[nodiscard]] std::vector<std::string> command() const { return launch::trial_command(cluster, *trial, plan); }
};

using Words = std::vector<std::string>;

TEST(TrialCommand, ALauncherWithoutPlaceholdersGetsTheRecipePathAppended) {
    const Trial t({"python", "train.py"});
    ASSERT_TRUE(t.trial.has_value());
    EXPECT_EQ(t.command(), (Words{"python", "train.py", "/camp/recipes/trial-003.yaml"}));
}

TEST(TrialCommand, PlaceholdersAreFilledWhereTheTemplatePutsThem) {
    const Trial t({"torchrun", "-m", "torchtitan.train", "--job.config_file={recipe}", "--training.steps", "{steps}"});
    EXPECT_EQ(t.command(), (Words{"torchrun", "-m", "torchtitan.train", "--job.config_file=/camp/recipes/trial-003.yaml",
                                  "--training.steps", "12"}));
}

TEST(TrialCommand, OverridesAreOneWordPerChangedKey) {
    const Trial t({"python", "main.py", "--config-name=base", "{overrides}"});
    const auto words = t.command();
    ASSERT_EQ(words.size(), 5u) << ::testing::PrintToString(words);
    EXPECT_EQ(Words(words.begin() + 3, words.end()), (Words{"trainer.max_steps=12", "model.micro_batch_size=2"}))
        << "in the order the recipe writes them";
}

TEST(TrialCommand, ALaunchScriptRunsItselfWhateverTheFamilyPassesARecipeAs) {
    // torchtitan passes a job file as --job.config_file; its launch script, with the trial's flags
    // written in, is the launch.
    const auto loaded = gate::load_recipe(std::string(ATTUNE_FIXTURES) + "/tune/torchtitan-cli/train.sh", gate::default_rules());
    ASSERT_EQ(loaded.adapter->name(), "torchtitan");
    cluster::Cluster cluster;
    cluster.launcher = {"bash"};
    const auto candidate = loaded.document.with_edits({{"training.local_batch_size", recipe::Value::number(2)}});
    gate::CheckOptions options;
    options.purpose = gate::Purpose::trial_run;
    const auto trial = gate::admit(loaded.document, candidate, *loaded.adapter, gate::default_rules(),
                                   gate::load_policy(data_dir(), std::nullopt), cluster, options).second;
    ASSERT_TRUE(trial.has_value());
    launch::TrialPlan plan;
    plan.recipe_file = "/camp/recipes/trial-001.sh";
    EXPECT_EQ(launch::trial_command(cluster, *trial, plan), (Words{"bash", "/camp/recipes/trial-001.sh"}));
}

TEST(TrialCommand, AClusterWithoutALauncherSaysHowToGiveOne) {
    const Trial t({});
    try {
        (void)t.command();
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("no launcher"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("{recipe}"), std::string::npos) << e.what();
    }
}

TEST(TrialCommand, AClusterFileWithAnUnknownPlaceholderIsRefusedWithItsLine) {
    const test_support::TempDir dir;
    const auto file = dir.write("c.yaml", "name: c\ngpu: h100\nlauncher:\n  - python\n  - --config={recipie}\n");
    try {
        (void)cluster::load_cluster(file);
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("c.yaml:5"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("unknown placeholder {recipie}"), std::string::npos) << e.what();
    }
    const auto glued = dir.write("g.yaml", "name: g\ngpu: h100\nlauncher: [python, --x={overrides}]\n");
    EXPECT_THROW((void)cluster::load_cluster(glued), InputError);
}

}  // namespace
