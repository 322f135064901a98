#include "support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

using attune::test_support::run_attune;
using attune::test_support::TempDir;

namespace {

const std::string k_recipe =
    "trainer:\n  num_nodes: 2\n  devices: 8\n  max_steps: 100\n"
    "model:\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 1\n  micro_batch_size: 1\n"
    "  global_batch_size: 64\n  encoder_seq_length: 4096\n  num_layers: 32\n  hidden_size: 4096\n"
    "  num_attention_heads: 32\n  sequence_parallel: false\n";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    text.replace(text.find(from), from.size(), to);
    return text;
}

void expect_bad_input(const attune::test_support::RunResult& result, const std::string& message) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(result.err.rfind("attune: error: ", 0), 0u) << result.err;
}

}  // namespace

TEST(GateCli, ExitsZeroAndPrintsTheChangeForAnAllowedEdit) {
    const TempDir dir;
    const auto base = dir.write("base.yaml", k_recipe);
    const auto cand = dir.write("cand.yaml", replaced(k_recipe, "micro_batch_size: 1", "micro_batch_size: 2"));
    const auto result = run_attune({"gate", "check", base.string(), cand.string()});
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_NE(result.out.find("allowed model.micro_batch_size"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("verdict: allowed"), std::string::npos) << result.out;
}

TEST(GateCli, ExitsThreeWithJsonNamingTheRefusedKey) {
    const TempDir dir;
    const auto base = dir.write("base.yaml", k_recipe);
    const auto cand = dir.write("cand.yaml", replaced(k_recipe, "global_batch_size: 64", "global_batch_size: 128"));
    const auto result = run_attune({"gate", "check", base.string(), cand.string(), "--json"});
    EXPECT_EQ(result.exit_code, 3) << result.err;
    const auto json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["verdict"], "refused");
    EXPECT_EQ(json["rules_hash"].get<std::string>().substr(0, 7), "sha256:");
    ASSERT_FALSE(json["changes"].empty());
    EXPECT_EQ(json["changes"][0]["key"], "model.global_batch_size");
    EXPECT_EQ(json["changes"][0]["class"], "objective");
    EXPECT_EQ(json["changes"][0]["from"], 64);
    EXPECT_EQ(json["changes"][0]["to"], 128);
    EXPECT_EQ(json["changes"][0]["verdict"], "refused");
    bool global_batch_checked = false;
    for (const auto& invariant : json["invariants"])
        if (invariant["name"] == "global_batch_size") global_batch_checked = invariant["ok"] == false;
    EXPECT_TRUE(global_batch_checked);
}

TEST(GateCli, AppliesAnOverridesFileToTheBaseline) {
    const TempDir dir;
    const auto base = dir.write("base.yaml", k_recipe);
    const auto cand = dir.write("lr.overrides", "# hydra overrides\nmodel.micro_batch_size=2\n+model.optim.lr=0.1\n");
    const auto result = run_attune({"gate", "check", base.string(), cand.string(), "--json"});
    EXPECT_EQ(result.exit_code, 3) << result.err;
    const auto json = nlohmann::json::parse(result.out);
    EXPECT_EQ(json["changes"].size(), 2u);
    EXPECT_EQ(json["changes"][1]["key"], "model.optim.lr");
    EXPECT_EQ(json["changes"][1]["verdict"], "refused");
}

TEST(GateCli, RejectsBadInputWithExitTwoAndTheFile) {
    const TempDir dir;
    const auto base = dir.write("base.yaml", k_recipe);
    expect_bad_input(run_attune({"gate", "check", base.string(), dir.write("bad.yaml", "model: [1, 2\n").string()}),
                     "bad.yaml:2: malformed YAML");
    expect_bad_input(run_attune({"gate", "check", base.string(), dir.write("empty.yaml", "").string()}),
                     "empty.yaml:1: empty file; expected a YAML mapping of recipe keys");
    expect_bad_input(run_attune({"gate", "check", base.string(), dir.path().string()}), "is a directory, expected a file");
    expect_bad_input(run_attune({"gate", "check", base.string(), (dir.path() / "missing.yaml").string()}),
                     "missing.yaml: no such file");
    expect_bad_input(run_attune({"gate", "check", base.string(), base.string(), "--max-levers", "zero"}),
                     "--max-levers: 'zero': expected a number greater than 0");
    expect_bad_input(run_attune({"gate", "check", base.string(), base.string(), "--max-levers", "0"}),
                     "--max-levers: '0': expected a number greater than 0");
    expect_bad_input(run_attune({"gate", "chekc"}), "chekc");
}

TEST(GateCli, RejectsTenMegabytesOfRandomBytes) {
    const TempDir dir;
    std::mt19937 generator(7);
    std::string bytes(10u << 20, '\0');
    for (auto& byte : bytes) byte = static_cast<char>(generator() & 0xFF);
    const auto base = dir.write("base.yaml", k_recipe);
    expect_bad_input(run_attune({"gate", "check", base.string(), dir.write("random.bin", bytes).string()}),
                     "binary data (a NUL byte), expected a text file");
    for (auto& byte : bytes)
        if (byte == '\0') byte = 'x';
    const auto result = run_attune({"gate", "check", base.string(), dir.write("random.txt", bytes).string()});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("random.txt"), std::string::npos) << result.err;
}

TEST(GateCli, RejectsTenThousandLevelsOfNesting) {
    const TempDir dir;
    const auto base = dir.write("base.yaml", k_recipe);
    std::string flow = "model: ";
    std::string block = "model:\n";
    for (int i = 0; i < 10000; ++i) flow += "{a: ";
    flow += "1";
    for (int i = 0; i < 10000; ++i) flow += "}";
    for (int i = 0; i < 10000; ++i) block += "- ";
    block += "x\n";
    expect_bad_input(run_attune({"gate", "check", base.string(), dir.write("flow.yaml", flow).string()}),
                     "flow.yaml:1: nesting deeper than 200 levels");
    const auto result = run_attune({"gate", "check", base.string(), dir.write("block.yaml", block).string()});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("block.yaml:"), std::string::npos) << result.err;
}

TEST(GateCli, ExplainsAKeyWithItsLeverClassAndWhy) {
    const auto result = run_attune({"gate", "explain", "model.global_batch_size", "--framework", "nemo"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("class:  objective"), std::string::npos) << result.out;
    const auto unknown = run_attune({"gate", "explain", "model.global_batch_sise"});
    EXPECT_EQ(unknown.exit_code, 2);
    EXPECT_NE(unknown.err.find("did you mean 'model.global_batch_size'"), std::string::npos) << unknown.err;
}
