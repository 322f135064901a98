// The model's identity: a name a recipe carries (a Hugging Face id old or new, a short key, a
// tokenizer, a local folder) resolves to one shape, from gate/models.yaml or a config.json.
#include "../../support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/sim/model.hpp>

#include <gtest/gtest.h>

namespace {

using attune::model::Catalogue;
using attune::test_support::TempDir;

const Catalogue& shipped() { return Catalogue::shipped(); }

TEST(ModelCatalogue, EveryNameOfAnEntryResolvesToIt) {
    for (const auto& entry : shipped().entries())
        for (const auto& name : entry.names) {
            const auto* found = shipped().find(name);
            ASSERT_NE(found, nullptr) << name;
            EXPECT_EQ(found->names.front(), entry.names.front()) << name;
        }
}

TEST(ModelCatalogue, OldAndNewHuggingFaceIdsVariantsAndLocalPathsResolve) {
    EXPECT_EQ(shipped().find("meta-llama/Llama-3.1-405B")->shape.layers, 126);
    EXPECT_EQ(shipped().find("meta-llama/Meta-Llama-3.1-405B")->shape.layers, 126);
    EXPECT_EQ(shipped().find("META-LLAMA/llama-3.1-8b-instruct")->shape.hidden, 4096);
    EXPECT_EQ(shipped().find("meta-llama/Llama-3.3-70B-Instruct")->shape.layers, 80);
    EXPECT_EQ(shipped().find("/checkpoints/Qwen3-32B/")->shape.ffn, 25600);
    EXPECT_EQ(shipped().find("Qwen/Qwen3-30B-A3B-Instruct-2507")->shape.experts, 128);
    EXPECT_EQ(shipped().find("openai/gpt-oss-120b")->shape.vocab, 201088);
    EXPECT_EQ(shipped().find("no/such-model"), nullptr);
}

TEST(ModelCatalogue, ATokenizerThatIsNoModelGivesOnlyItsVocabulary) {
    const auto* gpt2 = shipped().find("GPT2BPETokenizer");
    ASSERT_NE(gpt2, nullptr);
    EXPECT_EQ(gpt2->shape.vocab, 50257);
    EXPECT_EQ(shipped().find("GPT2BPETokenizer", true), nullptr);
}

TEST(ModelCatalogue, AFileThatNamesAModelTwiceOrAnUnknownFieldIsRefusedWithItsLine) {
    const TempDir dir;
    const auto twice = dir.write("twice.yaml", "models:\n"
                                               "  - {names: [a], source: x, shape: {layers: 1, hidden: 8, heads: 1, vocab: 10}}\n"
                                               "  - {names: [b, A], source: x, shape: {layers: 1, hidden: 8, heads: 1, vocab: 10}}\n");
    try {
        (void)Catalogue::load(twice);
        FAIL() << "expected an InputError";
    } catch (const attune::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("twice.yaml:3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'A' is also given at"), std::string::npos) << e.what();
    }
    const auto misspelt = dir.write("misspelt.yaml", "models:\n"
                                                     "  - names: [a]\n"
                                                     "    source: x\n"
                                                     "    shape: {layers: 1, hidden: 8, heads: 1, vocab: 10, kv_head: 1}\n");
    try {
        (void)Catalogue::load(misspelt);
        FAIL() << "expected an InputError";
    } catch (const attune::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("misspelt.yaml:4"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("did you mean 'kv_heads'"), std::string::npos) << e.what();
    }
}

TEST(ModelCatalogue, ALocalFolderWithAConfigWinsOverTheCatalogue) {
    const TempDir dir;
    dir.write("Qwen3-32B/config.json", R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "vocab_size": 1000})");
    const auto local = attune::model::resolve("Qwen3-32B", dir.path(), shipped(), true);
    ASSERT_TRUE(local);
    EXPECT_EQ(local->shape.layers, 2);
    EXPECT_NE(local->source.find("config.json"), std::string::npos);
    const auto catalogued = attune::model::resolve("Qwen3-32B", dir.path() / "elsewhere", shipped(), true);
    ASSERT_TRUE(catalogued);
    EXPECT_EQ(catalogued->shape.layers, 64);
    EXPECT_EQ(catalogued->source, "qwen3_32b");
}

TEST(ModelConfig, AQwen3MoeConfigGivesTheCataloguedShape) {
    const TempDir dir;
    const auto path = dir.write("config.json", R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_attention_heads": 32,
        "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
        "head_dim": 128, "vocab_size": 151936})");
    const auto from_file = attune::model::from_config(path);
    const auto* catalogued = shipped().find("Qwen/Qwen3-30B-A3B");
    ASSERT_NE(catalogued, nullptr);
    EXPECT_EQ(from_file.layers, catalogued->shape.layers);
    EXPECT_EQ(from_file.hidden, catalogued->shape.hidden);
    EXPECT_EQ(from_file.heads, catalogued->shape.heads);
    EXPECT_EQ(from_file.kv_heads, catalogued->shape.kv_heads);
    EXPECT_EQ(from_file.experts, catalogued->shape.experts);
    EXPECT_EQ(from_file.topk, catalogued->shape.topk);
    EXPECT_EQ(from_file.moe_ffn, catalogued->shape.moe_ffn);
    EXPECT_EQ(from_file.head_dim, catalogued->shape.head_dim);
    EXPECT_DOUBLE_EQ(attune::sim::total_params(from_file), attune::sim::total_params(catalogued->shape));
}

TEST(ModelConfig, AConfigThatIsNotAModelNamesTheFileAndTheField) {
    const TempDir dir;
    const auto broken = dir.write("config.json", R"({"num_hidden_layers": "many", "hidden_size": 4096})");
    try {
        (void)attune::model::from_config(broken);
        FAIL() << "expected an InputError";
    } catch (const attune::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("num_hidden_layers"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(broken.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)attune::model::from_config(dir.write("other.json", "[1, 2")), attune::InputError);
}

}  // namespace
