// `attune sim estimate|train|oracle`: the simulated cluster on a recipe (docs/simulator.md).
#include <attune/cli/command.hpp>
#include <attune/cli/validators.hpp>
#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/policy.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/sim/from_recipe.hpp>

#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <iostream>

namespace attune::cli {
namespace {

struct SimOptions {
    std::string recipe;
    std::string cluster_file;
    std::string model_config;
    bool json = false;
    int steps = 20;
    std::uint64_t world_seed = sim::k_default_world_seed;
    double time_scale = 0;
    std::string gate_policy_file;
};

gate::LoadedRecipe load(const SimOptions& options) {
    return gate::load_recipe(options.recipe, gate::default_rules(), {},
                             options.model_config.empty() ? std::nullopt : std::optional<std::filesystem::path>(options.model_config));
}

sim::SimInputs load_inputs(const SimOptions& options) {
    const auto cluster = options.cluster_file.empty() ? cluster::default_cluster() : cluster::load_cluster(options.cluster_file);
    const auto loaded = load(options);
    return sim::from_recipe(loaded.document, *loaded.adapter, cluster);
}

int execute_estimate(const SimOptions& options) {
    const auto in = load_inputs(options);
    const auto e = sim::estimate(in.hardware, in.model, in.layout);
    if (!e.valid) throw InputError(fmt::format("{}: inconsistent layout: {}", options.recipe, e.problem));
    const auto& m = e.memory_gib;
    const auto& b = e.breakdown_s;
    if (options.json) {
        const nlohmann::json out{
            {"fits", e.fits},
            {"memory_gib", {{"params", m.params}, {"grads", m.grads}, {"optimizer", m.optimizer}, {"activations", m.activations},
                            {"other", m.other}, {"total", m.total}, {"capacity", m.capacity}}},
            {"step_time_s", e.step_time_s},
            {"breakdown_s", {{"compute", b.compute}, {"tp_comm", b.tp_comm}, {"pp_bubble", b.pp_bubble}, {"dp_comm", b.dp_comm},
                             {"cp_comm", b.cp_comm}, {"ep_comm", b.ep_comm}, {"overhead", b.overhead}}},
            {"tokens_per_s_per_gpu", e.tokens_per_s_per_gpu},
            {"tflops_per_gpu", e.tflops_per_gpu},
            {"mfu", e.mfu}};
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    fmt::print("fits: {}\nmemory (GiB): params {:.1f}, grads {:.1f}, optimizer {:.1f}, activations {:.1f}, other {:.1f}, "
               "total {:.1f} of {:.1f}\nstep time: {:.3f} s (compute {:.3f}, tp comm {:.3f}, pp bubble {:.3f}, dp comm {:.3f}, "
               "cp comm {:.3f}, ep comm {:.3f}, overhead {:.3f})\ntokens/s/GPU: {:.0f}\nTFLOP/s/GPU: {:.0f}\nMFU: {:.1f}%\n",
               e.fits ? "yes" : "NO (out of memory)", m.params, m.grads, m.optimizer, m.activations, m.other, m.total,
               m.capacity, e.step_time_s, b.compute, b.tp_comm, b.pp_bubble, b.dp_comm, b.cp_comm, b.ep_comm, b.overhead,
               e.tokens_per_s_per_gpu, e.tflops_per_gpu, 100 * e.mfu);
    return 0;
}

int execute_train(const SimOptions& options) {
    const auto in = load_inputs(options);
    sim::TrainRun run;
    run.steps = options.steps, run.time_scale = options.time_scale, run.dialect = in.dialect;
    return sim::train(sim::World{options.world_seed}, in.hardware, in.model, in.layout, in.objective, run, std::cout).exit_code;
}

int execute_oracle(const SimOptions& options) {
    const auto cluster = options.cluster_file.empty() ? cluster::default_cluster() : cluster::load_cluster(options.cluster_file);
    const auto loaded = load(options);
    const auto gate_policy = gate::load_policy(data_dir(), options.gate_policy_file.empty()
                                                               ? std::nullopt
                                                               : std::optional<std::filesystem::path>(options.gate_policy_file));
    const policy::ConfigSpace space(loaded.document, *loaded.adapter, cluster, gate::default_rules(), gate_policy);
    const auto result = policy::run_gated_oracle(space, sim::World{options.world_seed});
    const auto edits = space.changes(result.best);
    if (options.json) {
        nlohmann::json edit_json = nlohmann::json::object();
        for (const auto& [key, value] : edits) edit_json[key] = value.to_string();
        const nlohmann::json out{{"baseline", {{"tokens_per_s_per_gpu", result.baseline_tokens_per_s_per_gpu}}},
                                 {"best", {{"tokens_per_s_per_gpu", result.best_tokens_per_s_per_gpu}, {"edits", edit_json}}},
                                 {"feasible", result.feasible},
                                 {"evaluated", result.evaluated}};
        std::cout << out.dump(2) << "\n";
        return 0;
    }
    fmt::print("baseline: {:.0f} tokens/s/GPU\nbest:     {:.0f} tokens/s/GPU\n", result.baseline_tokens_per_s_per_gpu,
               result.best_tokens_per_s_per_gpu);
    for (const auto& [key, value] : edits) fmt::print("  {}: {}\n", key, value.to_string());
    fmt::print("feasible: {} of {} evaluated\n", result.feasible, result.evaluated);
    return 0;
}

void common(CLI::App* command, SimOptions& options) {
    command->add_option("RECIPE", options.recipe, "Recipe file")->required();
    command->add_option("--cluster", options.cluster_file, "Cluster file (default: 8 x 8 H100)");
    command->add_option("--model-config", options.model_config,
                        "Hugging Face config.json of the model the recipe trains, where the recipe does not name a known one");
}

const Registration k_registration{60, [](CLI::App& app, Action& chosen) {
    auto* sim = app.add_subcommand("sim", "The simulated cluster: estimate, train, oracle");
    sim->require_subcommand(1);
    auto options = std::make_shared<SimOptions>();
    auto* estimate = sim->add_subcommand("estimate", "Nominal memory, step time and throughput of a recipe");
    common(estimate, *options);
    estimate->add_flag("--json", options->json, "Print one JSON document");
    estimate->callback([options, &chosen] { chosen = [options] { return execute_estimate(*options); }; });
    auto* train = sim->add_subcommand("train", "Run the recipe in the simulated world, printing its framework's logs");
    common(train, *options);
    train->add_option("--steps", options->steps, "Training steps")->check(positive_number());
    train->add_option("--world-seed", options->world_seed, "Which world (hidden cluster factors)");
    train->add_option("--time-scale", options->time_scale, "Seconds slept per simulated second (0: none)");
    train->callback([options, &chosen] { chosen = [options] { return execute_train(*options); }; });
    auto* oracle = sim->add_subcommand("oracle", "Best throughput reachable with gate-allowed performance levers");
    common(oracle, *options);
    oracle->add_flag("--json", options->json, "Print one JSON document");
    oracle->add_option("--world-seed", options->world_seed, "Which world (hidden cluster factors)");
    oracle->add_option("--gate-policy", options->gate_policy_file, "Gate policy the search space obeys (as tune's)");
    oracle->callback([options, &chosen] { chosen = [options] { return execute_oracle(*options); }; });
}};

}  // namespace
}  // namespace attune::cli
