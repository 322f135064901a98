// The nominal analytic model: FLOPs, GEMM efficiency, collectives, bubble and memory.
// Formulas and references, by the marks used below: §1b FLOPs, Megatron-LM megatron/training/training.py
// (num_floating_point_operations); §2 pipeline bubble, Narayanan et al. 2021 (arXiv:2104.04473) §2.2;
// §3 activation memory, Korthikanti et al. 2022 (arXiv:2205.05198) Table 2; §5 communication volumes,
// Megatron-LM and calculon (Isaev et al., SC'23).

#include <attune/sim/model.hpp>

#include <algorithm>
#include <cmath>

namespace attune::sim {
namespace {

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;

int head_dim(const ModelShape& m) { return m.head_dim > 0 ? m.head_dim : m.hidden / std::max(1, m.heads); }
int moe_layers(const ModelShape& m) { return m.experts > 0 ? m.layers - m.dense_layers : 0; }
int dense_mlp_layers(const ModelShape& m) { return m.layers - moe_layers(m); }
double mlp_matrices(const ModelShape& m) { return m.gated_mlp ? 3.0 : 2.0; }
int attention_layers(const ModelShape& m) { return m.attention_layers > 0 ? m.attention_layers : m.layers; }
// The width a routed token has inside the experts and on the wire: LatentMoE (Nemotron 3 Super)
// projects it down once per MoE layer before dispatch and back up after the combine.
double expert_width(const ModelShape& m) { return m.moe_latent > 0 ? m.moe_latent : m.hidden; }

// A Mamba-2 mixer's projections: in_proj to x, z (d_inner each), B, C (groups·state each) and the
// per-head dt; out_proj back to hidden.
double mamba_params(const ModelShape& m) {
    const double inner = double(m.mamba_heads) * m.mamba_head_dim;
    return m.hidden * (2.0 * inner + 2.0 * m.mamba_groups * m.mamba_state + m.mamba_heads) + inner * m.hidden;
}

// The SSD scan (Dao & Gu 2024) per token, forward and backward (3× forward): the state update and
// read-out (2·inner·state each) and the intra-chunk quadratic part (chunk 128, inner wide).
double mamba_scan_flops(const ModelShape& m) {
    const double inner = double(m.mamba_heads) * m.mamba_head_dim;
    return 3.0 * 2.0 * inner * (2.0 * m.mamba_state + 128.0);
}

// HBM bytes per token that one Mamba-2 mixer moves outside its GEMMs, forward and backward (the
// kernels of mamba_ssm / Megatron's MambaMixer, none fused with its neighbours):
// * causal conv1d over x, B and C (d_inner + 2·groups·state wide): read and write forward, read the
//   input and the gradient and write the input gradient backward: 5 passes of bf16;
// * the chunked SSD scan: x and y (d_inner wide) about 8 passes of bf16 over the forward and backward
//   kernels, and the fp32 chunk states (heads·head_dim·state per 128-token chunk) written by
//   chunk_state, read and rewritten by state_passing, read by chunk_scan, and again backward: 8 passes;
// * the gated RMSNorm of y by silu(z): y, z read and the output written forward, y, z and the
//   gradient read and two gradients written backward: 8 passes of bf16.
double mamba_traffic_bytes(const ModelShape& m) {
    const double inner = double(m.mamba_heads) * m.mamba_head_dim;
    const double conv = inner + 2.0 * m.mamba_groups * m.mamba_state;
    const double states = inner * m.mamba_state / 128.0;
    return 5.0 * 2.0 * conv + 8.0 * 2.0 * inner + 8.0 * 4.0 * states + 8.0 * 2.0 * inner;
}

// HBM bytes per token that LoRA adapters move beside the frozen GEMMs they wrap, summed over the
// adapted projections (all: qkv, attention output, MLP in and out, the routed and shared experts',
// the Mamba in/out projections; or the fused QKV only). The rank-r GEMMs are negligible work but each adapter reads its
// input x and writes, scales and adds its output (forward: x once, the output 6 times), and backward
// reads the output gradient twice, scales it, reads x, writes and accumulates the input gradient
// (backward: x 5 times, the output 4 times): 6 passes over the inputs and 10 over the outputs, bf16.
double lora_traffic_bytes(const ModelShape& m, LoraTargets targets) {
    const double h = m.hidden;
    const double q = m.mla ? double(m.heads) * m.v_head_dim : double(m.heads) * head_dim(m);
    const double qkv = m.mla ? m.q_lora_rank + m.kv_lora_rank + double(m.heads) * (m.qk_nope_dim + m.qk_rope_dim)
                             : q + 2.0 * m.kv_heads * head_dim(m);
    const double up = mlp_matrices(m) - 1.0;   // FC1 is 2·ffn wide when gated
    auto adapted = [](double inputs, double outputs) { return 2.0 * (6.0 * inputs + 10.0 * outputs); };
    if (targets == LoraTargets::attention_qkv) return (attention_layers(m) + m.mtp_layers) * adapted(h, qkv);
    double bytes = (attention_layers(m) + m.mtp_layers) * adapted(h + q, qkv + h);
    bytes += dense_mlp_layers(m) * adapted(h + m.ffn, up * m.ffn + h);
    bytes += moe_layers(m) * (m.topk * adapted(expert_width(m) + m.moe_ffn, up * m.moe_ffn + expert_width(m)) +
                              (m.shared_ffn > 0 ? adapted(h + m.shared_ffn, up * m.shared_ffn + h) : 0.0));
    const double inner = double(m.mamba_heads) * m.mamba_head_dim;
    bytes += m.mamba_layers * adapted(h + inner, 2.0 * inner + 2.0 * m.mamba_groups * m.mamba_state + m.mamba_heads + h);
    return bytes;
}

// Parameters of one layer's attention block (§1b; MLA variant for DeepSeek-style models).
double attention_params(const ModelShape& m) {
    const double h = m.hidden;
    if (m.mla) {
        const double n = m.heads;
        return m.q_lora_rank * (h + n * (m.qk_nope_dim + m.qk_rope_dim)) +
               m.kv_lora_rank * (h + n * (m.qk_nope_dim + m.v_head_dim)) + h * m.qk_rope_dim + n * m.v_head_dim * h;
    }
    const double q = double(m.heads) * head_dim(m);
    const double kv = double(m.kv_heads) * head_dim(m);
    return h * (q + 2 * kv) + q * h;
}

// Causal core-attention FLOPs per token per layer, divided by the sequence length.
double core_attention_flops_per_seq(const ModelShape& m) {
    if (m.mla) return 6.0 * (m.heads * (m.qk_nope_dim + m.qk_rope_dim) / 2.0 + m.heads * m.v_head_dim / 2.0);
    return 6.0 * double(m.heads) * head_dim(m);
}

double dense_mlp_params(const ModelShape& m) { return mlp_matrices(m) * m.hidden * double(m.ffn); }
double expert_params(const ModelShape& m) { return mlp_matrices(m) * expert_width(m) * double(m.moe_ffn); }
// The parameters of a MoE block that every token goes through: the shared experts and the latent projections.
double moe_block_dense_params(const ModelShape& m) {
    return mlp_matrices(m) * m.hidden * double(m.shared_ffn) + 2.0 * m.hidden * m.moe_latent;
}

// Parameters each token multiplies through (GEMM work), without embeddings.
double active_gemm_params(const ModelShape& m) {
    return (attention_layers(m) + m.mtp_layers) * attention_params(m) + m.mamba_layers * mamba_params(m) +
           dense_mlp_layers(m) * dense_mlp_params(m) +
           (moe_layers(m) + m.mtp_layers * (m.experts > 0)) * (m.topk * expert_params(m) + moe_block_dense_params(m)) +
           m.mtp_layers * (m.experts > 0 ? 0.0 : dense_mlp_params(m)) + double(m.hidden) * m.vocab * (1 + m.mtp_layers);
}

bool fp8_gemms(const Layout& l) { return l.precision == Precision::fp8 && !l.fp8_rowwise; }

// Sequence parallelism shards along the tp group: at tp 1 the flag changes nothing (Megatron turns it off).
bool sequence_sharded(const Layout& l) { return l.sequence_parallel && l.tp > 1; }

// DTensor's sequence parallelism gathers the inputs of the tp GEMMs and keeps them, whole, for the weight
// gradients; Megatron keeps the sharded ones and gathers them again in the backward.
bool keeps_gathered_inputs(const Layout& l) { return !l.megatron_core && sequence_sharded(l); }

// GEMM efficiency against the dense peak: grows with the per-GPU matrix width and the tokens
// per micro-batch, saturating near what cuBLAS reaches on large Megatron GEMMs.
double gemm_efficiency(double width, double tokens, const Layout& l, const Hardware& hw) {
    // Without Transformer Engine's fused cast/amax kernels, FP8 scaling runs as separate passes.
    const double fp8_peak = l.fusions ? 0.62 : 0.42;
    const double peak = fp8_gemms(l) ? fp8_peak : 0.80;
    const double width_factor = width / (width + 700.0);
    const double token_factor = tokens / (tokens + 600.0);
    // B200's higher peak is harder to feed from the same HBM: small GEMMs lose more.
    const double scale = hw.bf16_tflops > 1500 ? 0.9 : 1.0;
    return peak * width_factor * token_factor * scale;
}

// Ring collective time: bytes · (n−1)/n over the slowest link the group crosses.
double ring_time(double bytes, int group, double bandwidth_gbps, double efficiency) {
    if (group <= 1 || bytes <= 0) return 0;
    return bytes * (group - 1) / group / (bandwidth_gbps * 1e9 * efficiency) + 10e-6;
}

struct Link {
    double gbps;
    double efficiency;
};

// A group of `size` ranks with stride `stride` stays on NVLink while size·stride ≤ its reach (the node, or an NVL72 rack).
Link link_for(const Hardware& hw, const Layout& l, int size, int stride) {
    if (size * stride <= nvlink_reach(hw, l.gpus_per_node)) return {hw.nvlink_gbps / 2, 0.7};
    return {hw.network_gbps, 0.8};
}

double params_per_gpu_dense(const ModelShape& m, const Layout& l) {
    const double per_layer = (attention_layers(m) * attention_params(m) + m.mamba_layers * mamba_params(m)) / m.layers +
                             (m.experts > 0 ? moe_block_dense_params(m) * moe_layers(m) / m.layers : dense_mlp_params(m));
    const double layers = double(m.layers) / l.pp;
    const double embed = double(m.hidden) * m.vocab * (l.pp == 1 ? 2.0 : 1.0);
    return (per_layer * layers + m.dense_layers * (m.experts > 0) * dense_mlp_params(m) / l.pp + embed) / l.tp;
}

double params_per_gpu_expert(const ModelShape& m, const Layout& l) {
    if (m.experts == 0) return 0;
    return double(moe_layers(m)) / l.pp * m.experts * expert_params(m) / (l.ep * l.etp);
}

// Activation bytes per layer per micro-batch (Korthikanti 2022, §3), generalised to GQA, SwiGLU and MoE.
double activation_bytes_per_layer(const ModelShape& m, const Layout& l, double seq) {
    const double sbh = seq * l.mbs * m.hidden;
    const double kv_ratio = m.mla ? 1.0 : double(m.kv_heads) / std::max(1, m.heads);
    const double ffn = m.experts > 0 ? double(m.moe_ffn) * m.topk + m.shared_ffn : m.ffn;
    const double mlp = (m.gated_mlp ? 6.0 : 4.0) * ffn / m.hidden + (m.experts > 0 ? 4.0 * m.topk * expert_width(m) / m.hidden : 0.0);
    const double attention = 7.0 + 4.0 * kv_ratio;
    // The norms' and dropouts' 10 bytes per token are replicated across tp unless sequence parallelism shards
    // them. Korthikanti et al. 2022 count 10/tp then, but with it Megatron-Bridge's published 70B FP8 layout on
    // 64 H100 would not fit (TE keeps the norms' outputs in FP8; Llama has no dropout), so none.
    const double replicated = sequence_sharded(l) ? 0.0 : 10.0;
    double bytes = sbh * (replicated + (attention + 7.0 + mlp) / l.tp);
    if (!l.flash_attention && l.recompute == Recompute::none) bytes += 5.0 * m.heads * seq * seq * l.mbs / l.tp;
    if (keeps_gathered_inputs(l)) bytes += 2.0 * 2.0 * sbh;   // the attention and MLP inputs
    // Transformer Engine caches the inputs of the QKV, projection, FC1 and FC2 GEMMs in FP8 (one byte):
    // about 60 % of the stored bytes are such inputs, so FP8 saves about 30 %.
    if (l.precision == Precision::fp8) bytes *= 0.7;
    return bytes;
}

Memory memory(const Hardware& hw, const ModelShape& m, const Layout& l, int dp, int microbatches) {
    Memory mem;
    const double dense = params_per_gpu_dense(m, l);
    const double experts = params_per_gpu_expert(m, l);
    const int expert_dp = std::max(1, l.nodes * l.gpus_per_node / (l.ep * l.etp * l.pp));
    const double dense_dp = dp * l.cp;
    const double fp8_copy = l.precision == Precision::fp8 ? 1.0 : 0.0;
    if (l.lora) {
        // Frozen base weights: bf16 (and FP8) copies only; the adapters' grads and state are a rounding error.
        const double shard = l.sharding == Sharding::fsdp ? (l.fsdp_shard > 0 ? l.fsdp_shard : dense_dp) : 1.0;
        mem.params = (dense / shard + experts) * (2 + fp8_copy);
    } else if (l.sharding == Sharding::fsdp) {
        const double shard = l.fsdp_shard > 0 ? l.fsdp_shard : dense_dp;
        const double sharded = dense / shard + experts / std::max(1, expert_dp);
        mem.optimizer = sharded * 12;
        if (l.pp > 1) {
            // PyTorch's pipeline schedules keep the stage's parameters gathered between micro-batches (torchtitan
            // turns reshard_after_forward off with pp) and accumulate its gradients unsharded, in the fp32 reduce
            // dtype, until the last micro-batch's backward reduce-scatters them into the shard.
            const double stage = dense + experts;
            mem.params = stage * 2 + sharded * fp8_copy;
            mem.grads = stage * 4;
        } else {
            mem.params = sharded * (2 + fp8_copy) + dense / m.layers * l.pp * 2 * 2;   // two gathered layers in flight
            mem.grads = sharded * 4;
        }
    } else {
        const double opt_div_dense = l.sharding == Sharding::distributed_optimizer ? dense_dp : 1.0;
        const double opt_div_expert = l.sharding == Sharding::distributed_optimizer ? expert_dp : 1.0;
        // Megatron-Core's gradient buffer holds the reduce dtype (grad_reduce_in_fp32 false: bf16), and with
        // fp8_param_gather its weights live in FP8 only (the optimizer keeps the fp32 master copy).
        const bool mcore_fp8_weights = l.megatron_core && l.fp8_param_gather && l.precision == Precision::fp8;
        const bool mcore_bf16_grads = l.megatron_core && l.grad_reduce == GradReduce::bf16;
        mem.params = (dense + experts) * (mcore_fp8_weights ? 1.0 : 2 + fp8_copy);
        // ZeRO-2 keeps each rank's shard of the fp32 gradients plus the reduce buckets, a rounding error here.
        mem.grads = (l.shard_grads ? dense / dense_dp + experts / expert_dp : dense + experts) * (mcore_bf16_grads ? 2.0 : 4.0);
        mem.optimizer = dense * 12 / opt_div_dense + experts * 12 / opt_div_expert;
    }
    const double seq = double(m.seq_len) / l.cp;
    const double per_layer = activation_bytes_per_layer(m, l, seq);
    const double layers = double(m.layers) / l.pp;
    double full_layers = 0;
    if (l.recompute == Recompute::full) full_layers = l.recompute_layers > 0 ? std::min<double>(l.recompute_layers, layers) : layers;
    const double input_only = 2.0 * seq * l.mbs * m.hidden / (l.sequence_parallel ? l.tp : 1);
    // Per-op SAC keeps per token: the layer input, the attention output and the outputs of every other
    // matmul of wq, wk, wv, wo, w1, w3, w2 (wq, wv, w1, w2), in bf16, sharded by tp (sequence parallel).
    const double kept_per_layer = l.recompute == Recompute::saved_ops
                                      ? 2.0 * seq * l.mbs * (4.0 * m.hidden + double(m.kv_heads) * head_dim(m) + m.ffn) / l.tp
                                      : per_layer;
    const double stage = (layers - full_layers) * kept_per_layer + full_layers * input_only;
    double in_flight = std::min(l.pp, microbatches);
    if (l.vpp > 1) in_flight = l.pp * (1.0 + double(l.pp - 1) / (l.pp * l.vpp));
    double activations = stage * in_flight;
    if (full_layers > 0) activations += per_layer;   // one layer's working set while recomputing
    if (l.offload_activations) activations *= 0.35;
    // Bytes per logit at the loss's peak: the bf16 logits and Megatron's in-place fp32 softmax (6), or the bf16
    // logits, their fp32 copy and F.cross_entropy's saved fp32 log-softmax (10).
    const double loss_bytes = l.megatron_core ? 6.0 : 10.0;
    const double gathered_head_input = keeps_gathered_inputs(l) ? 2.0 * seq * l.mbs * m.hidden : 0.0;   // the output GEMM's
    const double logits = l.pp == 1 ? loss_bytes * seq * l.mbs * m.vocab / l.tp + gathered_head_input : 0.0;
    mem.activations = activations + logits;
    // CUDA context, NCCL and cuBLAS workspaces, DP buckets; the allocator fragments about 8 %.
    const double workspace = 2.5 * k_gib + 0.08 * (mem.activations + mem.params);
    mem.other = workspace;
    for (double* field : {&mem.params, &mem.grads, &mem.optimizer, &mem.activations, &mem.other}) *field /= k_gib;
    mem.total = mem.params + mem.grads + mem.optimizer + mem.activations + mem.other;
    mem.capacity = hw.hbm_gib;
    return mem;
}

const char* check(const ModelShape& m, const Layout& l, int world, int dp) {
    if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.seq_len <= 0 || m.vocab <= 0) return "model shape incomplete";
    if (l.tp < 1 || l.pp < 1 || l.cp < 1 || l.ep < 1 || l.etp < 1 || l.vpp < 1 || l.mbs < 1) return "parallel sizes must be >= 1";
    if (dp < 1 || l.tp * l.pp * l.cp * dp != world) return "tp*pp*cp*dp must equal the number of GPUs";
    if (m.heads % l.tp != 0) return "heads not divisible by tp";
    if (m.layers < l.pp * l.vpp) return "layers fewer than pp*vpp";
    if (l.gbs % (l.mbs * dp) != 0) return "gbs not divisible by mbs*dp";
    if (m.experts > 0 && m.experts % l.ep != 0) return "experts not divisible by ep";
    if (m.experts > 0 && (l.ep * l.etp) > world / l.pp) return "ep*etp exceeds the ranks of a stage";
    if (m.seq_len % (2 * l.cp) != 0 && l.cp > 1) return "seq_len not divisible by 2*cp";
    return "";
}

}  // namespace

