#include "support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/sim/from_recipe.hpp>

#include <gtest/gtest.h>

#include <sstream>

namespace attune::sim {
namespace {

TEST(SimFromRecipe, ReadsTheExampleNemoRecipeThroughItsAdapter) {
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/nemo-llama3-8b-h100.yaml", gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.layers, 32);
    EXPECT_EQ(in.model.hidden, 4096);
    EXPECT_EQ(in.dialect, Dialect::megatron);
    const auto e = estimate(in.hardware, in.model, in.layout);
    ASSERT_TRUE(e.valid) << e.problem;
    EXPECT_TRUE(e.fits);
    const auto space = lever_space(*loaded.adapter);
    EXPECT_FALSE(space.tp.empty());
    EXPECT_FALSE(space.recompute.empty());
}

// A LoRA fine-tune and its full fine-tune twin (the same torchtune recipe with a plain builder and no
// lora_* arguments), both sharded by FSDP2 over the same ranks: the base weights are frozen under LoRA,
// so their fp32 gradients (4 bytes per parameter) and AdamW's master copy and moments (12 bytes) are
// gone, and only their bf16 copy (2 bytes) stays; the adapters' own states are a rounding error.
TEST(SimFromRecipe, ALoraFineTuneSavesWhatFrozenWeightsDoNotNeedAgainstItsFullTwin) {
    const std::string path = ATTUNE_SOURCE_DIR "/examples/recipes/torchtune-llama3-70b-lora-h100.yaml";
    const auto lora_recipe = gate::load_recipe(path, gate::default_rules());
    std::string twin_text;
    for (std::istringstream lines(lora_recipe.document.text()); !lines.eof();) {
        std::string line;
        std::getline(lines, line);
        if (line.starts_with("  lora_") || line.starts_with("  apply_lora_")) continue;
        if (line.find("lora_llama3_1_70b") != std::string::npos) line = "  _component_: torchtune.models.llama3_1.llama3_1_70b";
        twin_text += line + "\n";
    }
    const auto twin = recipe::Document::parse(twin_text, "full-twin.yaml");
    cluster::Cluster cluster = cluster::default_cluster();
    cluster.nodes = 2;
    const auto lora_in = from_recipe(lora_recipe.document, *lora_recipe.adapter, cluster);
    const auto full_in = from_recipe(twin, *lora_recipe.adapter, cluster);
    ASSERT_TRUE(lora_in.layout.lora);
    ASSERT_FALSE(full_in.layout.lora);
    const auto lora = estimate(lora_in.hardware, lora_in.model, lora_in.layout);
    const auto full = estimate(full_in.hardware, full_in.model, full_in.layout);
    ASSERT_TRUE(lora.valid && full.valid);
    const double shard_params = full.memory_gib.optimizer / 12;   // this rank's share of the weights, in Gi-parameters
    EXPECT_NEAR(full.memory_gib.grads, 4 * shard_params, 1e-9);
    EXPECT_DOUBLE_EQ(lora.memory_gib.grads, 0.0);
    EXPECT_DOUBLE_EQ(lora.memory_gib.optimizer, 0.0);
    EXPECT_NEAR(lora.memory_gib.params, 2 * shard_params, 1e-9);
    // 70.6 B parameters over 16 ranks: 4.4 B each, 16 bytes of which LoRA saves: about 66 GiB per GPU.
    EXPECT_NEAR(full.memory_gib.grads + full.memory_gib.optimizer, 16 * shard_params, 1e-9);
    EXPECT_NEAR(16 * shard_params, 65.7, 1.0);
    EXPECT_LT(lora.memory_gib.total, full.memory_gib.total - 16 * shard_params + 1.0);
}

// ZeRO stages 1 and 2 of one DeepSpeed config (a Hugging Face Trainer run of Llama 3 8B on 8 GPUs): both
// shard AdamW's state (12 bytes a parameter) over the 8 ranks; stage 2 shards the fp32 gradients
// (4 bytes a parameter) too, where stage 1 keeps the whole buffer: 8.0 B parameters x 4 bytes x 7/8
// = 28 GB, about 26 GiB, less per GPU.
TEST(SimFromRecipe, ZeroStageTwoShardsTheGradientsStageOneKeepsWhole) {
    const test_support::TempDir dir;
    const auto config = dir.write("config.json", R"({"num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 14336,
        "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192})");
    auto stage = [&](int n) {
        const auto path = dir.write("ds_z" + std::to_string(n) + ".json",
                                    R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 4, "train_batch_size": 32,
                                        "bf16": {"enabled": true}, "zero_optimization": {"stage": )" + std::to_string(n) + "}}");
        const auto loaded = gate::load_recipe(path, gate::default_rules(), {}, config);
        cluster::Cluster one_node = cluster::default_cluster();
        one_node.nodes = 1;
        const auto in = from_recipe(loaded.document, *loaded.adapter, one_node);
        return std::pair{in.layout.shard_grads, estimate(in.hardware, in.model, in.layout)};
    };
    const auto [one_shards, one] = stage(1);
    const auto [two_shards, two] = stage(2);
    EXPECT_FALSE(one_shards);
    EXPECT_TRUE(two_shards);
    ASSERT_TRUE(one.valid && two.valid);
    EXPECT_NEAR(one.memory_gib.optimizer, two.memory_gib.optimizer, 1e-9);
    const double params = one.memory_gib.grads / 4;   // Gi-parameters on each rank, unsharded
    EXPECT_NEAR(two.memory_gib.grads, 4 * params / 8, 1e-9);
    EXPECT_NEAR(one.memory_gib.total - two.memory_gib.total, 4 * params * 7 / 8, 1e-6);
    EXPECT_NEAR(4 * params * 7 / 8, 26.2, 1.0);
}

TEST(SimFromRecipe, ReadsQwen3FromANemoRecipeWithItsHeadSizeAndTokenizer) {
    // Qwen3's query projection (32 heads x 128) is twice its hidden size: kv_channels says so.
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/bench/nemo-qwen3-30b-a3b-h200-draft.yaml",
                                          gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.head_dim, 128);
    EXPECT_EQ(in.model.vocab, 151936) << "the tokenizer's size, from the model catalogue";
    EXPECT_EQ(in.model.experts, 128);
    EXPECT_EQ(in.model.moe_ffn, 768);
    EXPECT_TRUE(estimate(in.hardware, in.model, in.layout).valid);
}

