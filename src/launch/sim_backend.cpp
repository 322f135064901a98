#include <attune/core/error.hpp>
#include <attune/launch/backend.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/util/files.hpp>

#include <fmt/format.h>

#include <sstream>

namespace attune::launch {

namespace {

class SimBackend final : public Backend {
public:
    SimBackend(cluster::Cluster cluster, std::uint64_t world_seed) : m_cluster(std::move(cluster)), m_world(world_seed) {}

    std::string name() const override { return "sim"; }

    Submission submit(const gate::GatedTrial&, const TrialPlan& plan) override {
        return {fmt::format("sim-{}.{}", plan.trial, plan.attempt)};
    }

    // The world is a pure function of its seed and the run id, so waiting on a job submitted
    // before a crash runs it again and sees exactly what it would have seen.
    Outcome wait(const gate::GatedTrial& trial, const TrialPlan& plan, const Submission&) override {
        const sim::SimInputs in = sim::from_recipe(trial.recipe(), trial.adapter(), m_cluster);
        sim::TrainRun run;
        run.steps = plan.steps, run.run_id = plan.run_id, run.dialect = in.dialect;
        run.startup_s = k_sim_startup_s, run.time_limit_s = plan.time_limit_s;
        run.early_stop_min_steps = plan.early_stop_min_steps;
        std::ostringstream log;
        const sim::TrainResult result = sim::train(m_world, in.hardware, in.model, in.layout, in.objective, run, log);
        const auto log_file = plan.dir / fmt::format("attempt-{}.log", plan.attempt);
        util::write_file_atomically(log_file, log.str());
        Outcome outcome;
        outcome.logs = {log_file};
        outcome.exit_code = result.exit_code;
        outcome.state = result.exit_code == 0 ? "COMPLETED" : (plan.time_limit_s > 0 && result.elapsed_s >= plan.time_limit_s ? "TIMEOUT" : "FAILED");
        outcome.elapsed_s = result.elapsed_s;
        outcome.gpus = in.layout.nodes * in.layout.gpus_per_node;
        outcome.gpu_seconds = outcome.elapsed_s * outcome.gpus;
        outcome.charged_from = "simulated clock";
        return outcome;
    }

    void cancel(const Submission&) override {}

private:
    cluster::Cluster m_cluster;
    sim::World m_world;
};

}  // namespace

std::optional<double> fixed_startup_s(std::string_view backend) {
    if (backend == "sim") return k_sim_startup_s;
    return std::nullopt;
}

std::unique_ptr<Backend> make_sim_backend(const cluster::Cluster& cluster, std::uint64_t world_seed) {
    return std::make_unique<SimBackend>(cluster, world_seed);
}

}  // namespace attune::launch
