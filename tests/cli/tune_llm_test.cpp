// Black-box: `attune tune --policy llm` against an OpenAI-compatible server on 127.0.0.1 that
// answers a scripted conversation: accepted proposals, an objective change the gate refuses, a
// key that does not exist, malformed arguments, a text answer, a 429, and a stop.
#include "../support/chat_responses.hpp"
#include "../support/loopback_server.hpp"
#include "../support/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>


namespace {

namespace fs = std::filesystem;
using attune::test_support::all_files_text;
using attune::test_support::journal_events;
using attune::test_support::LoopbackServer;
using attune::test_support::run_attune;
using attune::test_support::ScriptedResponse;
using attune::test_support::TempDir;
using attune::test_support::text_only;
using attune::test_support::tool_call;
using nlohmann::json;

constexpr const char* k_secret = "sk-test-secret-4f1c9a";

TEST(TuneLlm, TheAgentProposesIsRefusedRecoversAndStopsAndNoSecretIsWritten) {
    LoopbackServer server;
    // Step 1: an allowed single-lever change.
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.optim.overlap_grad_sync": true}, "rationale": "hide the reduce-scatter"})"));
    // Step 2: an objective change (the gate refuses), a key that does not exist, malformed arguments:
    // three refusals, so the step falls back to the rules policy.
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.global_batch_size": 1024}, "rationale": "bigger batch"})"));
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.turbo_mode": true}, "rationale": "go fast"})"));
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.micro_batch_size": )"));
    // Step 3: text without a tool call, a 429 with Retry-After, an estimate, then a proposal.
    server.enqueue(text_only("I think tensor parallel overlap would help."));
    server.enqueue({429, R"({"error": {"message": "rate limited"}})", {{"Retry-After", "0"}}, {}});
    server.enqueue(tool_call("estimate", R"({"edits": {"model.ub_tp_comm_overlap": true}})"));
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.ub_tp_comm_overlap": true}, "rationale": "overlap tp comms"})"));
    // Step 4: stop.
    server.enqueue(tool_call("stop", R"({"reason": "the remaining levers are small"})"));

    const TempDir dir;
    const auto campaign = dir.path() / "c";
    // The script answers the incumbents the rules' fallback reaches without lessons (--no-lessons).
    const auto result = run_attune({"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                    "--budget", "120gpuh", "--policy", "llm", "--llm", "openai:test-model", "--llm-url",
                                    server.url() + "/v1", "--campaign", campaign.string(), "--json", "--no-lessons"},
                                   {}, {std::string("OPENAI_API_KEY=") + k_secret});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json summary = json::parse(result.out);

    const auto events = journal_events(campaign);
    int exchanges = 0, refusals = 0, fallbacks = 0, retried = 0;
    std::vector<std::string> refusal_reasons;
    for (const auto& e : events) {
        exchanges += e["type"] == "llm-exchange" ? 1 : 0;
        if (e["type"] == "llm-exchange" && e["attempts"].size() == 2 && e["attempts"][0]["status"] == 429) ++retried;
        fallbacks += e["type"] == "llm-fallback" ? 1 : 0;
        if (e["type"] == "llm-refused") {
            ++refusals;
            refusal_reasons.push_back(e["reason"].get<std::string>());
        }
    }
    EXPECT_EQ(exchanges, 8) << "every chat call is journaled";
    EXPECT_EQ(retried, 1) << "the 429 shows as a first attempt, retried";
    EXPECT_EQ(fallbacks, 1);
    ASSERT_EQ(refusals, 3);
    EXPECT_NE(refusal_reasons[0].find("global_batch_size"), std::string::npos) << refusal_reasons[0];
    EXPECT_NE(refusal_reasons[1].find("model.turbo_mode"), std::string::npos) << refusal_reasons[1];
    EXPECT_NE(refusal_reasons[2].find("not JSON"), std::string::npos) << refusal_reasons[2];

    std::vector<std::string> levers;
    for (const auto& t : summary["trials"])
        if (t["kind"] == "candidate") levers.push_back(t["lever"].get<std::string>());
    ASSERT_GE(levers.size(), 3u);
    EXPECT_EQ(levers[0], "overlap_grad_reduce");
    EXPECT_EQ(levers[2], "tp_comm_overlap");
    for (const auto& t : summary["trials"]) EXPECT_NE(t["edits"].dump().find("global_batch_size"), 0u);
    EXPECT_NE(summary["stop_reason"].get<std::string>().find("the model stopped"), std::string::npos);
    EXPECT_EQ(summary["llm"]["calls"], 8);
    EXPECT_EQ(summary["llm"]["input_tokens"], 7 * 1200 + 900) << "usage as the server counted it";
    EXPECT_EQ(summary["llm"]["refused_answers"], 3);
    EXPECT_EQ(summary["llm"]["fallbacks_to_rules"], 1);

    EXPECT_EQ(all_files_text(campaign).find(k_secret), std::string::npos) << "an API key reached the campaign folder";
    const auto requests = server.requests();
    ASSERT_FALSE(requests.empty());
    EXPECT_EQ(requests.front().target, "/v1/chat/completions");
    EXPECT_NE(requests.front().body.find("search-rules.md"), std::string::npos) << "the skill set is in the system prompt";
}

