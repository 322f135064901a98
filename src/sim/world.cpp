// The world's hidden factors and the simulated training run's log lines. The log shapes follow
// Megatron-LM's iteration line and memory report (NVIDIA/Megatron-LM megatron/training/training.py),
// NeMo AutoModel's step line (NVIDIA-NeMo/Automodel nemo_automodel/recipes/llm/train_ft.py) and
// PyTorch's OutOfMemoryError / ProcessGroupNCCL watchdog wording, so attune diagnose parses them.

#include <attune/sim/world.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>
#include <thread>

namespace attune::sim {
namespace {

std::uint64_t splitmix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

double to_unit(std::uint64_t x) { return double(x >> 11) * 0x1.0p-53; }

}  // namespace

World::World(std::uint64_t seed) : m_seed(seed) {
    // Hidden per-cluster factors: what a tuner can only learn by measuring.
    m_gemm = 0.90 + 0.15 * uniform(1, 0, 11);
    m_collective = 0.75 + 0.35 * uniform(2, 0, 11);
    m_fragmentation = 1.00 + 0.08 * uniform(3, 0, 11);
    m_straggler = 1.00 + 0.06 * uniform(4, 0, 11);
    m_noise = 0.01 + 0.02 * uniform(5, 0, 11);
}

double World::uniform(std::uint64_t a, std::uint64_t b, std::uint64_t salt) const {
    return to_unit(splitmix(m_seed ^ splitmix(a ^ splitmix(b ^ splitmix(salt)))));
}

constexpr double k_run_jitter = 0.004;

Estimate World::measure(const Hardware& hw, const ModelShape& model, const Layout& layout, std::uint64_t run,
                        std::uint64_t step, bool noisy) const {
    Estimate e = estimate(hw, model, layout);
    if (!e.valid) return e;
    Breakdown& b = e.breakdown_s;
    b.compute /= m_gemm;
    b.pp_bubble /= m_gemm;
    for (double* comm : {&b.tp_comm, &b.dp_comm, &b.cp_comm, &b.ep_comm}) *comm /= m_collective;
    // Stragglers hurt more the more nodes must wait for one another.
    const double straggle = 1.0 + (m_straggler - 1.0) * std::log2(1.0 + layout.nodes) / 4.0;
    // Per step jitter, plus a small per-run offset (node placement, clocks) that repeats can see.
    const double noise = noisy ? (1.0 + m_noise * (2.0 * uniform(run, step, 7) - 1.0)) *
                                     (1.0 + k_run_jitter * (2.0 * uniform(run, 0, 17) - 1.0))
                               : 1.0;
    const double sum = b.compute + b.tp_comm + b.pp_bubble + b.dp_comm + b.cp_comm + b.ep_comm + b.overhead;
    e.step_time_s = sum * straggle * noise;
    const double scale = e.step_time_s > 0 ? estimate(hw, model, layout).step_time_s / e.step_time_s : 1.0;
    e.tokens_per_s_per_gpu *= scale;
    e.tflops_per_gpu *= scale;
    e.mfu *= scale;
    Memory& m = e.memory_gib;
    m.other += (m.activations + m.params) * (m_fragmentation - 1.0);
    m.total = m.params + m.grads + m.optimizer + m.activations + m.other;
    e.fits = m.total <= m.capacity;
    return e;
}

Fault World::fault(std::uint64_t run, std::uint64_t step) const {
    const double draw = uniform(run, step, 13);
    if (draw < 5e-5) return Fault::node_failure;
    if (draw < 2.5e-4) return Fault::nccl_timeout;
    return Fault::none;
}

double loss_at(const ModelShape& model, const Layout& layout, const Objective& objective, double tokens,
               double noise_draw) {
    // A scaling-law-shaped curve: bigger models reach lower loss; too high or too low a learning rate,
    // dropout and dropped MoE tokens slow learning. Batch size sets the gradient noise scale.
    const double params = total_params(model);
    const double floor = 1.7 + 12.0 / std::pow(params / 1e6, 0.3);
    const double lr_quality = std::exp(-std::pow(std::log10(objective.lr / 3e-4), 2.0));
    const double efficiency = lr_quality * (1.0 - 0.5 * objective.dropout) * (objective.moe_token_drop ? 0.97 : 1.0) *
                              (1.0 - 0.05 * std::log2(std::max(1.0, layout.gbs / 1024.0)));
    const double learned = std::pow(1.0 + efficiency * tokens / 2e7, -0.25);
    const double context = 0.05 * std::log2(4096.0 / std::max(512, model.seq_len));
    return floor + context + (11.5 - floor) * learned + 0.01 * (2.0 * noise_draw - 1.0);
}

namespace {

void oom(const Estimate& e, std::ostream& out) {
    const auto& m = e.memory_gib;
    const double allocated = std::min(m.total, m.capacity) - 1.2;
    const double request = std::max(0.25, m.total - m.capacity);
    out << "[rank0]: Traceback (most recent call last):\n"
        << "[rank0]:   File \"pretrain_gpt.py\", line 286, in <module>\n"
        << "[rank0]:     pretrain(\n"
        << fmt::format("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {:.2f} GiB. GPU 0 has a total "
                       "capacity of {:.2f} GiB of which {:.2f} GiB is free. Including non-PyTorch memory, this process has "
                       "{:.2f} GiB memory in use. Of the allocated memory {:.2f} GiB is allocated by PyTorch, and {:.2f} GiB "
                       "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
                       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                       "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n",
                       request, m.capacity, 0.3, m.capacity - 0.3, allocated, 0.9);
}

void watchdog(std::uint64_t seq, std::ostream& out) {
    out << fmt::format("[rank0]:[E0510 02:46:46.898611589 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
                       "operation timeout: WorkNCCL(SeqNum={}, OpType=_REDUCE_SCATTER_BASE, NumelIn=1511145472, "
                       "NumelOut=1511145472, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n", seq)
        << fmt::format("[rank0]:[E0510 02:46:46.898611800 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 0] Exception (either an "
                       "error or timeout) detected by watchdog at work: {}, last enqueued NCCL work: {}, last completed "
                       "NCCL work: {}.\n", seq, seq + 1, seq - 1);
}

void megatron_line(int step, int steps, const Layout& l, const Estimate& e, double lr, double loss, std::ostream& out) {
    out << fmt::format(" [2025-03-11 17:04:50] iteration {:>8}/{:>8} | consumed samples: {:>12} | elapsed time per "
                       "iteration (ms): {:.1f} | throughput per GPU (TFLOP/s/GPU): {:.1f} | learning rate: {:E} | global "
                       "batch size: {:>5} | lm loss: {:E} | loss scale: 1.0 | grad norm: {:.3f} | number of skipped "
                       "iterations:   0 | number of nan iterations:   0 |\n",
                       step, steps, std::int64_t(step) * l.gbs, 1000 * e.step_time_s, e.tflops_per_gpu, lr, l.gbs, loss,
                       0.9 + 0.2 / std::sqrt(double(step)));
}

/// Megatron's report after the first iteration: what the allocator saw, in MB.
void memory_report(const Estimate& e, std::ostream& out) {
    const double allocated_mib = 1024 * std::min(e.memory_gib.total, e.memory_gib.capacity);
    out << fmt::format("[Rank 0] (after 1 iterations) memory (MB) | allocated: {:.1f} | max allocated: {:.1f} | "
                       "reserved: {:.1f} | max reserved: {:.1f}\n",
                       0.6 * allocated_mib, allocated_mib, 1.04 * allocated_mib, 1.04 * allocated_mib);
}

void automodel_line(int step, const Layout& l, const ModelShape& m, const Estimate& e, double lr, double loss,
                    std::ostream& out) {
    const double tps = e.tokens_per_s_per_gpu * l.nodes * l.gpus_per_node;
    out << fmt::format("2026-03-04 11:03:38 | INFO | root | step {} | epoch 0 | loss {:.4f} | grad_norm {:.4f} | lr {:.2e} | "
                       "mem {:.2f} GiB | tps {:.2f}({:.2f}/gpu) | num_label_tokens {}\n",
                       step, loss, 0.9 + 0.2 / std::sqrt(double(step)), lr, e.memory_gib.total, tps,
                       e.tokens_per_s_per_gpu, std::int64_t(l.gbs) * m.seq_len);
}

/// torchtitan's metrics line (train.py's logger), as rank 0 prints it under torchrun.
void torchtitan_line(int step, const Estimate& e, double loss, std::ostream& out) {
    out << fmt::format("[rank0]:[titan] 2026-01-27 08:25:12,011 - root - INFO - step: {:>2}  loss: {:7.4f}  grad_norm: {:7.4f}  "
                       "memory: {:.2f}GiB({:.2f}%)  tps: {:.0f}  tflops: {:.2f}  mfu: {:.2f}%\n",
                       step, loss, 0.9 + 0.2 / std::sqrt(double(step)), e.memory_gib.total,
                       100 * e.memory_gib.total / e.memory_gib.capacity, e.tokens_per_s_per_gpu, e.tflops_per_gpu, 100 * e.mfu);
}

}  // namespace

double median_standard_error(std::vector<double> times) {
    if (times.size() < 2) return 1.0;
    const auto median_of = [](std::vector<double>& v) {
        std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
        return v[v.size() / 2];
    };
    const double median = median_of(times);
    for (double& t : times) t = std::fabs(t - median);
    const double mad = median_of(times);
    return median > 0 ? 1.858 * mad / median / std::sqrt(double(times.size())) : 1.0;
}

TrainResult train(const World& world, const Hardware& hw, const ModelShape& model, const Layout& layout,
                  const Objective& objective, const TrainRun& run, std::ostream& out) {
    TrainResult result{.exit_code = 1, .steps_done = 0, .elapsed_s = run.startup_s};
    const Estimate first = world.measure(hw, model, layout, run.run_id, 0);
    if (!first.valid) {
        out << "AssertionError: " << first.problem << "\n";
        return result;
    }
    if (!first.fits) {
        oom(first, out);
        return result;
    }
    std::vector<double> timed;
    for (int step = 1; step <= run.steps; ++step) {
        const Estimate e = world.measure(hw, model, layout, run.run_id, std::uint64_t(step));
        if (run.time_limit_s > 0 && result.elapsed_s + e.step_time_s > run.time_limit_s) {
            result.elapsed_s = run.time_limit_s;
            out << "slurmstepd: error: *** STEP 4242.0 ON sim-node-1 CANCELLED AT 2025-03-11T18:00:00 DUE TO TIME LIMIT ***\n";
            return result;
        }
        result.elapsed_s += e.step_time_s;
        if (const Fault fault = world.fault(run.run_id, std::uint64_t(step)); fault != Fault::none) {
            if (fault == Fault::nccl_timeout) watchdog(std::uint64_t(step) * 97, out);
            else out << "srun: error: Node failure on sim-node-1\nsrun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n";
            return result;
        }
        if (run.time_scale > 0) std::this_thread::sleep_for(std::chrono::duration<double>(e.step_time_s * run.time_scale));
        const double lr = objective.lr * std::min(1.0, double(step) / std::max(1, objective.warmup_steps));
        const double tokens = double(step) * layout.gbs * model.seq_len;
        const double loss = loss_at(model, layout, objective, tokens,
                                    to_unit(splitmix(run.run_id * 1000003ULL + std::uint64_t(step))));
        if (run.dialect == Dialect::megatron) megatron_line(step, run.steps, layout, e, lr, loss, out);
        else if (run.dialect == Dialect::torchtitan) torchtitan_line(step, e, loss, out);
        else automodel_line(step, layout, model, e, lr, loss, out);
        if (step == 1 && run.dialect == Dialect::megatron) memory_report(e, out);
        result.steps_done = step;
        if (step > 1) timed.push_back(e.step_time_s);
        if (run.early_stop_min_steps > 0 && int(timed.size()) >= run.early_stop_min_steps && step < run.steps &&
            median_standard_error(timed) <= run.stable_standard_error) {
            out << fmt::format("attune-sim: throughput stable after {} steps; stopping the trial early\n", step);
            break;
        }
    }
    result.exit_code = 0;
    return result;
}

}  // namespace attune::sim
