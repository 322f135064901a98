// Black-box: `attune bench` on a one-recipe suite with a tiny budget: the JSON document's shape,
// figures that make sense, the plot, the llm policy against a loopback server, and bad input.
#include "../support/chat_responses.hpp"
#include "../support/loopback_server.hpp"
#include "../support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using attune::test_support::all_files_text;
using attune::test_support::LoopbackServer;
using attune::test_support::run_attune;
using attune::test_support::TempDir;
using attune::test_support::tool_call;
using nlohmann::json;

std::string examples() { return std::string(ATTUNE_SOURCE_DIR) + "/examples"; }

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// The cells of a Markdown table row, trimmed.
std::vector<std::string> cells_of(const std::string& row) {
    std::vector<std::string> cells;
    std::istringstream in(row);
    std::string cell;
    std::getline(in, cell, '|');  // before the first bar
    while (std::getline(in, cell, '|')) {
        const auto first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
        cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
    }
    return cells;
}

/// The number after `label` in `attune sim oracle`'s output ("baseline: 1474 tokens/s/GPU").
std::string oracle_figure(const std::string& out, const std::string& label) {
    const auto at = out.find(label);
    if (at == std::string::npos) return "?";
    std::istringstream in(out.substr(at + label.size()));
    std::string number;
    in >> number;
    return number;
}

TEST(BenchCli, PrintsTheIssuesJsonShapeWithSaneFiguresAndAPlot) {
    const TempDir dir;
    dir.write("suite/suite.yaml",
              "- recipe: " + examples() + "/recipes/nemo-llama3-8b-h100.yaml\n  name: llama3-8b\n");
    const auto svg = dir.path() / "curve.svg";
    const auto result = run_attune({"-q", "bench", "--suite", (dir.path() / "suite").string(), "--budget",
                                    "25gpuh", "--policies", "rules,random,bayes,grid", "--seeds", "1",
                                    "--json", "--plot", svg.string()});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json doc = json::parse(result.out);
    ASSERT_EQ(doc["recipes"].size(), 1U);
    const auto& r = doc["recipes"][0];
    EXPECT_EQ(r["recipe"], "llama3-8b");
    const double baseline = r["baseline_tokens_per_s_per_gpu"].get<double>(),
                 oracle = r["oracle_tokens_per_s_per_gpu"].get<double>();
    EXPECT_GT(baseline, 0);
    EXPECT_GE(oracle, baseline);
    for (const std::string name : {"rules", "random", "bayes", "grid"}) {
        ASSERT_TRUE(r["policies"].contains(name)) << name;
        const auto& p = r["policies"][name];
        for (const std::string key : {"mean_tokens_per_s_per_gpu", "stdev", "fraction_of_oracle",
                                      "gpu_hours_to_95_of_oracle", "stopped_short", "failed_launches", "refusals"})
            EXPECT_TRUE(p.contains(key)) << name << " lacks " << key;
        EXPECT_GT(p["mean_tokens_per_s_per_gpu"].get<double>(), 0) << name;
        EXPECT_NEAR(p["fraction_of_oracle"].get<double>(),
                    p["mean_tokens_per_s_per_gpu"].get<double>() / oracle, 1e-9);
        EXPECT_LE(p["fraction_of_oracle"].get<double>(), 1.3) << name;
        EXPECT_EQ(p["stdev"].get<double>(), 0.0) << "one seed has no spread";
        // A campaign that never reaches 95% of the oracle counts the whole budget; one that does, less.
        EXPECT_GT(p["gpu_hours_to_95_of_oracle"].get<double>(), 0);
        EXPECT_LE(p["gpu_hours_to_95_of_oracle"].get<double>(), 25.0);
        if (p["fraction_of_oracle"].get<double>() < 0.95) EXPECT_EQ(p["gpu_hours_to_95_of_oracle"].get<double>(), 25.0) << name;
        EXPECT_LE(p["stopped_short"].get<int>(), p["fraction_of_oracle"].get<double>() < 0.95 ? 1 : 0) << name;
        EXPECT_GE(p["failed_launches"].get<int>(), 0);
        EXPECT_GE(p["refusals"].get<int>(), 0);
        EXPECT_TRUE(doc["summary"].contains(name));
    }
    EXPECT_GT(r["policies"]["rules"]["mean_tokens_per_s_per_gpu"].get<double>(), baseline)
        << "rules improves the draft recipe";
    std::ifstream in(svg);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("<svg"), std::string::npos);
    EXPECT_NE(text.str().find("polyline"), std::string::npos);
}