struct ProviderCase {
    std::string provider;
    std::string url_suffix;                  ///< what --llm-url adds to the server's address
    std::string expected_path;               ///< where attune must post
    std::vector<std::string> environment;    ///< the provider's credentials (fake)
    std::string secret;                      ///< must appear in no file the campaign wrote
};

ScriptedResponse provider_tool_call(const std::string& provider, const std::string& name, const json& input) {
    if (provider == "anthropic")
        return {200, json{{"id", "msg_1"}, {"type", "message"}, {"role", "assistant"},
                          {"content", {{{"type", "tool_use"}, {"id", "toolu_" + name}, {"name", name}, {"input", input}}}},
                          {"stop_reason", "tool_use"}, {"usage", {{"input_tokens", 800}, {"output_tokens", 30}}}}.dump(), {}, {}};
    return {200, json{{"output", {{"message", {{"role", "assistant"},
                                                {"content", {{{"toolUse", {{"toolUseId", "t-" + name}, {"name", name}, {"input", input}}}}}}}}}},
                      {"stopReason", "tool_use"}, {"usage", {{"inputTokens", 800}, {"outputTokens", 30}, {"totalTokens", 830}}}}.dump(), {}, {}};
}

class TuneLlmProvider : public testing::TestWithParam<ProviderCase> {};

TEST_P(TuneLlmProvider, AProposalIsAcceptedEndToEndAnObjectiveChangeRefusedAndNoSecretWritten) {
    const auto& c = GetParam();
    LoopbackServer server;
    server.enqueue(provider_tool_call(c.provider, "propose_change", {{"edits", {{"model.global_batch_size", 2048}}}, {"rationale", "bigger"}}));
    server.enqueue(provider_tool_call(c.provider, "propose_change", {{"edits", {{"model.optim.overlap_grad_sync", true}}}, {"rationale", "overlap"}}));
    server.enqueue(provider_tool_call(c.provider, "stop", {{"reason", "done"}}));
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    const auto model = c.provider == "bedrock" ? "bedrock:anthropic.claude-3-5-sonnet-20240620-v1:0" : "anthropic:claude-test";
    const auto result = run_attune({"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                    "--budget", "40gpuh", "--policy", "llm", "--llm", model, "--llm-url", server.url() + c.url_suffix,
                                    "--campaign", campaign.string(), "--json"},
                                   {}, c.environment);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const json summary = json::parse(result.out);
    ASSERT_GE(summary["trials"].size(), 2u);
    EXPECT_EQ(summary["trials"][1]["lever"], "overlap_grad_reduce");
    int refused = 0;
    for (const auto& e : journal_events(campaign))
        refused += e["type"] == "llm-refused" && e["reason"].get<std::string>().find("global_batch_size") != std::string::npos ? 1 : 0;
    EXPECT_EQ(refused, 1);
    ASSERT_FALSE(server.requests().empty());
    EXPECT_EQ(server.requests().front().target.rfind(c.expected_path, 0), 0u) << server.requests().front().target;
    EXPECT_EQ(all_files_text(campaign).find(c.secret), std::string::npos) << "a credential reached the campaign folder";
}

