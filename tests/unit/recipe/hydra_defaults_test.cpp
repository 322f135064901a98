// A YAML recipe's Hydra defaults list composed as Hydra composes it: configs found below the
// recipe's folder or a folder above it, placed at their packages, `_self_` where the recipe's own
// keys go; an edit of a composed key written into the recipe.
#include "support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/recipe/document.hpp>

#include <gtest/gtest.h>

using namespace attune;
using recipe::Document;
using recipe::Value;

namespace {

/// A HyperPod-style tree: configs under hydra_config/, a recipe two folders below, thin.
struct LlmftTree {
    test_support::TempDir dir;
    std::filesystem::path recipe;

    explicit LlmftTree(const std::string& recipe_text) {
        dir.write("hydra_config/llmft/default.yaml",
                  "# @package recipes\nrun:\n  name: ???\n  results_dir: /results/${.name}\ntrainer:\n  devices: 8\n  num_nodes: 1\n");
        dir.write("hydra_config/llmft/algorithm/sft.yaml",
                  "# A comment before the directive.\n# @package recipes.training_config.training_args\n"
                  "micro_train_batch_size: 1\ntrain_batch_size: 8\ngradient_checkpointing: true\nmax_len: 4096\n");
        dir.write("hydra_config/llmft/strategy/fsdp.yaml",
                  "# @package recipes.training_config.training_args.strategy\nfsdp_config:\n  sharding_strategy: FULL_SHARD\n  cpu_offload: false\n");
        recipe = dir.write("recipes/qwen/llmft_sample.yaml", recipe_text);
    }
};

const std::string k_thin_recipe =
    "defaults:\n"
    "  - /hydra_config/llmft/default\n"
    "  - /hydra_config/llmft/algorithm/sft\n"
    "  - /hydra_config/llmft/strategy/fsdp\n"
    "  - _self_\n"
    "\n"
    "run:\n"
    "  name: qwen-3-8b\n"
    "\n"
    "training_config:\n"
    "  training_args:\n"
    "    train_batch_size: 32\n";

}  // namespace

TEST(HydraDefaults, ComposesConfigsAtTheRecipesOwnKeysForTheLauncherPackage) {
    const LlmftTree tree(k_thin_recipe);
    const auto doc = Document::load(tree.recipe).with_launcher_package("recipes");
    // The recipe's own value wins over sft.yaml's (_self_ last); the rest comes from the configs.
    EXPECT_EQ(doc.find("training_config.training_args.train_batch_size")->as_number(), 32);
    EXPECT_EQ(doc.find_leaf("training_config.training_args.train_batch_size")->origin, recipe::Origin::written);
    EXPECT_EQ(doc.find("training_config.training_args.micro_train_batch_size")->as_number(), 1);
    EXPECT_EQ(doc.find_leaf("training_config.training_args.micro_train_batch_size")->origin, recipe::Origin::base);
    EXPECT_EQ(doc.find_leaf("training_config.training_args.micro_train_batch_size")->mark.line, 3)
        << "a composed key is placed at the defaults entry that brought it";
    EXPECT_EQ(doc.find("training_config.training_args.strategy.fsdp_config.sharding_strategy")->to_string(), "FULL_SHARD");
    EXPECT_EQ(doc.find("trainer.devices")->as_number(), 8);
    EXPECT_EQ(doc.find("run.results_dir")->to_string(), "/results/qwen-3-8b") << "interpolations see the composed config";
    EXPECT_TRUE(doc.missing_defaults().empty());
    ASSERT_EQ(doc.base_configs().size(), 3u);
    EXPECT_EQ(doc.base_configs()[1].named, "hydra_config/llmft/algorithm/sft.yaml");

    // Read as Hydra reads the recipe alone, the configs stay at their packages.
    const auto plain = Document::load(tree.recipe);
    EXPECT_EQ(plain.find("training_config.training_args.micro_train_batch_size"), nullptr);
    EXPECT_EQ(plain.find("recipes.training_config.training_args.micro_train_batch_size")->as_number(), 1);
}

