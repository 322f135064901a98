// A model the catalogue does not know is read from the Hugging Face config.json the recipe points to.
#include "../../support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/sim/model.hpp>

#include <gtest/gtest.h>

namespace {

using attune::test_support::TempDir;

TEST(ModelConfig, AQwen3MoeConfigGivesTheCataloguedShape) {
    const TempDir dir;
    const auto path = dir.write("config.json", R"({"architectures": ["Qwen3MoeForCausalLM"], "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_attention_heads": 32,
        "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
        "head_dim": 128, "vocab_size": 151936})");
    const auto from_file = attune::sim::model_from_config(path);
    const auto catalogued = attune::sim::find_model("Qwen/Qwen3-30B-A3B");
    ASSERT_TRUE(catalogued);
    EXPECT_EQ(from_file.layers, catalogued->layers);
    EXPECT_EQ(from_file.hidden, catalogued->hidden);
    EXPECT_EQ(from_file.heads, catalogued->heads);
    EXPECT_EQ(from_file.kv_heads, catalogued->kv_heads);
    EXPECT_EQ(from_file.experts, catalogued->experts);
    EXPECT_EQ(from_file.topk, catalogued->topk);
    EXPECT_EQ(from_file.moe_ffn, catalogued->moe_ffn);
    EXPECT_EQ(from_file.head_dim, catalogued->head_dim);
    EXPECT_DOUBLE_EQ(attune::sim::total_params(from_file), attune::sim::total_params(*catalogued));
}

TEST(ModelConfig, AConfigThatIsNotAModelNamesTheFileAndTheField) {
    const TempDir dir;
    const auto broken = dir.write("config.json", R"({"num_hidden_layers": "many", "hidden_size": 4096})");
    try {
        attune::sim::model_from_config(broken);
        FAIL() << "expected an InputError";
    } catch (const attune::InputError& e) {
        EXPECT_NE(std::string(e.what()).find("num_hidden_layers"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(broken.string()), std::string::npos) << e.what();
    }
    EXPECT_THROW(attune::sim::model_from_config(dir.write("other.json", "[1, 2")), attune::InputError);
}

}  // namespace
