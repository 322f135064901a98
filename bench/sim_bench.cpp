// Prints how many nominal estimates per second one core computes, over a sweep of layouts.
#include <attune/model/catalogue.hpp>
#include <attune/sim/model.hpp>
#include <attune/sim/oracle.hpp>

#include <chrono>
#include <cstdio>

int main() {
    using namespace attune::sim;
    const Hardware hw = *find_hardware("h100");
    ModelShape shape = attune::model::Catalogue::shipped().find("llama3_70b")->shape;
    shape.seq_len = 8192;
    constexpr int k_tps[] = {1, 2, 4, 8};
    constexpr int k_pps[] = {1, 2, 4, 8};
    constexpr int k_mbs[] = {1, 2, 4};
    double checksum = 0;
    long count = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int round = 0; round < 5000; ++round) {
        for (int tp : k_tps) for (int pp : k_pps) for (int mbs : k_mbs) {
            Layout l;
            l.nodes = 8, l.tp = tp, l.pp = pp, l.mbs = mbs, l.gbs = 512, l.sequence_parallel = tp > 1;
            l.recompute = round % 2 ? Recompute::full : Recompute::none;
            checksum += estimate(hw, shape, l).tokens_per_s_per_gpu;
            ++count;
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%ld estimates in %.3f s: %.0f estimates/s, %.2f us each (checksum %.0f)\n", count, seconds,
                count / seconds, 1e6 * seconds / count, checksum);

    // An oracle sweep of the size the issue names (about 100,000 configurations).
    Layout base;
    base.nodes = 8, base.tp = 8, base.pp = 8, base.gbs = 512, base.sequence_parallel = true;
    LeverSpace space;
    space.tp = {1, 2, 4, 8}, space.pp = {1, 2, 4, 8, 16}, space.vpp = {1, 2, 4, 5}, space.cp = {1, 2, 4};
    space.mbs = {1, 2, 4, 8}, space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
    space.precision = {Precision::bf16, Precision::fp8}, space.cuda_graphs = {false, true};
    space.tp_comm_overlap = {false, true}, space.overlap_grad_reduce = {false, true};
    const auto oracle_start = std::chrono::steady_clock::now();
    const auto result = run_oracle(World{}, hw, shape, base, space);
    const double oracle_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - oracle_start).count();
    std::printf("oracle: %ld configurations, %ld feasible, in %.3f s (best %.0f tokens/s/GPU)\n", result.evaluated,
                result.feasible, oracle_s, result.best_tokens_per_s_per_gpu);
    return 0;
}
