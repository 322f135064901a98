#include <attune/core/error.hpp>
#include <attune/gate/verdict.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

using namespace attune;

namespace {

const std::string k_baseline =
    "trainer:\n  num_nodes: 2\n  devices: 8\n  max_steps: 1000\n"
    "env_vars:\n  NCCL_DEBUG: WARN\n"
    "model:\n  tp: 2\n  pp: 1\n  sp: false\n  mbs: 1\n  gbs: 64\n  seq: 4096\n  heads: 32\n  recompute: full\n"
    "  fp8: false\n  lr: ${oc.env:LR,1e-4}\n  data:\n    seq: ${model.seq}\n"
    "  optim:\n    lr: 1e-4\n    overlap: false\n";

class GateCheck : public ::testing::Test {
protected:
    const gate::Rules m_rules = gate::Rules::load(ATTUNE_FIXTURES "/gate-engine");
    gate::Policy m_policy = gate::load_policy(ATTUNE_FIXTURES "/gate-engine", std::nullopt);

    gate::Verdict judge(const std::string& candidate_text, gate::CheckOptions options = {}) const {
        const auto baseline = recipe::Document::parse(k_baseline, "base.yaml", {"env_vars"});
        const auto candidate = recipe::Document::parse(candidate_text, "cand.yaml", {"env_vars"});
        const auto& adapter = m_rules.adapter_for(baseline);
        return gate::check(baseline, candidate, adapter, m_rules, m_policy, cluster::default_cluster(), options);
    }

    gate::Verdict judge_edits(const std::vector<recipe::Edit>& edits, gate::CheckOptions options = {}) const {
        const auto baseline = recipe::Document::parse(k_baseline, "base.yaml", {"env_vars"});
        return judge(baseline.with_edits(edits).text(), options);
    }

    static std::vector<std::string> refused(const gate::Verdict& verdict) {
        std::vector<std::string> keys;
        for (const auto& change : verdict.changes)
            if (!change.allowed) keys.push_back(change.key);
        for (const auto& invariant : verdict.invariants)
            if (!invariant.ok) keys.push_back("invariant:" + invariant.name);
        return keys;
    }
};

using Keys = std::vector<std::string>;

}  // namespace

TEST_F(GateCheck, AllowsTheOriginalAgainstItselfWithNoChanges) {
    const auto verdict = judge(k_baseline);
    EXPECT_TRUE(verdict.allowed);
    EXPECT_TRUE(verdict.changes.empty());
    EXPECT_EQ(verdict.framework, "toy");
    EXPECT_EQ(verdict.rules_hash.substr(0, 7), "sha256:");
}

TEST_F(GateCheck, AllowsAPerformanceLever) {
    const auto verdict = judge_edits({{"model.recompute", recipe::Value::string("selective")}});
    EXPECT_TRUE(verdict.allowed);
    ASSERT_EQ(verdict.changes.size(), 1u);
    EXPECT_EQ(verdict.changes[0].lever, "recompute");
    EXPECT_EQ(verdict.levers, Keys{"recompute"});
}

TEST_F(GateCheck, TreatsANumberWrittenDifferentlyAsNoChange) {
    const auto verdict = judge_edits({{"model.optim.lr", recipe::Value::from_plain("0.0001")}});
    EXPECT_TRUE(verdict.allowed);
    EXPECT_TRUE(verdict.changes.empty());
}

TEST_F(GateCheck, RefusesAnObjectiveKeyAndTheInvariantItBreaks) {
    const auto verdict = judge_edits({{"model.gbs", recipe::Value::number(128)}});
    EXPECT_FALSE(verdict.allowed);
    EXPECT_EQ(refused(verdict), (Keys{"model.gbs", "invariant:global_batch_size", "invariant:tokens_per_step"}));
}

