#include <attune/core/error.hpp>
#include <attune/recipe/document.hpp>

#include <gtest/gtest.h>

using attune::InputError;
using attune::recipe::Document;
using attune::recipe::Edit;
using attune::recipe::Origin;
using attune::recipe::Value;

namespace attune::recipe {
void PrintTo(const Value& value, std::ostream* out) { *out << value.to_string(); }
}  // namespace attune::recipe

namespace {

Document parse(const std::string& text) { return Document::parse(text, "recipe.yaml"); }

std::string error_of(const std::string& text) {
    try {
        parse(text);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(Recipe, FlattensNestedKeysAndListItemsIntoKeyPaths) {
    const auto doc = parse("model:\n  optim:\n    lr: 1e-4\n    betas: [0.9, 0.95]\n");
    ASSERT_NE(doc.find("model.optim.lr"), nullptr);
    EXPECT_EQ(*doc.find("model.optim.lr"), Value::number(0.0001));
    EXPECT_EQ(*doc.find("model.optim.betas[1]"), Value::number(0.95));
    EXPECT_EQ(doc.find_leaf("model.optim.lr")->mark.line, 3);
    EXPECT_TRUE(doc.has("model.optim"));
}

TEST(Recipe, TypesScalarsAsYamlDoes) {
    const auto doc = parse("a: \"8\"\nb: 8.0\nc: True\nd: ~\ne:\nf: []\ng: yes\nh: 0-01:30:00\n");
    EXPECT_EQ(doc.find("a")->kind(), Value::Kind::string);
    EXPECT_TRUE(doc.find("a")->same_as(*doc.find("b"), Value::Numeric::coerce));
    EXPECT_FALSE(doc.find("a")->same_as(*doc.find("b")));
    EXPECT_EQ(*doc.find("c"), Value::boolean(true));
    EXPECT_TRUE(doc.find("d")->is_null());
    EXPECT_TRUE(doc.find("e")->is_null());
    EXPECT_EQ(doc.find("f")->kind(), Value::Kind::empty_list);
    EXPECT_EQ(*doc.find("g"), Value::boolean(true));
    EXPECT_EQ(doc.find("h")->kind(), Value::Kind::string);
}

TEST(Recipe, RecordsDuplicateKeysAndKeepsTheLastAsYamlLoadersDo) {
    const auto doc = parse("model:\n  global_batch_size: 8\n  global_batch_size: 16\n");
    ASSERT_EQ(doc.duplicates().size(), 1u);
    EXPECT_EQ(doc.duplicates()[0].path, "model.global_batch_size");
    EXPECT_EQ(doc.duplicates()[0].first_line, 2);
    EXPECT_EQ(doc.duplicates()[0].second_line, 3);
    EXPECT_EQ(*doc.find("model.global_batch_size"), Value::number(16));
}

TEST(Recipe, ResolvesAnchorsAliasesAndMergeKeys) {
    const auto doc = parse("base: &b\n  lr: 0.1\n  wd: 0.01\nopt:\n  <<: *b\n  wd: 0.02\nsame: *b\n");
    EXPECT_EQ(*doc.find("opt.lr"), Value::number(0.1));
    EXPECT_EQ(*doc.find("opt.wd"), Value::number(0.02));
    EXPECT_EQ(*doc.find("same.lr"), Value::number(0.1));
    EXPECT_EQ(doc.find_leaf("same.lr")->origin, Origin::alias);
    EXPECT_EQ(doc.find_leaf("opt.lr")->origin, Origin::alias);
}

TEST(Recipe, ResolvesAbsoluteRelativeAndLauncherPrefixedInterpolations) {
    const auto doc = parse(
        "run:\n  name: x\n  dir: /r/${.name}\ntrainer:\n  max_steps: 50\n"
        "model:\n  encoder_seq_length: 8192\n  lr_decay_iters: ${recipes.trainer.max_steps}\n"
        "  data:\n    seq_length: ${model.encoder_seq_length}\n  mp: ${multiply:${training.model.tp}, 2}\n  tp: 4\n"
        "  unresolved: ${base_results_dir}/x\n");
    EXPECT_EQ(*doc.find("run.dir"), Value::string("/r/x"));
    EXPECT_EQ(*doc.find("model.lr_decay_iters"), Value::number(50));
    EXPECT_EQ(*doc.find("model.data.seq_length"), Value::number(8192));
    EXPECT_EQ(doc.find_leaf("model.data.seq_length")->origin, Origin::interpolation);
    EXPECT_EQ(*doc.find("model.mp"), Value::number(8));
    EXPECT_EQ(*doc.find("model.unresolved"), Value::string("${base_results_dir}/x"));
}

TEST(Recipe, ResolvesEnvInterpolationsFromTheRecipesEnvironmentSection) {
    const std::string text = "env_vars:\n  LR: 0.001\nmodel:\n  lr: ${oc.env:LR,1e-4}\n  wd: ${oc.env:WD,0.1}\n";
    const auto doc = Document::parse(text, "r.yaml", {"env_vars"});
    EXPECT_EQ(*doc.find("model.lr"), Value::number(0.001));
    EXPECT_EQ(*doc.find("model.wd"), Value::number(0.1));
    const auto without = Document::parse(text, "r.yaml");
    EXPECT_EQ(*without.find("model.lr"), Value::number(0.0001));
}

TEST(Recipe, RefusesInterpolationCyclesWithTheLine) {
    EXPECT_EQ(error_of("a: ${b}\nb: ${a}\n"), "recipe.yaml:1: interpolation cycle through 'a'");
}

TEST(Recipe, BadInputNamesTheFileAndLine) {
    EXPECT_EQ(error_of(""), "recipe.yaml:1: empty file; expected a YAML mapping of recipe keys");
    EXPECT_EQ(error_of("- a\n- b\n"), "recipe.yaml:1: expected a YAML mapping of recipe keys at the top level");
    EXPECT_NE(error_of("a: [1, 2\nb: 3\n").find("recipe.yaml:"), std::string::npos);
    EXPECT_NE(error_of("a: [1, 2\nb: 3\n").find("malformed YAML"), std::string::npos);
    std::string deep;
    for (int i = 0; i < 10000; ++i) deep += "[";
    EXPECT_NE(error_of("a: " + deep).find("recipe.yaml:"), std::string::npos);
}

TEST(Recipe, EditsRewriteOnlyTheChangedValue) {
    const std::string text =
        "# header comment\nmodel:\n  tensor_model_parallel_size: 4  # tp\n  name: \"x\"\n  betas: [0.9, 0.95]\n"
        "  empty:\ntrainer:\n  devices: 8\n";
    const auto edited = parse(text).with_edits({{"model.tensor_model_parallel_size", Value::number(2)},
                                                {"model.name", Value::string("y z")},
                                                {"model.betas[1]", Value::number(0.99)},
                                                {"model.empty", Value::boolean(true)}});
    EXPECT_EQ(edited.text(),
              "# header comment\nmodel:\n  tensor_model_parallel_size: 2  # tp\n  name: y z\n  betas: [0.9, 0.99]\n"
              "  empty: true\ntrainer:\n  devices: 8\n");
}

TEST(Recipe, EditsAppliedTogetherWriteWhatEditsOneByOneWrite) {
    const std::string text = "model:\n  tp: 4\n  pp: 2  # stages\n  flow: {a: 1, b: 2}\n  empty:\ntrainer:\n  devices: 8\n";
    const std::vector<Edit> edits{{"model.tp", Value::number(2)},         {"model.pp", Value::number(8)},
                                  {"model.added", Value::boolean(true)},  {"model.tp", Value::number(1)},
                                  {"model.flow.b", Value::number(3)},     {"model.flow.a", Value::number(5)},
                                  {"model.empty", Value::string("x")},    {"trainer.devices", Value::number(4)}};
    Document one_by_one = parse(text);
    for (const auto& edit : edits) one_by_one = one_by_one.with_edits({edit});
    EXPECT_EQ(parse(text).with_edits(edits).text(), one_by_one.text());
    EXPECT_EQ(*one_by_one.find("model.tp"), Value::number(1)) << "the later edit of a key wins";
}

TEST(Recipe, EditsCreateMissingKeysWithTheSiblingsIndentation) {
    const std::string text = "model:\n    a: 1\n    optim:\n        lr: 0.1\ntrainer:\n    devices: 8\n";
    const auto edited = parse(text).with_edits({{"model.optim.overlap_grad_sync", Value::boolean(true)},
                                                {"model.fp8.enabled", Value::boolean(false)},
                                                {"extra", Value::number(1)}});
    EXPECT_EQ(edited.text(),
              "model:\n    a: 1\n    optim:\n        lr: 0.1\n        overlap_grad_sync: true\n"
              "    fp8:\n      enabled: false\ntrainer:\n    devices: 8\nextra: 1\n");
    EXPECT_EQ(*edited.find("model.fp8.enabled"), Value::boolean(false));
}

TEST(Recipe, EditsRefuseWhatCannotBeWrittenSafely) {
    const auto doc = parse("base: &b\n  x: 1\nuse: *b\nlist: [1]\nflow: {a: 1}\n");
    EXPECT_THROW((void)doc.with_edits({{"use.x", Value::number(2)}}), InputError);
    EXPECT_THROW((void)doc.with_edits({{"list[3]", Value::number(2)}}), InputError);
    EXPECT_THROW((void)doc.with_edits({{"flow.b", Value::number(2)}}), InputError);
    EXPECT_THROW((void)doc.with_edits({{"base", Value::number(2)}}), InputError);
    EXPECT_THROW((void)doc.with_edits({{"base.x", Value::number(2), true}}), InputError);
}

TEST(Recipe, ParsesHydraOverrides) {
    const auto edit = attune::recipe::parse_override("+model.fp8=True", "cli");
    EXPECT_EQ(edit.path, "model.fp8");
    EXPECT_TRUE(edit.create);
    EXPECT_EQ(edit.value, Value::boolean(true));
    EXPECT_EQ(attune::recipe::parse_override("a.b='1'", "cli").value, Value::string("1"));
    EXPECT_THROW((void)attune::recipe::parse_override("novalue", "cli"), InputError);
    EXPECT_THROW((void)attune::recipe::parse_override("~a.b", "cli"), InputError);
}
