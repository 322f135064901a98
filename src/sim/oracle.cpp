#include <attune/sim/oracle.hpp>

#include <functional>

namespace attune::sim {
namespace {

// Visits every value of `values` (or only the current one when empty), then continues with `next`.
template <typename T, typename Field>
void each(const std::vector<T>& values, Layout& layout, Field field, const std::function<void()>& next) {
    if (values.empty()) return next();
    const auto saved = layout.*field;
    for (const T& value : values) {
        layout.*field = value;
        next();
    }
    layout.*field = saved;
}

}  // namespace

OracleResult run_oracle(const World& world, const Hardware& hw, const ModelShape& model, const Layout& base,
                        const LeverSpace& space, const Admission& admit) {
    OracleResult result;
    const Estimate baseline = world.measure(hw, model, base, 0, 0, false);
    if (baseline.valid && baseline.fits) result.baseline_tokens_per_s_per_gpu = baseline.tokens_per_s_per_gpu;
    result.best = base;
    result.best_tokens_per_s_per_gpu = result.baseline_tokens_per_s_per_gpu;
    Layout l = base;
    l.dp = 0;   // derived from the world shape for each candidate
    const std::function<void()> evaluate = [&] {
        ++result.evaluated;
        // A recipe edit to an interleaved schedule must split each stage evenly (the estimator
        // accepts uneven splits because published layouts use them with explicit stage sizes).
        const bool edited_split = l.pp != base.pp || l.vpp != base.vpp;
        if (l.vpp > 1 && (l.pp == 1 || (edited_split && model.layers % (l.pp * l.vpp) != 0))) return;
        l.sequence_parallel = l.tp > 1 && base.sequence_parallel;
        if (space.etp_follows_tp) l.etp = space.etp_below_tp ? etp_following_tp(l) : l.tp;
        const Estimate e = world.measure(hw, model, l, 0, 0, false);
        if (!e.valid || !e.fits) return;
        ++result.feasible;
        // The gate is checked only for a new best: it costs about a millisecond.
        if (e.tokens_per_s_per_gpu > result.best_tokens_per_s_per_gpu && (!admit || admit(l))) {
            result.best_tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
            result.best = l;
        }
    };
    // Nested in order of the levers; the innermost visits evaluate.
    const std::function<void()> l14 = [&] {
        if (space.distributed_optimizer.empty() || l.sharding == Sharding::fsdp) return evaluate();
        const auto saved = l.sharding;
        for (const bool on : space.distributed_optimizer) {
            l.sharding = on ? Sharding::distributed_optimizer : Sharding::none;
            evaluate();
        }
        l.sharding = saved;
    };
    const std::function<void()> l13 = [&] { each(space.moe_grouped_gemm, l, &Layout::moe_grouped_gemm, l14); };
    const std::function<void()> l12 = [&] { each(space.overlap_param_gather, l, &Layout::overlap_param_gather, l13); };
    const std::function<void()> l11 = [&] { each(space.overlap_grad_reduce, l, &Layout::overlap_grad_reduce, l12); };
    const std::function<void()> l10 = [&] { each(space.tp_comm_overlap, l, &Layout::tp_comm_overlap, l11); };
    const std::function<void()> l9 = [&] { each(space.cuda_graphs, l, &Layout::cuda_graphs, l10); };
    const std::function<void()> l8 = [&] { each(space.dispatcher, l, &Layout::dispatcher, l9); };
    const std::function<void()> l7 = [&] { each(space.precision, l, &Layout::precision, l8); };
    const std::function<void()> l6 = [&] { each(space.recompute, l, &Layout::recompute, l7); };
    const std::function<void()> l5 = [&] { each(space.mbs, l, &Layout::mbs, l6); };
    const std::function<void()> l4 = [&] { each(space.ep, l, &Layout::ep, l5); };
    const std::function<void()> l3 = [&] { each(space.cp, l, &Layout::cp, l4); };
    const std::function<void()> l2 = [&] { each(space.vpp, l, &Layout::vpp, l3); };
    const std::function<void()> l1 = [&] { each(space.pp, l, &Layout::pp, l2); };
    each(space.tp, l, &Layout::tp, l1);
    return result;
}

}  // namespace attune::sim