TEST_F(GateCheck, RefusesAnObjectiveChangeHiddenBehindAnInterpolation) {
    auto text = k_baseline;
    text.replace(text.find("seq: 4096"), 9, "seq: 8192");
    const auto verdict = judge(text);
    const auto keys = refused(verdict);
    EXPECT_NE(std::find(keys.begin(), keys.end(), "model.data.seq"), keys.end());
    const auto data = std::find_if(verdict.changes.begin(), verdict.changes.end(), [](const auto& c) { return c.key == "model.data.seq"; });
    EXPECT_NE(data->reason.find("written as ${model.seq}"), std::string::npos);
}

TEST_F(GateCheck, RefusesAnObjectiveChangeMadeThroughAnEnvironmentVariable) {
    const auto verdict = judge_edits({{"env_vars.LR", recipe::Value::number(0.001), true}});
    EXPECT_EQ(refused(verdict), (Keys{"model.lr", "env_vars.LR"}));
}

TEST_F(GateCheck, RefusesADuplicateKeyEvenWhenTheLastValueIsUnchanged) {
    auto text = k_baseline;
    text.replace(text.find("  gbs: 64\n"), 10, "  gbs: 128\n  gbs: 64\n");
    const auto verdict = judge(text);
    EXPECT_EQ(refused(verdict), Keys{"model.gbs"});
    EXPECT_NE(verdict.changes[0].reason.find("duplicate key in the candidate"), std::string::npos);
}

TEST_F(GateCheck, RefusesNumericsUnlessThePolicyAllowsTheLever) {
    EXPECT_EQ(refused(judge_edits({{"model.fp8", recipe::Value::boolean(true)}})), Keys{"model.fp8"});
    m_policy.allow_numerics = {"fp8"};
    EXPECT_TRUE(judge_edits({{"model.fp8", recipe::Value::boolean(true)}}).allowed);
}

TEST_F(GateCheck, RefusesUnknownKeysInStrictModeAndWarnsWhenAllowed) {
    const std::vector<recipe::Edit> edits{{"model.mystery", recipe::Value::number(1)}};
    EXPECT_EQ(refused(judge_edits(edits)), Keys{"model.mystery"});
    gate::CheckOptions lenient;
    lenient.allow_unknown = true;
    const auto verdict = judge_edits(edits, lenient);
    EXPECT_TRUE(verdict.allowed);
    EXPECT_NE(verdict.changes[0].reason.find("unknown key"), std::string::npos);
}

TEST_F(GateCheck, CountsCanonicalLeversAndNotCompanions) {
    gate::CheckOptions one;
    one.max_levers = 1;
    const auto tp_with_sp = judge_edits({{"model.tp", recipe::Value::number(4)}, {"model.sp", recipe::Value::boolean(true)}}, one);
    EXPECT_TRUE(tp_with_sp.allowed);
    EXPECT_EQ(tp_with_sp.levers, Keys{"tp"});
    const auto two = judge_edits({{"model.tp", recipe::Value::number(4)}, {"model.optim.overlap", recipe::Value::boolean(true)}}, one);
    EXPECT_EQ(refused(two), Keys{"invariant:max_levers"});
}

TEST_F(GateCheck, ChecksDivisibilityAndTheWorldSize) {
    EXPECT_EQ(refused(judge_edits({{"model.tp", recipe::Value::number(8)}, {"model.heads", recipe::Value::number(36)}})),
              (Keys{"model.heads", "invariant:heads_divisible_by_tp"}));
    EXPECT_EQ(refused(judge_edits({{"model.mbs", recipe::Value::number(16)}})), Keys{"invariant:gbs_divisible_by_mbs_dp"});
}

TEST_F(GateCheck, RefusesValuesOutsideTheLeversDomain) {
    const auto verdict = judge_edits({{"model.tp", recipe::Value::number(3)}});
    EXPECT_EQ(refused(verdict).front(), "model.tp");
    EXPECT_NE(verdict.changes[0].reason.find("expected one of {1, 2, 4, 8}"), std::string::npos);
}

