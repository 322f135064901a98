#include "../../support/run.hpp"

#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/policy/lessons.hpp>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;
using attune::InputError;
using attune::policy::Lesson;
using attune::policy::LessonQuery;

fs::path lessons_fixture(const std::string& name) { return fs::path(ATTUNE_FIXTURES) / "lessons" / name; }

Lesson lesson(std::string name, std::string family, bool moe, double params_b, std::string gpu, std::string framework,
              std::string confidence = "measured") {
    Lesson l;
    l.name = std::move(name);
    l.model_family = std::move(family);
    l.moe = moe;
    l.params_b = params_b;
    l.gpu = std::move(gpu);
    l.framework = std::move(framework);
    l.confidence = std::move(confidence);
    return l;
}

std::vector<std::string> names(const std::vector<Lesson>& lessons) {
    std::vector<std::string> out;
    for (const auto& l : lessons) out.push_back(l.name);
    return out;
}

TEST(LessonsFile, AMisspeltKeyIsRefusedWithItsLineAndTheKeyMeant) {
    try {
        attune::policy::load_lessons(lessons_fixture("malformed"));
        FAIL() << "a misspelt key was read";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("misspelt-key.md:8: unknown field 'layuot'; did you mean 'layout'?"), std::string::npos)
            << e.what();
    }
}

TEST(LessonsFile, EveryShippedLessonLoadsAndSaysItsLayoutAndSource) {
    const auto shipped = attune::policy::load_lessons(attune::data_dir() / "skills" / "lessons");
    ASSERT_GE(shipped.size(), 5u);
    for (const auto& l : shipped) {
        EXPECT_TRUE(l.layout.has_value()) << l.name;
        EXPECT_EQ(l.confidence, "published") << l.name;
        EXPECT_NE(l.source.find("data/calibration/published.csv"), std::string::npos) << l.name;
    }
}

TEST(LessonsFile, WhatAttuneWritesItReadsBack) {
    Lesson l = lesson("x", "qwen3", true, 30.5, "h200", "nemo");
    l.model = "Qwen/Qwen3-30B-A3B";
    l.gpus = 16;
    l.seq_len = 4096;
    l.source = "attune campaign";
    l.layout = attune::policy::LessonLayout{.tp = 1, .nvlink_reach = 8, .pp = 2, .vpp = 1, .layers = 48, .cp = 1, .ep = 8,
                                            .experts = 128, .micro_batch = 1, .recompute = "selective"};
    l.order = {"recompute", "ep", "pp"};
    l.flags = {{"moe_dispatcher", "moe_token_dispatcher_type", attune::recipe::Value::string("alltoall"), 0.12}};
    l.hurt = {{{"fusions", "persist_layer_norm", attune::recipe::Value::boolean(true), -0.02}, "reverted"},
              {{"micro_batch", "micro_batch_size", attune::recipe::Value::from_plain("2"), 0}, "out-of-memory"}};
    l.memory_bias = 1.04;
    l.trials = 12;
    l.gain = 0.8;
    const attune::test_support::TempDir dir;
    const auto file = dir.write("qwen.md", attune::policy::front_matter(l) + "## prose\n");
    const Lesson back = attune::policy::load_lesson(file);
    EXPECT_EQ(attune::policy::front_matter(back), attune::policy::front_matter(l));
    EXPECT_EQ(back.name, "qwen");
    EXPECT_EQ(back.layout->ep, 8);
    EXPECT_EQ(back.order, l.order);
    EXPECT_EQ(back.flags.at(0).value.to_string(), "alltoall");
    ASSERT_EQ(back.hurt.size(), 2u);
    EXPECT_EQ(back.hurt.at(1).why, "out-of-memory");
    EXPECT_EQ(back.hurt.at(1).move.value.to_string(), "2");
}

TEST(LessonsFile, AMoveThatHurtSaysWhyInWordsItKnows) {
    const attune::test_support::TempDir dir;
    const auto file = dir.write("bad.md", "---\nlessons: 2\nmodel_family: llama3\ngpu: h100\nframework: nemo\nsource: s\n"
                                          "confidence: measured\nhurt:\n  - {lever: fusions, key: k, value: true, gain: -0.1, "
                                          "why: slow}\n---\n");
    try {
        attune::policy::load_lesson(file);
        FAIL() << "an unknown reason was read";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("bad.md:9:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("reverted"), std::string::npos) << e.what();
    }
}

TEST(LessonsMatch, TheSameFamilyComesFirstThenTheSameGpuAndAnUnrelatedModelIsLeftOut) {
    const std::vector<Lesson> all = {lesson("qwen-h100", "qwen3", true, 30, "h100", "nemo"),
                                     lesson("llama-b200", "llama3", false, 8, "b200", "nemo"),
                                     lesson("llama-h100-published", "llama3", false, 70, "h100", "nemo", "published"),
                                     lesson("llama-h100", "llama3", false, 70, "h100", "nemo"),
                                     lesson("gemma-h100", "gemma2", false, 27, "h100", "nemo")};
    const LessonQuery llama70b{.family = "llama3", .moe = false, .params_b = 70, .gpu = "h100", .gpus = 64, .framework = "nemo"};
    // Gemma 2 27B is the same shape class (dense, within 4x): it comes after the family's own.
    EXPECT_EQ(names(attune::policy::matching_lessons(all, llama70b)),
              (std::vector<std::string>{"llama-h100", "llama-h100-published", "llama-b200", "gemma-h100"}));
    const LessonQuery deepseek{.family = "deepseek3", .moe = true, .params_b = 671, .gpu = "h100", .gpus = 256, .framework = "nemo"};
    EXPECT_TRUE(attune::policy::matching_lessons(all, deepseek).empty());
}

TEST(LessonsMatch, TheFamilyIsReadFromTheModelsName) {
    EXPECT_EQ(attune::policy::family_of("meta-llama/Meta-Llama-3-8B"), "llama3");
    EXPECT_EQ(attune::policy::family_of("meta-llama/Llama-3.1-405B"), "llama3");
    EXPECT_EQ(attune::policy::family_of("mistralai/Mixtral-8x7B-v0.1"), "mixtral");
    EXPECT_EQ(attune::policy::family_of("Qwen/Qwen3-30B-A3B"), "qwen3");
    EXPECT_EQ(attune::policy::family_of("our-own-model"), "unknown");
}

}  // namespace