TEST(BenchCli, RunsTheLlmPolicyAgainstAnHttpServerAndNoKeyReachesOutput) {
    constexpr const char* secret = "sk-bench-secret-90e7d2";
    LoopbackServer server;
    server.enqueue(tool_call("propose_change",
                             R"({"edits": {"model.optim.overlap_grad_sync": true}, "rationale": "hide the reduce-scatter"})"));
    server.enqueue(tool_call("stop", R"({"reason": "the remaining levers are small"})"));
    const TempDir dir;
    dir.write("suite/suite.yaml",
              "- recipe: " + examples() + "/recipes/nemo-llama3-8b-h100.yaml\n  name: llama3-8b\n");
    const auto campaigns = dir.path() / "campaigns";
    const auto result = run_attune({"bench", "--suite", (dir.path() / "suite").string(), "--budget", "25gpuh",
                                    "--policies", "rules,llm", "--seeds", "1", "--llm", "openai:test-model",
                                    "--llm-url", server.url() + "/v1", "--llm-timeout", "30", "--campaigns",
                                    campaigns.string(), "--json"},
                                   {}, {std::string("OPENAI_API_KEY=") + secret});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json doc = json::parse(result.out);
    EXPECT_EQ(doc["policies"], json::array({"rules", "llm"}));
    const auto& llm = doc["recipes"][0]["policies"]["llm"];
    EXPECT_EQ(llm["runs"], 1);
    EXPECT_GE(llm["mean_tokens_per_s_per_gpu"].get<double>(),
              doc["recipes"][0]["baseline_tokens_per_s_per_gpu"].get<double>())
        << "the agent's best is the baseline or better";
    EXPECT_GE(llm["launches"].get<int>(), 2) << "the baseline and the agent's proposal";
    EXPECT_TRUE(doc["summary"].contains("llm"));

    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2U) << "one proposal, then the scripted stop";
    EXPECT_EQ(requests.front().target, "/v1/chat/completions");
    EXPECT_NE(requests.front().header("Authorization").find(secret), std::string::npos)
        << "the key goes to the provider";
    EXPECT_NE(requests.front().body.find("test-model"), std::string::npos);
    const auto written = all_files_text(campaigns);
    EXPECT_NE(written.find("llm-exchange"), std::string::npos) << "the llm campaign journals its chat calls";
    EXPECT_NE(written.find("the model stopped"), std::string::npos);
    EXPECT_EQ(result.out.find(secret), std::string::npos) << "an API key reached stdout";
    EXPECT_EQ(result.err.find(secret), std::string::npos) << "an API key reached stderr";
    EXPECT_EQ(written.find(secret), std::string::npos) << "an API key reached a campaign folder";
}

TEST(BenchCli, LlmWithoutAModelIsAUsageErrorBeforeAnyFolderIsWritten) {
    const TempDir dir;
    const auto campaigns = dir.path() / "campaigns";
    const auto result = run_attune({"bench", "--suite", examples() + "/recipes", "--policies", "rules,llm",
                                    "--campaigns", campaigns.string()});
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_NE(result.err.find("--llm PROVIDER:MODEL"), std::string::npos) << result.err;
    EXPECT_FALSE(fs::exists(campaigns));
}

