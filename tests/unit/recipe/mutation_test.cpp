// Random byte mutations of real recipes: loading and gating them either works or says what
// is wrong (InputError); nothing else escapes, nothing crashes or hangs.

#include "support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/verdict.hpp>
#include <attune/util/files.hpp>

#include <gtest/gtest.h>

#include <random>

using namespace attune;

namespace {

std::string mutate(std::string text, std::mt19937& generator) {
    static const std::string k_alphabet = "{}[]:,&*!|>'\"#-?%@`$ \n\t.0a~()=\\;";
    std::uniform_int_distribution<int> kind(0, 2);
    const int edits = 1 + static_cast<int>(generator() % 4);
    for (int i = 0; i < edits && !text.empty(); ++i) {
        const auto at = generator() % text.size();
        switch (kind(generator)) {
            case 0: text[at] = k_alphabet[generator() % k_alphabet.size()]; break;
            case 1: text.insert(at, 1, k_alphabet[generator() % k_alphabet.size()]); break;
            default: text.erase(at, 1 + generator() % 8); break;
        }
    }
    return text;
}

}  // namespace

TEST(RecipeMutation, EveryMutantLoadsOrFailsWithAnInputError) {
    const auto shared = test_support::shared_dir();
    if (shared.empty()) GTEST_SKIP() << "../shared is absent";
    const auto& rules = gate::default_rules();
    const auto policy = gate::load_policy(data_dir(), std::nullopt);
    std::mt19937 generator(20261202);
    int loaded = 0;
    int refused_input = 0;
    for (const char* name : {"nemo/llama3_1_70b.yaml", "sagemaker-hyperpod/hf_llama3_8b_seq8k_gpu_p5x16_pretrain.yaml",
                             "automodel/deepseek_v3_te_deepep.yaml"}) {
        const auto original_text = util::read_text_file(shared / "recipes" / name);
        const auto original = recipe::Document::parse(original_text, name);
        const auto& adapter = rules.adapter_for(original);
        for (int round = 0; round < 300; ++round) {
            try {
                const auto mutant = recipe::Document::parse(mutate(original_text, generator), name);
                (void)gate::check(original, mutant, adapter, rules, policy, cluster::default_cluster(), {});
                ++loaded;
            } catch (const InputError&) {
                ++refused_input;
            }
        }
    }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(refused_input, 0);
}

TEST(RecipeMutation, EveryMutantOfAJsonTomlOrScriptRecipeLoadsAndEditsOrFailsWithAnInputError) {
    const auto shared = test_support::shared_dir();
    if (shared.empty()) GTEST_SKIP() << "../shared is absent";
    std::mt19937 generator(20261206);
    int loaded = 0;
    int refused_input = 0;
    for (const char* name : {"deepspeed/ds_z3_config.json", "torchtitan/llama3_70b.toml", "megatron-lm/train_llama3_8b_h100_fp8.sh"}) {
        const auto original_text = util::read_text_file(shared / "recipes" / name);
        for (int round = 0; round < 300; ++round) {
            try {
                const auto mutant = recipe::Document::parse(mutate(original_text, generator), name);
                for (std::size_t i = 0; i < mutant.leaves().size(); i += 7) {
                    try {
                        (void)mutant.with_edits({{mutant.leaves()[i].path, recipe::Value::number(3)}});
                    } catch (const InputError&) {
                        // refusing an edit is an answer too
                    }
                }
                ++loaded;
            } catch (const InputError&) {
                ++refused_input;
            }
        }
    }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(refused_input, 0);
}