TEST(HydraDefaults, AnEditOfAComposedKeyIsWrittenIntoTheRecipe) {
    const LlmftTree tree(k_thin_recipe);
    const auto doc = Document::load(tree.recipe).with_launcher_package("recipes");
    const auto edited = doc.with_edits({{"training_config.training_args.micro_train_batch_size", Value::number(4)},
                                        {"training_config.training_args.strategy.fsdp_config.cpu_offload", Value::boolean(true)},
                                        {"training_config.training_args.train_batch_size", Value::number(64)}});
    // The recipe's own value is rewritten in place; the composed keys go below its deepest mapping.
    std::string expected = k_thin_recipe;
    expected.replace(expected.find("32\n"), 3, "64\n");
    expected += "    micro_train_batch_size: 4\n    strategy:\n      fsdp_config:\n        cpu_offload: true\n";
    EXPECT_EQ(edited.text(), expected);
    EXPECT_EQ(edited.find("training_config.training_args.micro_train_batch_size")->as_number(), 4);
    EXPECT_EQ(edited.find("training_config.training_args.strategy.fsdp_config.cpu_offload")->as_bool(), true);
    EXPECT_EQ(edited.find("training_config.training_args.strategy.fsdp_config.sharding_strategy")->to_string(), "FULL_SHARD")
        << "the config's other keys stay composed";
}

TEST(HydraDefaults, AConfigAfterSelfWinsAndItsKeysCannotBeEditedInTheRecipe) {
    const LlmftTree tree("defaults:\n  - _self_\n  - /hydra_config/llmft/algorithm/sft\n\n"
                         "training_config:\n  training_args:\n    train_batch_size: 32\n");
    const auto doc = Document::load(tree.recipe).with_launcher_package("recipes");
    EXPECT_EQ(doc.find("training_config.training_args.train_batch_size")->as_number(), 8);
    try {
        (void)doc.with_edits({{"training_config.training_args.max_len", Value::number(2048)}});
        FAIL() << "expected the edit to be refused";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("listed after _self_"), std::string::npos) << e.what();
    }
}

TEST(HydraDefaults, GroupOptionsPackagesAndMissingConfigs) {
    test_support::TempDir dir;
    dir.write("optim/adamw.yaml", "lr: 0.0003\nbetas: [0.9, 0.95]\n");
    dir.write("tp_overlap/ub_a.yaml", "qkv_fprop:\n  method: ring_exchange\n");
    dir.write("global_tweak.yaml", "# @package _global_\nseed: 7\n");
    const auto recipe = dir.write("recipe.yaml",
                                  "defaults:\n"
                                  "  - optim: adamw\n"
                                  "  - optional tp_overlap@model.ub_cfg: ub_a\n"
                                  "  - optional absent: whatever\n"
                                  "  - global_tweak\n"
                                  "  - data: missing_option\n"
                                  "  - _self_\n"
                                  "model:\n  hidden: 8\n");
    const auto doc = Document::load(recipe);
    EXPECT_EQ(doc.find("optim.lr")->as_number(), 0.0003) << "a group's config lands at the group's package";
    EXPECT_EQ(doc.find("model.ub_cfg.qkv_fprop.method")->to_string(), "ring_exchange") << "group@package";
    EXPECT_EQ(doc.find("model.hidden")->as_number(), 8);
    EXPECT_EQ(doc.find("seed")->as_number(), 7) << "@package _global_";
    ASSERT_EQ(doc.missing_defaults().size(), 1u) << "an optional group that is absent is no miss";
    EXPECT_EQ(doc.missing_defaults()[0].entry, "data: missing_option");
    EXPECT_EQ(doc.missing_defaults()[0].line, 6);
}

TEST(HydraDefaults, AConfigCopiedBesideTheRecipeIsFoundByName) {
    test_support::TempDir dir;
    dir.write("sft.yaml", "# @package recipes.training_config.training_args\nmicro_train_batch_size: 2\n");
    const auto recipe = dir.write("llmft.yaml", "defaults:\n  - /hydra_config/llmft/algorithm/sft\n  - _self_\ntrainer:\n  num_nodes: 1\n");
    const auto doc = Document::load(recipe).with_launcher_package("recipes");
    EXPECT_EQ(doc.find("training_config.training_args.micro_train_batch_size")->as_number(), 2);
    EXPECT_EQ(doc.base_configs().front().named, "sft.yaml");
}

TEST(HydraDefaults, MalformedEntriesAndSelfInclusionAreRefusedWithTheirLine) {
    test_support::TempDir dir;
    dir.write("loop.yaml", "defaults:\n  - loop\nx: 1\n");
    const auto looping = dir.write("a.yaml", "defaults:\n  - loop\n  - _self_\n");
    EXPECT_THROW((void)Document::load(looping), InputError);
    const auto overriding = dir.write("b.yaml", "defaults:\n  - _self_\n  - override optim: sgd\n");
    try {
        (void)Document::load(overriding);
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("b.yaml:3:"), std::string::npos) << e.what();
    }
}