TEST(SimFromRecipe, FindsTheModelAnAutoModelBenchmarkNamesInItsConfig) {
    // from_config benchmarks name the model under model.config (no weights are loaded).
    const auto loaded = gate::load_recipe(
        ATTUNE_SOURCE_DIR "/examples/bench/automodel-deepseek-v3-h100-recipe-on-b200.yaml", gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_TRUE(in.model.mla);
    EXPECT_EQ(in.model.layers, 61);
    EXPECT_EQ(in.model.experts, 256);
    EXPECT_EQ(in.layout.pp, 4);
    EXPECT_EQ(in.layout.ep, 64);
    EXPECT_EQ(in.layout.mbs, 1) << "the pipeline's micro batch (pp_microbatch_size), not the local batch of 4";
    EXPECT_EQ(in.layout.recompute, Recompute::full) << "activation_checkpointing: true wraps every block";
}

/// The NeMo example with another tokenizer named in model.tokenizer.type.
recipe::Document nemo_with_tokenizer(const std::string& tokenizer) {
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/nemo-llama3-8b-h100.yaml", gate::default_rules());
    return loaded.document.with_edits({{"model.tokenizer.type", recipe::Value::string(tokenizer)}});
}

TEST(SimFromRecipe, ANemoRecipeNamingAnyCataloguedIdAsItsTokenizerGetsThatVocabularyAndKeepsItsOwnShape) {
    const auto& adapter = *gate::default_rules().find("nemo");
    for (const auto& [tokenizer, vocab] : std::vector<std::pair<std::string, int>>{{"meta-llama/Llama-3.1-405B", 128256},
                                                                                 {"openai/gpt-oss-120b", 201088},
                                                                                 {"Qwen/Qwen3-32B", 151936},
                                                                                 {"zai-org/GLM-4.5-Air", 151552},
                                                                                 {"GPT2BPETokenizer", 50257}}) {
        const auto in = from_recipe(nemo_with_tokenizer(tokenizer), adapter, cluster::default_cluster());
        EXPECT_EQ(in.model.vocab, vocab) << tokenizer;
        EXPECT_EQ(in.model.layers, 32) << tokenizer << ": the recipe's own shape keys win";
        EXPECT_EQ(in.model.head_dim, 0) << tokenizer << ": nothing of the tokenizer's model leaks into the shape";
        EXPECT_FALSE(in.model.mla) << tokenizer;
    }
}

TEST(SimFromRecipe, AnUnknownModelNamesTheValueTheKeyThatWouldResolveItAndTheClosestName) {
    const auto& adapter = *gate::default_rules().find("nemo");
    try {
        (void)from_recipe(nemo_with_tokenizer("Qwen/Qwen3-32"), adapter, cluster::default_cluster());
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("the model's vocab is unknown"), std::string::npos) << what;
        EXPECT_NE(what.find("'Qwen/Qwen3-32'"), std::string::npos) << what;
        EXPECT_NE(what.find("did you mean 'Qwen/Qwen3-32B'"), std::string::npos) << what;
        EXPECT_NE(what.find("set model.tokenizer.type"), std::string::npos) << what;
    }
}

