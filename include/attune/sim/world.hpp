#pragma once
// The "world": the nominal model perturbed by hidden, seeded per-cluster factors, run-to-run noise
// and rare faults. Backends measure in it; preflight and policies only ever see `estimate()`.

#include <attune/sim/model.hpp>

#include <cstdint>
#include <iosfwd>
#include <vector>

namespace attune::sim {

/// The default world seed, fixed so that demos are reproducible.
inline constexpr std::uint64_t k_default_world_seed = 20240611;

/// What kind of failure, if any, a step of a run meets.
enum class Fault { none, nccl_timeout, node_failure };

class World {
public:
    /// A world drawn from `seed`: GEMM and collective efficiency, fragmentation, straggler factors.
    explicit World(std::uint64_t seed = k_default_world_seed);

    /// The measurement of `layout` in this world at `run`'s `step`, with 1-3 % noise (no noise when `noisy` is off).
    Estimate measure(const Hardware& hw, const ModelShape& model, const Layout& layout, std::uint64_t run,
                     std::uint64_t step, bool noisy = true) const;

    /// The fault drawn for `run` at `step` (rare: about 2e-4 per step for NCCL, 5e-5 for a node).
    Fault fault(std::uint64_t run, std::uint64_t step) const;

private:
    double uniform(std::uint64_t a, std::uint64_t b, std::uint64_t salt) const;
    std::uint64_t m_seed;
    double m_gemm, m_collective, m_fragmentation, m_straggler, m_noise;
};

/// The training objective that shapes the loss curve (not throughput).
struct Objective {
    double lr = 3e-4;
    int warmup_steps = 100;
    double dropout = 0.0;
    bool moe_token_drop = false;
};

/// How a simulated run prints itself.
enum class Dialect { megatron, automodel, torchtitan };

/// Options of one simulated training run.
struct TrainRun {
    int steps = 20;
    std::uint64_t run_id = 0;         ///< distinguishes runs of the same configuration (noise, faults)
    double time_scale = 0;            ///< seconds slept per simulated second; 0 never sleeps
    Dialect dialect = Dialect::megatron;
    double startup_s = 0;             ///< simulated job start-up (container, NCCL init, model build)
    double time_limit_s = 0;          ///< the job is killed, as Slurm would, past this; 0 means none
    /// Early stop: after this many timed steps (the first is warm-up), stop once the median step
    /// time's standard error is below `stable_standard_error`. 0 runs every step.
    int early_stop_min_steps = 0;
    double stable_standard_error = 0.004;
};

/// The relative standard error of the median of `times` (1.2533 x 1.4826 x MAD / sqrt(n)).
double median_standard_error(std::vector<double> times);

/// How a simulated run ended, in simulated time.
struct TrainResult {
    int exit_code = 0;                ///< 0, or 1 after an OOM, a fault or the time limit
    int steps_done = 0;
    double elapsed_s = 0;             ///< start-up plus the steps run
};

/// Loss after `tokens` tokens: a deterministic function of the objective plus small seeded noise.
double loss_at(const ModelShape& model, const Layout& layout, const Objective& objective, double tokens,
               double noise_draw);

/// Runs `layout` in `world`, printing the framework's log lines to `out` (a Megatron-style memory
/// report after the first step), and what the run cost in simulated time.
TrainResult train(const World& world, const Hardware& hw, const ModelShape& model, const Layout& layout,
          const Objective& objective, const TrainRun& run, std::ostream& out);

}  // namespace attune::sim