TEST(BenchCli, ATwoRecipeSuitePrintsItsTablesWithTheFiguresOfSimOracleAndOneProgressLinePerCampaign) {
    const std::string suite = std::string(ATTUNE_FIXTURES) + "/bench";
    const auto result = run_attune({"bench", "--suite", suite, "--seeds", "1"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const auto lines = lines_of(result.out);
    ASSERT_GE(lines.size(), 2U + 8U + 1U + 2U + 4U) << result.out;
    EXPECT_EQ(lines[0],
              "| recipe | cluster | baseline tok/s/GPU | oracle | policy | mean tok/s/GPU | stdev | of oracle | "
              "GPU-h to 95% of oracle | stopped short | failed launches | refusals |");

    struct Expected {
        std::string name, cluster, recipe, cluster_path;
    };
    const std::vector<Expected> recipes{
        {"llama3-70b h100 tuned", "p5-h100.yaml", examples() + "/bench/nemo-llama3-70b-h100-tuned.yaml",
         examples() + "/clusters/p5-h100.yaml"},
        {"llama3.1-405b h100 recipe on b200", "p6-b200-16nodes.yaml",
         examples() + "/bench/nemo-llama31-405b-h100-recipe-on-b200.yaml",
         examples() + "/bench/clusters/p6-b200-16nodes.yaml"}};
    for (std::size_t i = 0; i < recipes.size(); ++i) {
        const auto& expected = recipes[i];
        // A recipe's first row names it, its cluster, its own throughput and the oracle's; then one
        // row per policy, in the order of --policies.
        const auto first = cells_of(lines[2 + 4 * i]);
        ASSERT_EQ(first.size(), 12U) << lines[2 + 4 * i];
        EXPECT_EQ(first[0], expected.name);
        EXPECT_EQ(first[1], expected.cluster);
        const auto oracle =
            run_attune({"sim", "oracle", expected.recipe, "--cluster", expected.cluster_path});
        ASSERT_EQ(oracle.exit_code, 0) << oracle.err;
        EXPECT_EQ(first[2], oracle_figure(oracle.out, "baseline:")) << "the recipe's own throughput";
        EXPECT_EQ(first[3], oracle_figure(oracle.out, "best:")) << "the oracle of the same world";
        const std::vector<std::string> policies{"rules", "random", "bayes", "grid"};
        for (std::size_t p = 0; p < policies.size(); ++p) {
            const auto row = cells_of(lines[2 + 4 * i + p]);
            ASSERT_EQ(row.size(), 12U) << lines[2 + 4 * i + p];
            EXPECT_EQ(row[4], policies[p]);
            if (p > 0) EXPECT_EQ(row[0], "") << "the recipe is named once";
            EXPECT_GT(std::stod(row[5]), 0) << policies[p] << " ends with a configuration that runs";
            EXPECT_EQ(row[6], "0") << "one seed has no spread";
        }
    }
    EXPECT_EQ(lines[10], "");
    EXPECT_EQ(cells_of(lines[11]).front(), "policy");
    for (std::size_t p = 0; p < 4; ++p) EXPECT_EQ(cells_of(lines[13 + p]).size(), 9U) << lines[13 + p];

    // stderr: one line per campaign as it ends, naming it.
    int progress = 0;
    for (const auto& line : lines_of(result.err)) progress += line.find(" / seed 1 / world ") != std::string::npos;
    EXPECT_EQ(progress, 8) << result.err;
    EXPECT_NE(result.err.find("llama3.1-405b h100 recipe on b200 / grid / seed 1"), std::string::npos)
        << result.err;
}

TEST(BenchCli, RefusesAnUnknownPolicyABadBudgetAndAnEmptySuite) {
    const TempDir dir;
    const auto suite = examples() + "/recipes";
    EXPECT_EQ(run_attune({"bench", "--suite", suite, "--policies", "rules,annealing"}).exit_code, 2);
    EXPECT_EQ(run_attune({"bench", "--suite", suite, "--budget", "200"}).exit_code, 2);
    EXPECT_EQ(run_attune({"bench", "--suite", dir.path().string()}).exit_code, 2);
}

}  // namespace

// A recipe that names no model (a DeepSpeed config) runs with the suite row's config.json; a key the
// suite does not read is refused with its line before any campaign runs.
TEST(BenchCli, ABlindCampaignThatEndsShortOfTheOracleWithBudgetLeftIsCountedAsStoppedShort) {
    // Megatron-LM's FP8 draft, blind: the one-lever moves reach 0.79 of the oracle and the search ends
    // with most of the budget unspent (the oracle's tp 1 x pp 2 is two moves away through slower layouts).
    const TempDir dir;
    dir.write("suite/suite.yaml", "- recipe: " + examples() + "/recipes/megatron-lm-llama3-8b-h100.sh\n  cluster: " + examples() +
                                      "/bench/clusters/p5-h100-1node.yaml\n  name: fp8 draft\n");
    const auto result = run_attune({"-q", "bench", "--suite", (dir.path() / "suite").string(), "--budget", "200gpuh",
                                    "--policies", "rules", "--seeds", "1", "--blind", "--json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json doc = json::parse(result.out);
    const auto& rules = doc["recipes"][0]["policies"]["rules"];
    ASSERT_LT(rules["fraction_of_oracle"].get<double>(), 0.95) << doc.dump(2);
    EXPECT_LT(rules["gpu_hours_spent"].get<double>(), 100);
    EXPECT_EQ(rules["stopped_short"].get<int>(), 1);
    EXPECT_EQ(doc["summary"]["rules"]["stopped_short"].get<int>(), 1);
    EXPECT_EQ(rules["gpu_hours_to_95_of_oracle"].get<double>(), 200) << "never reached: the whole budget";
}

std::string read_text(const fs::path& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(BenchGenerate, WritesTheSameSuiteForTheSameSeedAndEveryRecipeChecksAgainstItselfAndFitsItsCluster) {
    const TempDir dir;
    const auto suite = dir.path() / "suite";
    const auto result = run_attune({"-q", "bench", "--generate", "6", "--seed", "3", "--write-suite", suite.string(), "--policies",
                                    "rules", "--seeds", "1", "--budget", "20gpuh", "--json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json doc = json::parse(result.out);
    ASSERT_EQ(doc["recipes"].size(), 6U);
    const YAML::Node rows = YAML::LoadFile((suite / "suite.yaml").string());
    ASSERT_EQ(rows.size(), 6U);
    std::map<std::string, int> kinds;
    for (const auto& row : rows) {
        const auto recipe = (suite / row["recipe"].as<std::string>()).string();
        const auto cluster = (suite / row["cluster"].as<std::string>()).string();
        auto name = row["name"].as<std::string>();
        name = name.substr(0, name.rfind(" ("));  // the family in parentheses
        ++kinds[name.substr(name.rfind(' ') + 1)];
        EXPECT_GT(row["world_seed"].as<std::uint64_t>(), 0U);
        const auto check = run_attune({"gate", "check", recipe, recipe});
        EXPECT_EQ(check.exit_code, 0) << recipe << "\n" << check.out << check.err;
        EXPECT_NE(check.out.find("0 change(s)"), std::string::npos) << check.out;
        const auto estimate = run_attune({"sim", "estimate", recipe, "--cluster", cluster, "--json"});
        ASSERT_EQ(estimate.exit_code, 0) << estimate.err;
        EXPECT_TRUE(json::parse(estimate.out)["fits"].get<bool>()) << recipe;
    }
    EXPECT_EQ(kinds, (std::map<std::string, int>{{"draft", 2}, {"ported", 2}, {"vendor", 2}}));

    // The same seed writes the same rows (its first three, drawn again); another seed, other rows.
    const auto again = dir.path() / "again";
    ASSERT_EQ(run_attune({"-q", "bench", "--generate", "3", "--seed", "3", "--write-suite", again.string(), "--policies", "rules",
                          "--seeds", "1", "--budget", "1gpuh"}).exit_code, 0);
    const YAML::Node first = YAML::LoadFile((again / "suite.yaml").string());
    ASSERT_EQ(first.size(), 3U);
    for (std::size_t i = 0; i < first.size(); ++i) {
        EXPECT_EQ(first[i]["recipe"].as<std::string>(), rows[i]["recipe"].as<std::string>());
        EXPECT_EQ(first[i]["world_seed"].as<std::uint64_t>(), rows[i]["world_seed"].as<std::uint64_t>());
        EXPECT_EQ(read_text(suite / rows[i]["recipe"].as<std::string>()), read_text(again / first[i]["recipe"].as<std::string>()));
    }
    const auto other = dir.path() / "other";
    ASSERT_EQ(run_attune({"-q", "bench", "--generate", "3", "--seed", "4", "--write-suite", other.string(), "--policies", "rules",
                          "--seeds", "1", "--budget", "1gpuh"}).exit_code, 0);
    EXPECT_NE(read_text(again / "suite.yaml"), read_text(other / "suite.yaml"));
}

TEST(BenchGenerate, WritesOnlyPipelineSplitsTheFrameworkBuilds) {
    // The NeMo template writes 4 stages; MiniMax-M2's 62 layers do not split over them, and the gate takes
    // an uneven split in the original as the recipe's own stage sizes, which the row does not write.
    const TempDir dir;
    const auto suite = dir.path() / "suite";
    ASSERT_EQ(run_attune({"-q", "bench", "--generate", "7", "--seed", "1", "--write-suite", suite.string(), "--policies",
                          "rules", "--seeds", "1", "--budget", "1gpuh"}).exit_code, 0);
    const YAML::Node rows = YAML::LoadFile((suite / "suite.yaml").string());
    ASSERT_EQ(rows.size(), 7U);
    EXPECT_NE(rows[6]["name"].as<std::string>().find("minimax_m2"), std::string::npos)
        << "the row this test is about is drawn elsewhere now: " << rows[6]["name"];
    for (const auto& row : rows) {
        const auto recipe = (suite / row["recipe"].as<std::string>()).string();
        const auto check = run_attune({"gate", "check", recipe, recipe});
        const auto line = check.out.find("layers_divisible_by_pp ");
        ASSERT_NE(line, std::string::npos) << check.out;
        EXPECT_NE(check.out.substr(line, check.out.find('\n', line) - line).find("holds -> holds"), std::string::npos)
            << recipe << "\n" << check.out;
    }
}

TEST(BenchGenerate, RefusesASuiteFolderThatHoldsFilesAndFlagsThatContradictEachOther) {
    const TempDir dir;
    dir.write("full/keep.txt", "a user's file\n");
    const auto full = run_attune({"-q", "bench", "--generate", "2", "--write-suite", (dir.path() / "full").string()});
    EXPECT_EQ(full.exit_code, 2);
    EXPECT_NE(full.err.find("not empty"), std::string::npos) << full.err;
    EXPECT_EQ(read_text(dir.path() / "full" / "keep.txt"), "a user's file\n");
    const auto both = run_attune({"-q", "bench", "--generate", "2", "--suite", examples() + "/bench"});
    EXPECT_EQ(both.exit_code, 2);
    EXPECT_NE(both.err.find("--suite and --generate"), std::string::npos) << both.err;
    const auto alone = run_attune({"-q", "bench", "--write-suite", (dir.path() / "x").string()});
    EXPECT_EQ(alone.exit_code, 2);
    EXPECT_NE(alone.err.find("only with --generate"), std::string::npos) << alone.err;
    dir.write("seed/suite.yaml", "- recipe: " + examples() + "/recipes/nemo-llama3-8b-h100.yaml\n  world_seed: many\n");
    const auto seed = run_attune({"-q", "bench", "--suite", (dir.path() / "seed").string(), "--policies", "rules"});
    EXPECT_EQ(seed.exit_code, 2);
    EXPECT_NE(seed.err.find("suite.yaml:2: world_seed: expected a non-negative integer"), std::string::npos) << seed.err;
}

TEST(BenchCli, ASuiteRowGivesTheModelConfigAndAnUnknownKeyIsRefused) {
    const TempDir dir;
    dir.write("suite/suite.yaml", "- recipe: " + examples() + "/recipes/deepspeed-llama3-8b-zero3-h100.json\n  cluster: " +
                                      examples() + "/bench/clusters/p5-h100-1node.yaml\n  model_config: " + examples() +
                                      "/recipes/deepspeed/llama3-8b-config.json\n  name: zero-3\n");
    const auto result = run_attune({"-q", "bench", "--suite", (dir.path() / "suite").string(), "--budget", "10gpuh",
                                    "--policies", "rules", "--seeds", "1", "--json"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json doc = json::parse(result.out);
    EXPECT_GT(doc["recipes"][0]["oracle_tokens_per_s_per_gpu"].get<double>(), 0);
    EXPECT_GT(doc["recipes"][0]["policies"]["rules"]["mean_tokens_per_s_per_gpu"].get<double>(), 0);

    dir.write("bad/suite.yaml", "- recipe: " + examples() + "/recipes/nemo-llama3-8b-h100.yaml\n  model: llama3-8b\n");
    const auto refused = run_attune({"-q", "bench", "--suite", (dir.path() / "bad").string(), "--policies", "rules"});
    EXPECT_EQ(refused.exit_code, 2);
    EXPECT_NE(refused.err.find("suite.yaml:2: unknown key 'model'"), std::string::npos) << refused.err;
}