TEST(SimFromRecipe, ReadsAMegatronLaunchScriptAsMegatronCoreDoes) {
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/megatron-lm-llama3-8b-h100.sh", gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.layers, 32);
    EXPECT_EQ(in.model.kv_heads, 8);
    EXPECT_EQ(in.model.vocab, 128256) << "the tokenizer the script names, from the catalogue";
    EXPECT_TRUE(in.model.gated_mlp) << "--swiglu";
    EXPECT_EQ(in.layout.nodes, 1) << "--nnodes $NUM_NODES";
    EXPECT_EQ(in.layout.tp, 4);
    EXPECT_EQ(in.layout.gbs, 128);
    EXPECT_EQ(in.layout.recompute, Recompute::full);
    EXPECT_EQ(in.layout.sharding, Sharding::none) << "no --use-distributed-optimizer";
    EXPECT_FALSE(in.layout.overlap_grad_reduce) << "Megatron-Core's default";
    EXPECT_EQ(in.layout.precision, Precision::fp8);
    EXPECT_TRUE(in.layout.megatron_core);
    EXPECT_EQ(in.dialect, Dialect::megatron);
}

TEST(SimFromRecipe, ReadsATorchtitanJobFileWithItsRuntimeDefaults) {
    const auto loaded = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/bench/torchtitan-llama3-70b-a100-preset-on-h100.toml",
                                          gate::default_rules());
    const auto in = from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
    EXPECT_EQ(in.model.layers, 80) << "./assets/hf/Llama-3.1-70B names the model";
    EXPECT_EQ(in.layout.tp, 8);
    EXPECT_EQ(in.layout.gbs, 64);
    EXPECT_EQ(in.layout.sharding, Sharding::fsdp) << "dp_shard -1 is the 8 ranks tp leaves";
    EXPECT_EQ(in.layout.recompute, Recompute::full);
    EXPECT_TRUE(in.layout.sequence_parallel) << "torchtitan's TP always shards along the sequence";
    EXPECT_FALSE(in.layout.megatron_core);
    // A job file that says nothing of activation checkpointing gets torchtitan's default, selective.
    std::string text = loaded.document.text();
    const std::string section = "[activation_checkpoint]\nmode = \"full\"\n";
    ASSERT_NE(text.find(section), std::string::npos);
    text.erase(text.find(section), section.size());
    const auto silent = recipe::Document::parse(text, "silent.toml");
    EXPECT_EQ(from_recipe(silent, *loaded.adapter, cluster::default_cluster()).layout.recompute, Recompute::selective);
}

TEST(SimFromRecipe, ReadsTheRecomputeSettingsOfEveryFramework) {
    EXPECT_EQ(parse_recompute("true"), Recompute::full);
    EXPECT_EQ(parse_recompute("full"), Recompute::full);
    EXPECT_EQ(parse_recompute("uniform"), Recompute::full);
    EXPECT_EQ(parse_recompute("offload"), Recompute::full);
    EXPECT_EQ(parse_recompute("offload_disk"), Recompute::full);
    EXPECT_EQ(parse_recompute("selective"), Recompute::selective);
    EXPECT_EQ(parse_recompute("false"), Recompute::none);
    EXPECT_EQ(parse_recompute(""), Recompute::none);
}

}  // namespace
}  // namespace attune::sim

namespace attune::sim {
namespace {

TEST(SimFromRecipe, EveryHuggingFaceIdOfTheCatalogueResolvesFromAModelKeyAndFromATokenizerKey) {
    const auto& rules = gate::default_rules();
    const auto automodel = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/automodel-llama3-8b-h100.yaml", rules);
    const auto nemo = gate::load_recipe(ATTUNE_SOURCE_DIR "/examples/recipes/nemo-llama3-8b-h100.yaml", rules);
    int ids = 0;
    for (const auto& entry : model::Catalogue::shipped().entries()) {
        if (entry.tokenizer_only) continue;
        for (const auto& name : entry.names) {
            if (name.find('/') == std::string::npos) continue;  // short keys and benchmark names are no Hugging Face ids
            ++ids;
            const auto by_model = from_recipe(
                automodel.document.with_edits({{"model.pretrained_model_name_or_path", recipe::Value::string(name)}}),
                *automodel.adapter, cluster::default_cluster());
            EXPECT_EQ(by_model.model.layers, entry.shape.layers) << name;
            EXPECT_EQ(by_model.model.vocab, entry.shape.vocab) << name;
            const auto by_tokenizer = from_recipe(
                nemo.document.with_edits({{"model.tokenizer.type", recipe::Value::string(name)}}), *nemo.adapter,
                cluster::default_cluster());
            EXPECT_EQ(by_tokenizer.model.vocab, entry.shape.vocab) << name;
        }
    }
    EXPECT_GT(ids, 40);
}

}  // namespace
}  // namespace attune::sim
