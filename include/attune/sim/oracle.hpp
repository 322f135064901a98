#pragma once
// The oracle: the best configuration reachable with allowed performance levers, measured in the
// world without noise. It is the ceiling a tuner is compared against.

#include <attune/sim/world.hpp>

#include <functional>
#include <vector>

namespace attune::sim {

/// The values each lever may take (from the adapter's domains). An empty list keeps the base value.
struct LeverSpace {
    std::vector<int> tp, pp, vpp, cp, ep, mbs;
    std::vector<Recompute> recompute;
    std::vector<Precision> precision;
    std::vector<Dispatcher> dispatcher;
    std::vector<bool> cuda_graphs, tp_comm_overlap, overlap_grad_reduce, overlap_param_gather, moe_grouped_gemm;
    std::vector<bool> distributed_optimizer;   ///< where the family turns it on or off with a key of its own
    bool etp_follows_tp = false;  ///< the recipe leaves expert tp to default to tp: it moves with tp
    bool etp_below_tp = false;    ///< with etp_follows_tp: the recipe can write etp below tp (etp_following_tp)
};

/// Whether a layout is a recipe the gate allows (the objective invariants the simulator does not see).
using Admission = std::function<bool(const Layout&)>;

/// What the oracle found.
struct OracleResult {
    double baseline_tokens_per_s_per_gpu = 0;   ///< the base layout's throughput (0 when it does not run)
    double best_tokens_per_s_per_gpu = 0;
    Layout best;
    long feasible = 0;                          ///< valid layouts that fit in memory
    long evaluated = 0;                         ///< every combination visited, pruned or not
};

/// Enumerates the cartesian product of `space` around `base` (gbs, world shape and the model fixed),
/// pruning inconsistent layouts before estimating and those that do not fit after. A layout faster than
/// the best so far counts only when `admit` (when given) allows it.
OracleResult run_oracle(const World& world, const Hardware& hw, const ModelShape& model, const Layout& base,
                        const LeverSpace& space, const Admission& admit = {});

}  // namespace attune::sim
