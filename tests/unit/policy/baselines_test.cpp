// The baseline policies (random, bayes, grid): their lever space, and each driven by the campaign
// loop on the simulated cluster: valid whole configurations, the gate's verdict, the budget.
#include "../../support/run.hpp"

#include <attune/campaign/campaign.hpp>
#include <attune/campaign/factories.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/policy/baselines.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/sim/from_recipe.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <tuple>

namespace attune::policy {
namespace {

using test_support::TempDir;

std::string example(const std::string& name) { return std::string(ATTUNE_SOURCE_DIR) + "/examples/" + name; }

std::vector<recipe::Edit> edit_list(const Edits& edits) {
    std::vector<recipe::Edit> out;
    for (const auto& [path, value] : edits) out.push_back({path, value, false});
    return out;
}

struct Loaded {
    gate::LoadedRecipe recipe;
    cluster::Cluster cluster = cluster::default_cluster();
};

const gate::Policy& default_gate_policy() {
    static const gate::Policy policy = gate::load_policy(data_dir(), std::nullopt);
    return policy;
}

Loaded load(const std::string& recipe) {
    return {gate::load_recipe(example("recipes/" + recipe), gate::default_rules()),
            cluster::default_cluster()};
}

TEST(ConfigSpace, HasTheNeMoLayoutLeversAndRoundTripsEveryPoint) {
    const auto l = load("nemo-llama3-8b-h100.yaml");
    const ConfigSpace space(l.recipe.document, *l.recipe.adapter, l.cluster, gate::default_rules(), default_gate_policy());
    std::set<Field> fields;
    for (const auto& d : space.dimensions()) fields.insert(d.field);
    for (const Field f : {Field::tp, Field::pp, Field::cp, Field::mbs, Field::recompute})
        EXPECT_TRUE(fields.contains(f)) << lever_name(f);
    EXPECT_FALSE(fields.contains(Field::ep)) << "a dense model has no expert parallelism to search";
    ASSERT_TRUE(space.original_point().has_value());
    EXPECT_EQ(option_of(space, *space.original_point(), Field::tp), 4);
    std::mt19937_64 rng(3);
    int consistent = 0;
    for (int i = 0; i < 150; ++i) {
        const Point p = space.random_point(rng);
        EXPECT_EQ(space.point_of(space.edits(p)), p) << space.describe(p);
        consistent += space.consistent(p) ? 1 : 0;
    }
    EXPECT_GT(consistent, 0);
    EXPECT_LT(consistent, 150);
}

TEST(ConfigSpace, SearchesAMegatronLaunchScriptWithoutWritingTheDefaultsItLeavesOut) {
    const auto l = load("megatron-lm-llama3-8b-h100.sh");
    const ConfigSpace space(l.recipe.document, *l.recipe.adapter, l.cluster, gate::default_rules(), default_gate_policy());
    std::set<Field> fields;
    for (const auto& d : space.dimensions()) fields.insert(d.field);
    for (const Field f : {Field::tp, Field::pp, Field::recompute, Field::distributed_optimizer, Field::overlap_grad_reduce})
        EXPECT_TRUE(fields.contains(f)) << lever_name(f);
    // The original layout is no change: no --context-parallel-size 1 or --make-vocab-size-divisible-by 128
    // written for flags the script leaves to Megatron's defaults.
    EXPECT_TRUE(space.changes(space.inputs().layout).empty());
    auto layout = space.inputs().layout;
    layout.tp = 2;
    layout.sharding = sim::Sharding::distributed_optimizer;
    const auto changes = space.changes(layout);
    ASSERT_TRUE(changes.contains("MODEL_PARALLEL_ARGS.--tensor-model-parallel-size"));
    EXPECT_EQ(changes.at("MODEL_ARGS.--make-vocab-size-divisible-by").as_number(), 256) << "128 x tp 4 = 256 x tp 2";
    EXPECT_EQ(changes.at("MODEL_ARGS.--use-distributed-optimizer").as_bool(), true) << "added to the array holding most flags";
    EXPECT_TRUE(space.admits(layout));
}

// A family whose global batch is per device x accumulation x dp (torchtune) holds it by the accumulation
// steps; one whose micro batch key is per device (MaxText's per_device_batch_size: a replica of tp x cp x pp
// devices runs that many times more) gets the key that gives the layout's micro batch. Both read back as the
// layout the point is, and the gate allows them.
TEST(ConfigSpace, WritesAPerDeviceFamilysBatchKeysSoThatTheLayoutAndTheGlobalBatchHold) {
    const auto torchtune = load("torchtune-llama3-70b-lora-h100.yaml");
    const ConfigSpace tt(torchtune.recipe.document, *torchtune.recipe.adapter, torchtune.cluster, gate::default_rules(),
                         default_gate_policy());
    auto layout = tt.inputs().layout;
    layout.cp = 2;
    const auto tt_changes = tt.changes(layout);
    EXPECT_EQ(tt_changes.at("gradient_accumulation_steps").as_number(), 16) << "8 x dp 64 / dp 32";
    EXPECT_TRUE(tt.admits(layout));

    const auto maxtext = load("maxtext-llama3-8b-h100.sh");
    const ConfigSpace mx(maxtext.recipe.document, *maxtext.recipe.adapter, maxtext.cluster, gate::default_rules(),
                         default_gate_policy());
    layout = mx.inputs().layout;
    ASSERT_EQ(layout.tp, 2);
    ASSERT_EQ(layout.mbs, 2) << "one sample per device, two devices per replica";
    layout.tp = 1;   // the same micro batch per replica: two samples per device
    const auto mx_changes = mx.changes(layout);
    EXPECT_EQ(mx_changes.at("per_device_batch_size").as_number(), 2);
    EXPECT_EQ(mx_changes.at("gradient_accumulation_steps").as_number(), 4) << "2 x 64 devices x 4 = 512, as 1 x 64 x 8";
    const auto doc = maxtext.recipe.document.with_edits(edit_list(mx_changes));
    EXPECT_EQ(sim::from_recipe(doc, *maxtext.recipe.adapter, maxtext.cluster).layout.mbs, 2);
    EXPECT_TRUE(mx.admits(layout));
}

TEST(ConfigSpace, AdmissiblePointsPassTheGateAgainstTheOriginal) {
    for (const std::string recipe :
         {"nemo-llama3-8b-h100.yaml", "nemo-mixtral-8x7b-h100.yaml", "hyperpod-llama3-8b-h100.yaml"}) {
        const auto l = load(recipe);
        const ConfigSpace space(l.recipe.document, *l.recipe.adapter, l.cluster, gate::default_rules(), default_gate_policy());
        const auto gate_policy = gate::load_policy(data_dir(), std::nullopt);
        std::mt19937_64 rng(5);
        int admitted = 0;
        for (int i = 0; i < 3000 && admitted < 25; ++i) {
            const Point p = space.random_point(rng);
            if (!space.admissible(p)) continue;
            ++admitted;
            gate::CheckOptions options;
            options.purpose = gate::Purpose::trial_run;
            options.max_levers = 1000;
            const auto [verdict, trial] =
                gate::admit(l.recipe.document, l.recipe.document.with_edits(edit_list(space.edits(p))),
                            *l.recipe.adapter, gate::default_rules(), gate_policy, l.cluster, options);
            EXPECT_TRUE(verdict.allowed) << recipe << ": " << space.describe(p) << "\n"
                                         << verdict.to_json().dump(1);
        }
        EXPECT_GE(admitted, 10) << recipe;
    }
}

TEST(GatedOracle, CountsOnlyWhatTheGateAllows) {
    // HyperPod's global batch is train_batch_size x world / tp: tp 2 alone halves it. The ungated
    // enumeration takes such a layout; the oracle must not, and its best passes the gate.
    const gate::LoadedRecipe recipe =
        gate::load_recipe(example("bench/hyperpod-llama3-8b-h200-draft.yaml"), gate::default_rules());
    const cluster::Cluster cluster = cluster::load_cluster(example("bench/clusters/p5e-h200-2nodes.yaml"));
    const ConfigSpace space(recipe.document, *recipe.adapter, cluster, gate::default_rules(), default_gate_policy());
    const sim::World world;
    const auto& in = space.inputs();
    const auto ungated = sim::run_oracle(world, in.hardware, in.model, in.layout, sim::lever_space(*recipe.adapter));
    EXPECT_FALSE(space.admits(ungated.best)) << "tp " << ungated.best.tp << ", mbs " << ungated.best.mbs;
    const auto gated = run_gated_oracle(space, world);
    EXPECT_LT(gated.best_tokens_per_s_per_gpu, ungated.best_tokens_per_s_per_gpu);
    EXPECT_GE(gated.best_tokens_per_s_per_gpu, gated.baseline_tokens_per_s_per_gpu);
    const auto verdict = gate::check(recipe.document, recipe.document.with_edits(edit_list(space.changes(gated.best))),
                                     *recipe.adapter, gate::default_rules(),
                                     gate::load_policy(data_dir(), std::nullopt), cluster, [] {
                                         gate::CheckOptions options;
                                         options.purpose = gate::Purpose::trial_run;
                                         options.max_levers = 1000;
                                         return options;
                                     }());
    EXPECT_TRUE(verdict.allowed) << verdict.to_json().dump(1);
}

TEST(GatedOracle, KeepsTheRecipesOwnUnevenPipelineSplit) {
    // 126 layers over pp 8 x vpp 8 is the published 405B layout (explicit stage sizes); only an edited
    // split must be even, so the recipe's own split and its cp move (2 -> 1, +9%) stay in the space.
    const gate::LoadedRecipe recipe =
        gate::load_recipe(example("bench/nemo-llama31-405b-h100-recipe-on-b200.yaml"), gate::default_rules());
    const cluster::Cluster cluster = cluster::load_cluster(example("bench/clusters/p6-b200-16nodes.yaml"));
    const ConfigSpace space(recipe.document, *recipe.adapter, cluster, gate::default_rules(), default_gate_policy());
    ASSERT_TRUE(space.original_point().has_value());
    EXPECT_TRUE(space.consistent(*space.original_point()));
    const auto result = run_gated_oracle(space, sim::World{});
    EXPECT_GT(result.best_tokens_per_s_per_gpu, 1.05 * result.baseline_tokens_per_s_per_gpu);
    EXPECT_EQ(result.best.pp * result.best.vpp, 64);
    EXPECT_EQ(result.best.cp, 1);
}

TEST(GatedOracle, NeverEditsTheSplitIntoAnUnevenOne) {
    // The gate lets any split through once the original's is uneven (the recipe sizes its stages itself),
    // but Megatron-Core builds an edited split only when it is even: the oracle counted pp 8 for 94
    // layers at pp 4, a layout no campaign can run, and scored the Qwen3-235B row below what it can reach.
    const gate::LoadedRecipe recipe =
        gate::load_recipe(example("bench/nemo-llama31-405b-h100-recipe-on-b200.yaml"), gate::default_rules());
    const cluster::Cluster cluster = cluster::load_cluster(example("bench/clusters/p6-b200-16nodes.yaml"));
    const ConfigSpace space(recipe.document, *recipe.adapter, cluster, gate::default_rules(), default_gate_policy());
    const auto& original = space.inputs().layout;
    ASSERT_EQ(original.pp * original.vpp, 64) << "126 layers over 8 x 8 chunks";
    auto layout = original;
    layout.vpp = 1;
    EXPECT_FALSE(space.admits(layout)) << "126 layers over 8 stages";
    layout.pp = 2;
    EXPECT_TRUE(space.admits(layout)) << "63 layers a stage";
    const auto best = run_gated_oracle(space, sim::World{}).best;
    const bool own_split = best.pp == original.pp && best.vpp == original.vpp;
    EXPECT_TRUE(own_split || 126 % (best.pp * best.vpp) == 0) << "pp " << best.pp << " x vpp " << best.vpp;
}

TEST(ConfigSpace, HasTheMoEBackendChoicesAndWritesThemAsTheRecipeSpellsThem) {
    // The Mixtral draft dispatches by all-gather with looped expert GEMMs; the dispatcher and the grouped
    // GEMM are levers of the space (and of the oracle), read back from the recipe value by value.
    const gate::LoadedRecipe recipe =
        gate::load_recipe(example("bench/nemo-mixtral-8x7b-h200-draft.yaml"), gate::default_rules());
    const cluster::Cluster cluster = cluster::load_cluster(example("bench/clusters/p5e-h200-4nodes.yaml"));
    const ConfigSpace space(recipe.document, *recipe.adapter, cluster, gate::default_rules(), default_gate_policy());
    std::map<Field, std::size_t> options;
    for (const auto& d : space.dimensions()) options[d.field] = d.options.size();
    EXPECT_EQ(options[Field::dispatcher], 3u) << "allgather, alltoall (alltoall_seq reads the same), flex";
    EXPECT_EQ(options[Field::moe_grouped_gemm], 2u);
    std::mt19937_64 rng(7);
    for (int i = 0; i < 60; ++i) {
        const Point p = space.random_point(rng);
        EXPECT_EQ(space.point_of(space.edits(p)), p) << space.describe(p);
    }
    sim::Layout flex = space.inputs().layout;
    flex.dispatcher = sim::Dispatcher::flex;
    EXPECT_EQ(space.changes(flex).at("model.moe_token_dispatcher_type").to_string(), "flex");
}

TEST(ConfigSpace, ItsLayoutIsWhatTheSimulatorReadsFromTheEditedRecipe) {
    // The grid prunes by space.estimate(); the campaign's preflight reads the written recipe. They must
    // agree.
    for (const std::string recipe : {"nemo-llama3-8b-h100.yaml", "nemo-llama3-70b-h100.yaml",
                                     "nemo-mixtral-8x7b-h100.yaml", "hyperpod-llama3-8b-h100.yaml"}) {
        const auto l = load(recipe);
        const ConfigSpace space(l.recipe.document, *l.recipe.adapter, l.cluster, gate::default_rules(), default_gate_policy());
        std::mt19937_64 rng(1);
        int compared = 0;
        for (int i = 0; i < 3000 && compared < 30; ++i) {
            const Point p = space.random_point(rng);
            if (!space.admissible(p)) continue;
            ++compared;
            const auto in = sim::from_recipe(l.recipe.document.with_edits(edit_list(space.edits(p))),
                                             *l.recipe.adapter, l.cluster);
            const auto a = space.estimate(p);
            const auto b = sim::estimate(in.hardware, in.model, in.layout);
            EXPECT_EQ(a.fits, b.fits) << recipe << ": " << space.describe(p);
            EXPECT_NEAR(a.memory_gib.total, b.memory_gib.total, 1e-6) << recipe << ": " << space.describe(p);
            EXPECT_NEAR(a.step_time_s, b.step_time_s, 1e-9) << recipe << ": " << space.describe(p);
        }
        EXPECT_GT(compared, 10) << recipe;
    }
}

TEST(ConfigSpace, PairsTpWithTheLargestExpertTpTheGridAllowsAndWritesItOutBelowTp) {
    // MiniMax-M2 at tp 2 x ep 16 on 32 B200, expert tp following tp (a generated row): pp 2 keeps the grid
    // (ep x etp x pp) inside the GPUs only with expert tp 1, which the recipe must then say.
    const std::string generated = std::string(ATTUNE_FIXTURES) + "/tune/generated/";
    const auto loaded = gate::load_recipe(generated + "nemo-minimax-m2-b200-draft.yaml", gate::default_rules());
    const auto cluster = cluster::load_cluster(generated + "b200-4nodes.yaml");
    const ConfigSpace space(loaded.document, *loaded.adapter, cluster, gate::default_rules(), default_gate_policy());
    ASSERT_TRUE(space.etp_follows_tp() && space.etp_below_tp());
    const auto with = [&](int tp, int pp) {
        Point p = *space.original_point();
        for (std::size_t d = 0; d < space.dimensions().size(); ++d) {
            const auto& dim = space.dimensions()[d];
            const int want = dim.field == Field::tp ? tp : dim.field == Field::pp ? pp : dim.options[p[d]];
            p[d] = std::size_t(std::find(dim.options.begin(), dim.options.end(), want) - dim.options.begin());
        }
        return p;
    };
    const std::string etp_key = "model.expert_tensor_parallel_size";
    for (const auto& [tp, pp, etp] : {std::tuple{2, 1, 2}, std::tuple{2, 2, 1}, std::tuple{1, 2, 1}}) {
        const Point p = with(tp, pp);
        EXPECT_TRUE(space.consistent(p)) << space.describe(p);
        EXPECT_EQ(space.layout(p).etp, etp) << space.describe(p);
        const auto edits = space.edits(p);
        ASSERT_TRUE(edits.contains(etp_key));
        EXPECT_EQ(edits.at(etp_key).is_null(), etp == tp) << space.describe(p) << ": written out only below tp";
        const auto read = sim::from_recipe(loaded.document.with_edits(edit_list(edits)), *loaded.adapter, cluster);
        EXPECT_EQ(read.layout.etp, etp) << space.describe(p) << ": the written recipe says the same";
    }
}

struct Outcome {
    campaign::CampaignRecord record;
    campaign::Context context;
};

Outcome campaign_of(const TempDir& dir, const std::string& policy, const std::string& recipe,
                    double budget_gpuh, bool preflight_verdicts = true) {
    campaign::Settings settings;
    settings.recipe = example("recipes/" + recipe);
    settings.budget_gpu_s = budget_gpuh * 3600;
    settings.policy = policy;
    settings.seed = 3;
    settings.preflight_verdicts = preflight_verdicts;
    settings.max_levers = campaign::policy_max_levers(policy);
    auto opened = campaign::create(dir.path() / policy, settings);
    campaign::PolicyOptions options;
    options.name = policy, options.seed = 3;
    auto p = campaign::make_policy(options, opened.context);
    auto backend = campaign::make_backend(opened.context);
    const std::atomic<bool> interrupted{false};
    auto record = campaign::run(opened.context, opened.journal, *p, *backend, {}, interrupted);
    return {std::move(record), std::move(opened.context)};
}

void expect_sound(const Outcome& o, const std::string& policy) {
    const auto& r = o.record;
    ASSERT_TRUE(r.end.has_value());
    EXPECT_LE(r.spent_gpu_s, r.budget_gpu_s() + 1e-6) << policy;
    int candidates = 0;
    const ConfigSpace space(o.context.original, *o.context.adapter, o.context.cluster, *o.context.rules, o.context.gate_policy);
    for (const auto& t : r.trials) {
        if (t.view.kind != "candidate") continue;
        ++candidates;
        EXPECT_EQ(t.stage == campaign::Stage::refused, false)
            << policy << " trial " << t.view.n << ": " << t.refusal;
        const auto point = space.point_of(t.view.edits);
        ASSERT_TRUE(point.has_value()) << policy << " trial " << t.view.n << " is outside the lever space";
        EXPECT_TRUE(space.consistent(*point)) << space.describe(*point);
    }
    EXPECT_GE(candidates, 3) << policy;
    ASSERT_TRUE(r.best().view.measured.has_value());
    EXPECT_EQ(r.best().view.measured->status, "ok");
}

TEST(BaselinePolicies, RandomLaunchesWholeValidConfigurationsWithoutAPreflightWithinBudget) {
    const TempDir dir;
    const auto o = campaign_of(dir, "random", "nemo-llama3-8b-h100.yaml", 40, /*preflight_verdicts=*/false);
    expect_sound(o, "random");
    EXPECT_EQ(o.record.start["preflight_verdicts"], false);
    int changed_levers_max = 0;
    for (const auto& t : o.record.trials) {
        EXPECT_TRUE(t.stage != campaign::Stage::predicted || t.view.outcome == "over-budget")
            << "random search has no preflight by default";
        if (t.verdict.contains("levers"))
            changed_levers_max = std::max(changed_levers_max, int(t.verdict["levers"].size()));
    }
    EXPECT_GE(changed_levers_max, 2) << "random search changes many levers at once";
}

TEST(BaselinePolicies, BayesLaunchesValidConfigurationsWithinBudget) {
    const TempDir dir;
    expect_sound(campaign_of(dir, "bayes", "nemo-llama3-8b-h100.yaml", 40), "bayes");
}

TEST(BaselinePolicies, GridRunsItsConfigurationsInAscendingOrderWithinBudget) {
    const TempDir dir;
    const auto o = campaign_of(dir, "grid", "nemo-llama3-8b-h100.yaml", 40);
    expect_sound(o, "grid");
    const ConfigSpace space(o.context.original, *o.context.adapter, o.context.cluster, *o.context.rules, o.context.gate_policy);
    std::vector<int> tps;
    for (const auto& t : o.record.trials) {
        if (t.view.kind != "candidate") continue;
        EXPECT_TRUE(t.stage != campaign::Stage::predicted || t.view.outcome == "over-budget")
            << "the grid is pruned by the same memory estimate";
        if (t.stage == campaign::Stage::predicted) continue;
        tps.push_back(*option_of(space, *space.point_of(t.view.edits), Field::tp));
    }
    EXPECT_TRUE(std::is_sorted(tps.begin(), tps.end()));
}

TEST(BaselinePolicies, RandomKeepsHyperPodsPerRankBatchConsistentSoTheGateRefusesNothing) {
    const TempDir dir;
    expect_sound(campaign_of(dir, "random", "hyperpod-llama3-8b-h100.yaml", 30, false), "random");
}

TEST(BaselinePolicies, ProposeTheSameAfterAResumeForTheSameHistory) {
    const TempDir dir;
    const auto o = campaign_of(dir, "bayes", "nemo-llama3-8b-h100.yaml", 25);
    CampaignState state;
    state.original = &o.context.original, state.adapter = o.context.adapter,
    state.cluster = &o.context.cluster, state.rules = o.context.rules, state.gate_policy = &o.context.gate_policy;
    for (const auto& t : o.record.trials) state.history.push_back(t.view);
    for (const std::string name : {"random", "bayes", "grid"}) {
        campaign::PolicyOptions options;
        options.name = name, options.seed = 9;
        const auto a = campaign::make_policy(options, o.context)->propose(state);
        const auto b = campaign::make_policy(options, o.context)->propose(state);
        ASSERT_TRUE(std::holds_alternative<Proposal>(a)) << name;
        EXPECT_EQ(edits_to_json(std::get<Proposal>(a).edits), edits_to_json(std::get<Proposal>(b).edits))
            << name;
    }
}

}  // namespace
}  // namespace attune::policy