TEST_F(GateCheck, AllowsTrialOnlyKeysOnlyForTrialRuns) {
    const std::vector<recipe::Edit> edits{{"trainer.max_steps", recipe::Value::number(30)}};
    EXPECT_EQ(refused(judge_edits(edits)), Keys{"trainer.max_steps"});
    gate::CheckOptions trial;
    trial.purpose = gate::Purpose::trial_run;
    const auto verdict = judge_edits(edits, trial);
    EXPECT_TRUE(verdict.allowed);
    EXPECT_TRUE(verdict.levers.empty());
    EXPECT_EQ(verdict.changes[0].reason.substr(0, 10), "trial-only");
}

TEST_F(GateCheck, ChecksDerivedKeysAgainstTheirFormula) {
    // 2 nodes x 8 GPUs / tp 2 = dp 8; gbs 64 / (mbs 1 x dp 8) = 8.
    EXPECT_TRUE(judge_edits({{"model.grad_accum", recipe::Value::number(8), true}}).allowed);
    EXPECT_EQ(refused(judge_edits({{"model.grad_accum", recipe::Value::number(4), true}})), Keys{"model.grad_accum"});
    // Null asks the framework to derive it, which cannot disagree with the formula.
    EXPECT_TRUE(judge_edits({{"model.grad_accum", recipe::Value::null(), true}}).allowed);
}

TEST(GateRules, ReportTheFileAndLineOfABadAdapter) {
    const auto dir = std::filesystem::temp_directory_path() / "attune-bad-rules";
    std::filesystem::create_directories(dir / "gate" / "frameworks");
    {
        std::ofstream(dir / "gate" / "frameworks" / "bad.yaml") << "framework: bad\ndetect: {require: [a]}\nkeys:\n  - {path: a, class: objectiv}\n";
        std::ofstream(dir / "gate" / "invariants.yaml") << "invariants: []\n";
    }
    try {
        (void)gate::Rules::load(dir);
        FAIL() << "expected an InputError";
    } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), (dir / "gate" / "frameworks" / "bad.yaml").string() +
                                             ":4: class 'objectiv' is not known; expected performance, numerics, objective or derived");
    }
    std::filesystem::remove_all(dir);
}

TEST_F(GateCheck, AnInvariantWhoseQuantityIsUnknownRefusesAChangeToItsInputsAndSaysHowToGiveIt) {
    const auto baseline = recipe::Document::parse(std::regex_replace(k_baseline, std::regex("  heads: 32\n"), ""), "base.yaml", {"env_vars"});
    const auto& adapter = m_rules.adapter_for(baseline);
    const auto judge_against = [&](const std::vector<recipe::Edit>& edits) {
        const auto candidate = recipe::Document::parse(baseline.with_edits(edits).text(), "cand.yaml", {"env_vars"});
        return gate::check(baseline, candidate, adapter, m_rules, m_policy, cluster::default_cluster(), {});
    };
    const auto moved = judge_against({{"model.tp", recipe::Value::number(4)}});
    EXPECT_FALSE(moved.allowed);
    EXPECT_EQ(refused(moved), Keys{"invariant:heads_divisible_by_tp"});
    const auto invariant = std::find_if(moved.invariants.begin(), moved.invariants.end(), [](const auto& c) { return !c.ok; });
    EXPECT_EQ(invariant->candidate, "unknown");
    EXPECT_NE(invariant->why.find("the change moves tp, and heads is unknown"), std::string::npos) << invariant->why;
    EXPECT_NE(invariant->why.find("set model.heads"), std::string::npos) << invariant->why;
    // A change that leaves tp alone cannot break it: the invariant is not applicable, as before.
    const auto untouched = judge_against({{"model.optim.overlap", recipe::Value::boolean(true)}});
    EXPECT_TRUE(untouched.allowed) << refused(untouched).size();
}