double total_params(const ModelShape& m) {
    return attention_layers(m) * attention_params(m) + m.mamba_layers * mamba_params(m) +
           dense_mlp_layers(m) * dense_mlp_params(m) +
           moe_layers(m) * (m.experts * expert_params(m) + moe_block_dense_params(m)) + 2.0 * m.hidden * m.vocab;
}

double flops_per_token(const ModelShape& m) {
    return 6.0 * active_gemm_params(m) + core_attention_flops_per_seq(m) * m.seq_len * (attention_layers(m) + m.mtp_layers) +
           m.mamba_layers * mamba_scan_flops(m);
}

int etp_following_tp(const Layout& l) {
    const int world = l.nodes * l.gpus_per_node;
    int etp = l.tp;
    while (etp > 1 && l.ep * etp * l.pp > world) etp /= 2;
    return etp;
}

Estimate estimate(const Hardware& hw, const ModelShape& m, const Layout& l) {
    Estimate e;
    const int world = l.nodes * l.gpus_per_node;
    const int dp = l.dp > 0 ? l.dp : world / std::max(1, l.tp * l.pp * l.cp);
    e.problem = check(m, l, world, dp);
    if (*e.problem != '\0') return e;
    e.valid = true;
    const int microbatches = l.gbs / (l.mbs * dp);
    const double seq = double(m.seq_len) / l.cp;
    const double tokens_mb = seq * l.mbs;                     // tokens per micro-batch per rank
    const double tokens_step_gpu = double(l.gbs) * m.seq_len / world;

    // Compute (§1b): GEMMs at a size-dependent efficiency, core attention in BF16 kernels.
    // LoRA freezes the base weights: the backward pass computes input gradients (2N) but no weight
    // gradients (2N), so the GEMM work is 4N per token instead of 6N (the adapters' rank-r GEMMs are small).
    const double gemm_params = active_gemm_params(m);
    const double gemm_flops = (l.lora ? 4.0 : 6.0) * gemm_params * tokens_step_gpu;
    // Core attention and the Mamba scans run in BF16 kernels of their own (the scan at the attention rate).
    const double attn_flops = (core_attention_flops_per_seq(m) * m.seq_len * (attention_layers(m) + m.mtp_layers) +
                               m.mamba_layers * mamba_scan_flops(m)) * tokens_step_gpu;
    const double peak = (l.precision == Precision::fp8 ? hw.fp8_tflops : hw.bf16_tflops) * 1e12;
    // Attention, shared, dense and output GEMMs run at the hidden width.
    const double gemm_peak = (fp8_gemms(l) ? hw.fp8_tflops : hw.bf16_tflops) * 1e12;
    const double dense_eff = gemm_efficiency(double(m.hidden) / l.tp, tokens_mb, l, hw);
    double gemm_eff = dense_eff;
    if (m.experts > 0) {
        // Expert GEMMs see only the tokens routed to them; without grouped GEMM each runs alone.
        const double expert_tokens = tokens_mb * m.topk * l.ep / m.experts;
        // The step spends each GEMM's FLOPs at its own rate: weight the two rates by the routed experts'
        // share of the FLOPs (a harmonic mean).
        const double routed = (moe_layers(m) + m.mtp_layers) * m.topk * expert_params(m) / gemm_params;
        const double expert_eff = gemm_efficiency(m.moe_ffn / double(l.etp), expert_tokens, l, hw) *
                                  (l.moe_grouped_gemm ? 0.6 : 0.4);
        gemm_eff = 1.0 / ((1.0 - routed) / dense_eff + routed / expert_eff);
    }
    const double attn_eff = (l.flash_attention ? hw.flash_attention_efficiency : 0.25) * (tokens_mb / (tokens_mb + 1024.0));
    double compute = gemm_flops / (gemm_peak * gemm_eff) + attn_flops / (hw.bf16_tflops * 1e12 * attn_eff);
    // Element-wise work (norms, activations, residuals, MoE permutation) is bound by HBM bandwidth.
    // MoE permutation traffic only in the MoE layers.
    const double elementwise_bytes = (l.fusions ? 40.0 : 70.0) * (m.hidden * m.layers + 3.0 * m.topk * moe_layers(m) * expert_width(m));
    const double elementwise_s = tokens_step_gpu * elementwise_bytes * (l.sequence_parallel ? 1 : l.tp) / (hw.hbm_tbps * 1e12);
    compute += elementwise_s;
    // The Mamba mixers' conv, scan and gated-norm kernels, split over tp like the mixer's heads.
    compute += tokens_step_gpu * m.mamba_layers * mamba_traffic_bytes(m) / l.tp / (hw.hbm_tbps * 1e12);
    if (l.lora) compute += tokens_step_gpu * lora_traffic_bytes(m, l.lora_targets) / l.tp / (hw.hbm_tbps * 1e12);
    if (l.recompute == Recompute::full) {
        const double share = l.recompute_layers > 0 ? std::min(1.0, double(l.recompute_layers) * l.pp / m.layers) : 1.0;
        compute *= 1.0 + share * (l.lora ? 0.5 : 1.0 / 3.0);   // forward replayed: 2N of 6N, or of 4N under LoRA
    } else if (l.recompute == Recompute::saved_ops) {
        // Replayed: the forward of the unsaved matmuls (wk, wo, w3) and the element-wise work; SDPA is kept.
        const double kv = double(m.kv_heads) * head_dim(m);
        const double replayed = m.hidden * (kv + m.hidden + double(m.ffn)) / (attention_params(m) + dense_mlp_params(m));
        compute += replayed * (gemm_flops / 3.0) / (gemm_peak * gemm_eff) + elementwise_s / 2.0;
    } else if (l.recompute == Recompute::selective) {
        compute += attn_flops / (hw.bf16_tflops * 1e12 * attn_eff) / 3.0;
    }

    // Tensor parallel (§5): four collectives of s·b·h·2 bytes per layer per micro-batch.
    const double layers_local = double(m.layers) / l.pp;
    const Link tp_link = link_for(hw, l, l.tp, 1);
    const double tp_bytes = tokens_mb * m.hidden * 2.0;
    double tp_comm = 4.0 * layers_local * microbatches * ring_time(tp_bytes, l.tp, tp_link.gbps, tp_link.efficiency);
    if (l.tp_comm_overlap && l.tp <= nvlink_reach(hw, l.gpus_per_node)) tp_comm *= 0.3;

    // Context parallel: K/V blocks passed c−1 times, mostly hidden behind attention. Ring attention also
    // splits each rank's attention into 2·cp causal blocks merged by online softmax (extra launches and a
    // rescaling pass): about 15 % more attention time. The GEMMs are untouched by cp.
    const double kv_width = m.mla ? m.hidden / 4.0 : double(m.kv_heads) * head_dim(m);
    const Link cp_link = link_for(hw, l, l.cp, l.tp);
    const double cp_bytes = 2.0 * tokens_mb * kv_width * 2.0 / std::max(1, l.tp);
    const double cp_raw = 3.0 * layers_local * microbatches * (l.cp - 1) * cp_bytes / (cp_link.gbps * 1e9 * cp_link.efficiency);
    const double cp_comm = l.cp > 1 ? std::max(0.15 * cp_raw, cp_raw - 0.5 * attn_flops / (hw.bf16_tflops * 1e12 * attn_eff)) +
                                          0.15 * attn_flops / (hw.bf16_tflops * 1e12 * attn_eff) : 0.0;

    // Expert parallel all-to-all: dispatch and combine, forward and backward, per MoE layer.
    double ep_comm = 0;
    if (m.experts > 0 && l.ep > 1) {
        const double dispatcher = l.dispatcher == Dispatcher::flex ? 1.4 : (l.dispatcher == Dispatcher::allgather ? 0.6 : 1.0);
        const double bytes = tokens_mb / (l.sequence_parallel ? l.tp : 1) * m.topk * expert_width(m) * (l.precision == Precision::fp8 ? 1.5 : 2.0);
        // An all-to-all sends each peer its share: a group spread over nodes sends only the shares of the
        // peers in other nodes over the network (each GPU's own NIC), the rest over NVLink at once.
        const int local = std::clamp(nvlink_reach(hw, l.gpus_per_node) / std::max(1, l.tp), 1, l.ep);
        const double off_node = double(l.ep - local) / l.ep, on_node = double(local - 1) / l.ep;
        const double all_to_all = std::max(bytes * off_node / (hw.network_gbps * 1e9 * 0.8 * dispatcher),
                                           bytes * on_node / (hw.nvlink_gbps / 2 * 1e9 * 0.7 * dispatcher)) + 10e-6;
        ep_comm = 4.0 * double(moe_layers(m)) / l.pp * microbatches * all_to_all * 0.6;
    }

    // Pipeline bubble (§2) and p2p sends.
    const double core = compute + tp_comm + cp_comm + ep_comm;
    const double bubble = l.pp > 1 ? core * double(l.pp - 1) / (double(microbatches) * l.vpp) : 0.0;
    const Link pp_link = link_for(hw, l, l.pp, l.tp * l.cp * dp);
    const double p2p = l.pp > 1 ? 2.0 * microbatches * l.vpp * tokens_mb * m.hidden * 2.0 / l.tp /
                                      (pp_link.gbps * 1e9 * pp_link.efficiency) * 0.3 : 0.0;

    // Data parallel: reduce-scatter of fp32 grads and all-gather of bf16 params; hidden by overlap.
    const double dense_params = params_per_gpu_dense(m, l);
    const double expert_local = params_per_gpu_expert(m, l);
    const Link dp_link = link_for(hw, l, dp * l.cp, l.tp);
    const int dense_dp = dp * l.cp;
    const int expert_dp = std::max(1, world / (l.ep * l.etp * l.pp));
    double dp_raw = 0;
    // Frozen base weights have no gradients to reduce (the adapters' are negligible); FSDP still gathers them.
    const double frozen = l.lora ? 0.0 : 1.0;
    const double grad_width = l.grad_reduce == GradReduce::bf16 ? 2.0 : 4.0;
    const double grad_bytes = frozen * (l.sharding == Sharding::none ? 2.0 * grad_width : grad_width);
    const double param_width = l.fp8_param_gather ? 1.0 : 2.0;
    const double gather_bytes = l.sharding == Sharding::fsdp ? 2.0 * param_width : (l.sharding == Sharding::none ? 0.0 : param_width * frozen);
    dp_raw += ring_time(dense_params * (grad_bytes + gather_bytes), dense_dp, dp_link.gbps, dp_link.efficiency);
    dp_raw += ring_time(expert_local * (grad_bytes + gather_bytes), expert_dp, hw.network_gbps, 0.8);
    const double hideable = (l.overlap_grad_reduce ? 0.45 : 0.0) + (l.overlap_param_gather ? 0.25 : 0.0);
    const double dp_comm = std::max(dp_raw * (1.0 - hideable * 1.3), dp_raw - hideable * compute);

    // Launch and CPU overhead per layer per micro-batch; CUDA graphs remove most of it. Optimizer step reads
    // and writes the fp32 state of the local shard.
    const double launch = (l.cuda_graphs ? 0.02e-3 : 0.12e-3) * (m.experts > 0 ? 2.0 : 1.0);
    const double opt_bytes = frozen * (dense_params / (l.sharding == Sharding::none ? 1 : dense_dp) +
                              expert_local / (l.sharding == Sharding::none ? 1 : expert_dp)) * 32.0;
    const double overhead = launch * layers_local * microbatches + opt_bytes / (hw.hbm_tbps * 1e12 * 0.7) + 0.02 + p2p;

    e.breakdown_s = {compute, tp_comm, bubble, dp_comm, cp_comm, ep_comm, overhead};
    e.step_time_s = compute + tp_comm + bubble + dp_comm + cp_comm + ep_comm + overhead;
    e.tokens_per_s_per_gpu = tokens_step_gpu / e.step_time_s;
    e.tflops_per_gpu = flops_per_token(m) * e.tokens_per_s_per_gpu / 1e12;
    e.mfu = e.tflops_per_gpu * 1e12 / peak;
    e.memory_gib = memory(hw, m, l, dp, microbatches);
    e.fits = e.memory_gib.total <= e.memory_gib.capacity;
    return e;
}

}  // namespace attune::sim