INSTANTIATE_TEST_SUITE_P(
    Providers, TuneLlmProvider,
    testing::Values(ProviderCase{"anthropic", "", "/v1/messages", {"ANTHROPIC_API_KEY=sk-ant-fake-71b2"}, "sk-ant-fake-71b2"},
                    ProviderCase{"bedrock", "", "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse",
                                 {"AWS_ACCESS_KEY_ID=AKIDFAKE0001", "AWS_SECRET_ACCESS_KEY=fake/secret+key9", "AWS_REGION=us-east-1"},
                                 "fake/secret+key9"}),
    [](const testing::TestParamInfo<ProviderCase>& info) { return info.param.provider; });

TEST(TuneLlm, ATimeoutIsRetriedAndAMalformedAnswerFallsBackToRulesBothJournaled) {
    LoopbackServer server;
    // Step 1: the first attempt times out, the retry answers with a proposal.
    server.enqueue({200, "{}", {}, std::chrono::milliseconds(2500)});
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.optim.overlap_grad_sync": true}, "rationale": "overlap"})"));
    // Step 2: a 200 whose body is not JSON: the step falls back to the rules policy.
    server.enqueue({200, "<html>gateway says hello</html>", {{"Content-Type", "text/html"}}, {}});
    server.enqueue(tool_call("stop", R"({"reason": "enough"})"));
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    const auto result = run_attune({"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                    "--budget", "40gpuh", "--policy", "llm", "--llm", "openai:m", "--llm-url", server.url() + "/v1",
                                    "--llm-timeout", "1", "--campaign", campaign.string()},
                                   {}, {"OPENAI_API_KEY=x"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    bool timed_out_then_answered = false, malformed_logged = false, fell_back = false;
    for (const auto& e : journal_events(campaign)) {
        if (e["type"] == "llm-exchange" && e["attempts"].size() == 2 && e["attempts"][0]["status"] == 0 && e["status"] == 200)
            timed_out_then_answered = true;
        if (e["type"] == "llm-exchange" && !e.value("error", std::string()).empty()) malformed_logged = true;
        if (e["type"] == "llm-fallback") fell_back = true;
    }
    EXPECT_TRUE(timed_out_then_answered) << "the timed-out attempt and its retry are in one journaled exchange";
    EXPECT_TRUE(malformed_logged);
    EXPECT_TRUE(fell_back);
}

TEST(TuneLlm, AProposalOfValuesTheIncumbentAlreadyRunsWithIsNoMoveAndIsNeverLaunched) {
    LoopbackServer server;
    // The recipe's global batch is 512 and it leaves cpu_offloading out (NeMo's default: false).
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.global_batch_size": 512}, "rationale": "same batch"})"));
    server.enqueue(tool_call("propose_change", R"({"edits": {"model.cpu_offloading": false}, "rationale": "no offload"})"));
    // A real move with a key written as it already is: only the real change is launched.
    server.enqueue(tool_call("propose_change",
                             R"({"edits": {"model.optim.overlap_grad_sync": true, "model.global_batch_size": 512}, "rationale": "overlap"})"));
    server.enqueue(tool_call("stop", R"({"reason": "enough"})"));
    const TempDir dir;
    const auto campaign = dir.path() / "c";
    const auto result = run_attune({"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                    "--budget", "60gpuh", "--policy", "llm", "--llm", "openai:m", "--llm-url", server.url() + "/v1",
                                    "--campaign", campaign.string()},
                                   {}, {"OPENAI_API_KEY=x"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    std::vector<std::string> refusals;
    std::vector<json> proposed;
    for (const auto& e : journal_events(campaign)) {
        if (e["type"] == "llm-refused") refusals.push_back(e["reason"].get<std::string>());
        if (e["type"] == "trial-proposed" && e["kind"] == "candidate") proposed.push_back(e["edits"]);
    }
    ASSERT_EQ(refusals.size(), 2u);
    for (const auto& reason : refusals) EXPECT_NE(reason.find("no move"), std::string::npos) << reason;
    ASSERT_GE(proposed.size(), 1u);
    EXPECT_EQ(proposed.front(), json({{"model.optim.overlap_grad_sync", true}})) << proposed.front().dump();
}

TEST(TuneLlm, NoSkillsLeavesTheSkillSetOutOfThePrompt) {
    LoopbackServer server;
    server.enqueue(tool_call("stop", R"({"reason": "testing"})"));
    const TempDir dir;
    const auto result = run_attune({"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                    "--budget", "20gpuh", "--policy", "llm", "--no-skills", "--llm", "openai:m", "--llm-url",
                                    server.url() + "/v1", "--campaign", (dir.path() / "c").string()},
                                   {}, {"OPENAI_API_KEY=x"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    ASSERT_EQ(server.requests().size(), 1u);
    EXPECT_EQ(server.requests().front().body.find("search-rules.md"), std::string::npos);
}

/// The system prompt of a campaign whose model stops at once, run with `lessons_args`.
std::string system_prompt_with(const std::vector<std::string>& lessons_args, const fs::path& campaign) {
    LoopbackServer server;
    server.enqueue(tool_call("stop", R"({"reason": "testing"})"));
    std::vector<std::string> args{"-q", "tune", std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                  "--budget", "20gpuh", "--policy", "llm", "--llm", "openai:m", "--llm-url", server.url() + "/v1",
                                  "--campaign", campaign.string()};
    args.insert(args.end(), lessons_args.begin(), lessons_args.end());
    const auto result = run_attune(args, {}, {"OPENAI_API_KEY=x"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    const auto requests = server.requests();
    return requests.empty() ? "" : json::parse(requests.front().body)["messages"][0]["content"].get<std::string>();
}

TEST(TuneLlm, TheSkillSetCarriesTheCampaignsLessonsAndNoneWithNoLessons) {
    const TempDir dir;
    const std::string fixture = std::string(ATTUNE_FIXTURES) + "/lessons/wrong-flag";
    const auto with = system_prompt_with({"--lessons", fixture}, dir.path() / "with");
    EXPECT_NE(with.find("## persist-layer-norm-llama3-h100.md"), std::string::npos) << with.substr(0, 2000);
    EXPECT_EQ(with.find("llama3-70b-h100-nemo"), std::string::npos) << "a shipped lesson the campaign did not read";
    const auto without = system_prompt_with({"--no-lessons"}, dir.path() / "without");
    EXPECT_NE(without.find("search-rules.md"), std::string::npos);
    EXPECT_EQ(without.find("lessons: 2"), std::string::npos) << "a lesson with --no-lessons";
}

TEST(TuneLlm, AMissingKeyOrModelIsAUsageErrorBeforeAnythingIsWritten) {
    const TempDir dir;
    const std::string recipe = std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml";
    const auto no_model = run_attune({"tune", recipe, "--policy", "llm", "--campaign", (dir.path() / "a").string()});
    EXPECT_EQ(no_model.exit_code, 2);
    EXPECT_NE(no_model.err.find("--llm PROVIDER:MODEL"), std::string::npos);
    const auto no_key = run_attune({"tune", recipe, "--policy", "llm", "--llm", "anthropic:claude", "--campaign",
                                    (dir.path() / "b").string()},
                                   {}, {"ANTHROPIC_API_KEY="});
    EXPECT_EQ(no_key.exit_code, 2);
    EXPECT_NE(no_key.err.find("ANTHROPIC_API_KEY"), std::string::npos) << no_key.err;
    EXPECT_FALSE(fs::exists(dir.path() / "a"));
    EXPECT_FALSE(fs::exists(dir.path() / "b"));
}

}  // namespace
