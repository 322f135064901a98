// The rules policy on the NeMo 8B example: which move it proposes, with which companion edits,
// and what it refuses to propose again.
#include <attune/campaign/trial_io.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/policy.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/verdict.hpp>
#include <attune/policy/rules_policy.hpp>

#include <gtest/gtest.h>

namespace {

using namespace attune;

struct Fixture {
    gate::LoadedRecipe loaded = gate::load_recipe(std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-8b-h100.yaml",
                                                  gate::default_rules());
    cluster::Cluster cluster = cluster::default_cluster();
    gate::Policy gate_policy = gate::load_policy(data_dir(), std::nullopt);
    policy::Measurement measured;

    Fixture() {
        measured.status = "ok";
        measured.tokens_per_s_per_gpu = 5000;
        measured.peak_memory_gib = 20;
        measured.noise = 0.003;
        measured.facts["memory_headroom_gib"] = 59;
    }

    policy::CampaignState state(const policy::Edits& incumbent = {}) const {
        policy::CampaignState s;
        s.original = &loaded.document;
        s.adapter = loaded.adapter;
        s.cluster = &cluster;
        s.rules = &gate::default_rules(), s.gate_policy = &gate_policy;
        s.incumbent = 0;
        s.incumbent_edits = incumbent;
        s.incumbent_measured = &measured;
        s.history.push_back({.n = 0, .kind = "baseline", .lever = "", .move = "baseline", .edits = incumbent, .incumbent = -1,
                             .outcome = "ok", .preflight = std::nullopt, .measured = measured, .accepted = false});
        s.budget_left_gpu_s = 200 * 3600;
        s.trial_cost_gpu_s = 4 * 3600;
        s.estimate = [this](const policy::Edits& edits) {
            return campaign::preflight_of(loaded.document.with_edits(policy::edit_list(edits)), *loaded.adapter, cluster);
        };
        return s;
    }
};

policy::Proposal proposal(const policy::Decision& decision) {
    EXPECT_TRUE(std::holds_alternative<policy::Proposal>(decision)) << std::get<policy::Stop>(decision).reason;
    return std::get<policy::Proposal>(decision);
}

TEST(RulesPolicy, ATpMoveKeepsThePaddedVocabularyAndAnUnknownQuantityDoesNotBlockItsGuard) {
    const Fixture f;
    const auto rules = policy::SearchRules::load(std::string(ATTUNE_FIXTURES) + "/policy/one-phase.yaml");
    auto policy = policy::make_rules_policy(rules);
    const auto p = proposal(policy->propose(f.state()));
    EXPECT_EQ(p.lever, "tp");
    EXPECT_EQ(p.move, "shrink/1");
    ASSERT_EQ(p.edits.size(), 2u) << "tp and its companion; NeMo's micro batch is not a companion of tp";
    EXPECT_EQ(p.edits.at("model.tensor_model_parallel_size").to_string(), "2");
    EXPECT_EQ(p.edits.at("model.make_vocab_size_divisible_by").to_string(), "256") << "128 x 4 = 256 x 2: 128512 rows either way";
}

TEST(RulesPolicy, GuardsSeeTheShapeOfACatalogueModelAndTheFrameworksPipelineBatch) {
    // An AutoModel recipe names DeepSeek-V3 and gives no layers or heads: the guards read them from the
    // simulator's catalogue, or every guard over them would pass unchecked.
    const auto loaded = gate::load_recipe(
        std::string(ATTUNE_SOURCE_DIR) + "/examples/bench/automodel-deepseek-v3-h100-recipe-on-b200.yaml",
        gate::default_rules());
    const auto cluster = cluster::load_cluster(std::string(ATTUNE_SOURCE_DIR) + "/examples/bench/clusters/p6-b200-32nodes.yaml");
    const auto facts = policy::facts_lookup(loaded.document, *loaded.adapter, cluster, nullptr, {});
    EXPECT_EQ(facts("layers"), 61);
    EXPECT_EQ(facts("experts"), 256);
    EXPECT_EQ(facts("mbs"), 4) << "the local batch, which the global batch divides by";
    EXPECT_EQ(facts("pp_mbs"), 1) << "the pipeline's micro batch";
    EXPECT_EQ(facts("uneven_stages"), 1) << "torch pipelining splits 61 layers unevenly";
    EXPECT_FALSE(facts("no_such_fact").has_value());
}

TEST(RulesPolicy, AMoveTriedAgainstThisIncumbentIsNotProposedAgainAndARequirementBlocks) {
    const Fixture f;
    const auto rules = policy::SearchRules::load(std::string(ATTUNE_FIXTURES) + "/policy/one-phase.yaml");
    auto policy = policy::make_rules_policy(rules);
    auto state = f.state();
    state.history.push_back({.n = 1, .kind = "candidate", .lever = "tp", .move = "shrink/1", .edits = {}, .incumbent = 0,
                             .outcome = "ok", .preflight = std::nullopt, .measured = std::nullopt, .accepted = false});
    const auto decision = policy->propose(state);
    ASSERT_TRUE(std::holds_alternative<policy::Stop>(decision)) << proposal(decision).move;
    EXPECT_EQ(std::get<policy::Stop>(decision).reason, "nothing left");
}

TEST(RulesPolicy, AMoveThatWritesWhatTheFrameworkAlreadyDoesIsNoMove) {
    // The 8B recipe has no cpu_offloading (NeMo's default: false) and runs mcore_distributed_optim.
    const Fixture f;
    const auto rules = policy::SearchRules::load(std::string(ATTUNE_FIXTURES) + "/policy/framework-default.yaml");
    auto policy = policy::make_rules_policy(rules);
    const auto p = proposal(policy->propose(f.state()));
    EXPECT_EQ(p.move, "defaults/3");
    EXPECT_EQ(p.edits.at("model.cpu_offloading").to_string(), "true");
}

TEST(RulesPolicy, APlannedOnlyMoveIsNeverTriedOnItsOwn) {
    const Fixture f;
    const auto path = std::string(ATTUNE_FIXTURES) + "/policy/planned-only.yaml";
    const auto planned_rules = policy::SearchRules::load(path);
    auto planned_only = policy::make_rules_policy(planned_rules);
    const auto decision = planned_only->propose(f.state());
    ASSERT_TRUE(std::holds_alternative<policy::Stop>(decision)) << proposal(decision).move;
    EXPECT_NE(std::get<policy::Stop>(decision).reason.find("no layout predicted faster is reachable"), std::string::npos)
        << std::get<policy::Stop>(decision).reason;

    auto rules = policy::SearchRules::load(path);
    rules.phases.front().planned_only = false;
    auto own = policy::make_rules_policy(rules);
    EXPECT_EQ(proposal(own->propose(f.state())).move, "explore/1") << "the same move, taken on its own";
}

TEST(RulesPolicy, ItsMovesSpentItRunsAgainANearMissTheEstimatePredictsFasterUpToThreeRuns) {
    const Fixture f;
    const auto rules = policy::SearchRules::load(std::string(ATTUNE_FIXTURES) + "/policy/remeasure.yaml");
    auto policy = policy::make_rules_policy(rules);
    auto state = f.state();
    const auto baseline = state.estimate({});
    ASSERT_TRUE(baseline.valid);
    state.history.front().preflight = baseline;
    auto predicted_faster = baseline;
    predicted_faster.tokens_per_s_per_gpu *= 1.01;
    const policy::Edits near_miss{{"model.cross_entropy_loss_fusion", recipe::Value::boolean(true)}};
    const auto run = [&](int n, double tokens) {
        policy::Measurement m = f.measured;
        m.tokens_per_s_per_gpu = tokens;
        state.history.push_back({.n = n, .kind = "candidate", .lever = "fusions", .move = "explore/1", .edits = near_miss,
                                 .incumbent = 0, .outcome = "ok", .preflight = predicted_faster, .measured = m, .accepted = false});
    };
    run(1, 4985);  // -0.3% against the incumbent's 5000: inside the band, predicted +1%
    const auto again = proposal(policy->propose(state));
    EXPECT_EQ(again.repeat_of, 1);
    EXPECT_EQ(again.edits, near_miss);
    run(2, 5010);
    EXPECT_EQ(proposal(policy->propose(state)).repeat_of, 1) << "two runs, mean +0.05%: still open";
    run(3, 4990);
    EXPECT_TRUE(std::holds_alternative<policy::Stop>(policy->propose(state))) << "three runs are enough";

    state.history.resize(1);
    run(1, 4940);  // -1.2%: beyond the band, the question is answered
    EXPECT_TRUE(std::holds_alternative<policy::Stop>(policy->propose(state)));
}

TEST(RulesPolicy, TheShippedRulesProposeOneLeverThatTheGateAllows) {
    const Fixture f;
    auto policy = policy::make_rules_policy(policy::default_search_rules());
    const auto p = proposal(policy->propose(f.state()));
    const auto candidate = f.loaded.document.with_edits(policy::edit_list(p.edits));
    gate::Policy gate_policy;
    const auto verdict = gate::check(f.loaded.document, candidate, *f.loaded.adapter, gate::default_rules(), gate_policy, f.cluster, {});
    EXPECT_TRUE(verdict.allowed);
    EXPECT_EQ(verdict.levers.size(), 1u) << p.rationale;
}

TEST(RulesPolicy, AnOutOfMemoryIncumbentGetsAFixOomMove) {
    Fixture f;
    f.measured.status = "oom";
    f.measured.tokens_per_s_per_gpu.reset();
    f.measured.facts.clear();
    auto policy = policy::make_rules_policy(policy::default_search_rules());
    const auto p = proposal(policy->propose(f.state()));
    EXPECT_EQ(p.move.rfind("fix-oom/", 0), 0u) << p.move;
}

TEST(RulesPolicy, AHostMemoryOomGetsNoGpuMemoryMoveAndStopsSayingWhy) {
    // The host's OOM killer: recompute, a smaller micro batch or more model parallelism do not help.
    Fixture f;
    f.measured.status = "oom";
    f.measured.tokens_per_s_per_gpu.reset();
    f.measured.facts = {{"oom_host_memory", 1}};
    auto policy = policy::make_rules_policy(policy::default_search_rules());
    const auto decision = policy->propose(f.state());
    ASSERT_TRUE(std::holds_alternative<policy::Stop>(decision)) << std::get<policy::Proposal>(decision).move;
    EXPECT_NE(std::get<policy::Stop>(decision).reason.find("host's OOM killer"), std::string::npos);
}

TEST(RulesPolicy, MovesPredictedToFitOnlyBeforeTheMeasuredMemoryBiasAreNotProposed) {
    // The baseline's measured peak against its estimate says how much more this cluster uses than the
    // nominal model (fragmentation, buffers): a move that fits only by the estimate is not launched.
    const Fixture f;
    auto policy = policy::make_rules_policy(policy::default_search_rules());
    auto unbiased = f.state();
    const auto baseline = unbiased.estimate({});
    ASSERT_TRUE(baseline.valid);
    unbiased.history.front().preflight = baseline;
    unbiased.history.front().measured->peak_memory_gib = baseline.memory_gib;
    const auto free_move = proposal(policy->propose(unbiased));
    const auto free_estimate = unbiased.estimate(free_move.edits);
    const double bias = 1.01 * baseline.capacity_gib / free_estimate.memory_gib;  // just too much for that move

    auto biased = f.state();
    biased.history.front().preflight = baseline;
    biased.history.front().measured->peak_memory_gib = baseline.memory_gib * bias;
    policy = policy::make_rules_policy(policy::default_search_rules());
    const auto careful = proposal(policy->propose(biased));
    EXPECT_NE(careful.edits, free_move.edits);
    EXPECT_LE(biased.estimate(careful.edits).memory_gib * bias, baseline.capacity_gib) << careful.move;
}

}  // namespace
