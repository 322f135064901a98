#pragma once
// The simulator's plain inputs: the hardware, the model's shape and the job's parallel layout.
// They are independent of recipe files so the estimator stays a pure, fast function.

#include <attune/model/shape.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::sim {

/// One GPU type with its node and network: dense peaks, HBM, NVLink, scale-out per GPU, as
/// data/hardware.yaml gives them (dense, not sparse; NVLink bidirectional).
struct Hardware {
    std::string name;               ///< "h100", "h100_500w", "h200", "b200", ...
    double bf16_tflops = 0;         ///< dense BF16 peak, TFLOP/s
    double fp8_tflops = 0;          ///< dense FP8 peak, TFLOP/s
    double hbm_gib = 0;             ///< usable HBM per GPU, GiB
    double hbm_tbps = 0;            ///< HBM bandwidth, TB/s
    double nvlink_gbps = 0;         ///< NVLink per GPU, bidirectional GB/s
    double network_gbps = 0;        ///< scale-out per GPU, GB/s (400 Gb/s = 50 GB/s)
    double flash_attention_efficiency = 0.42;   ///< fused attention fwd+bwd against the BF16 peak
    int nvlink_domain = 0;          ///< GPUs one NVLink domain joins across nodes (72 in an NVL72 rack); 0: one node
};

/// The GPUs of a job in NVLink reach of each other: its node, or the NVLink domain across nodes.
inline int nvlink_reach(const Hardware& hw, int gpus_per_node) {
    return hw.nvlink_domain > gpus_per_node ? hw.nvlink_domain : gpus_per_node;
}

/// Reads a hardware file (data/hardware.yaml); throws InputError with `file:line: what was expected`.
std::vector<Hardware> load_hardware(const std::filesystem::path& path);
/// Every GPU data/hardware.yaml describes (loaded once), for messages.
std::vector<std::string> hardware_names();
/// For a GPU with no specs: `did you mean 'h100'?` when a known name is close, else the known names.
std::string known_gpus_hint(std::string_view gpu);

/// The entry of data/hardware.yaml for `name` (case-insensitive; an exact name first, then the
/// first name it starts with: `H100 SXM` is h100), or nullopt. Throws InputError when the file
/// cannot be read.
std::optional<Hardware> find_hardware(std::string_view name);

/// The model's shape is the model module's (gate/models.yaml, config.json files).
using model::ModelShape;

/// selective: Megatron's (core attention recomputed); saved_ops: PyTorch's per-op selective checkpointing as
/// torchtitan applies it (`selective_ac_option = "op"`): each layer keeps its input, the attention output and
/// every other matmul's output, and recomputes the rest.
enum class Recompute { none, selective, full, saved_ops };
enum class Precision { bf16, fp8 };
enum class Dispatcher { alltoall, allgather, flex };   ///< flex: DeepEP / HybridEP
enum class Sharding { none, distributed_optimizer, fsdp };
/// Which frozen projections carry LoRA adapters: every linear projection (Automodel's `*_proj`,
/// Megatron-Bridge's default), or only the fused QKV (NeMo 1.x's default `['attention_qkv']`).
enum class LoraTargets { all_projections, attention_qkv };
/// The data type gradients are reduced in across data-parallel ranks.
enum class GradReduce { fp32, bf16 };

/// How the job runs: world shape, parallel sizes, batch and the performance levers.
/// `dp` = 0 means world / (tp·pp·cp).
struct Layout {
    int nodes = 1, gpus_per_node = 8;
    int tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 0;
    int mbs = 1, gbs = 1;
    bool sequence_parallel = false;
    Sharding sharding = Sharding::distributed_optimizer;
    int fsdp_shard = 0;             ///< FSDP sharding group; 0 means dp
    Recompute recompute = Recompute::none;
    int recompute_layers = 0;       ///< full recompute: layers per stage recomputed; 0 means all
    bool offload_activations = false;
    bool lora = false;              ///< LoRA/PEFT: base weights frozen (no weight gradients, grads or optimizer state)
    /// ZeRO stage 2 over the distributed optimizer: each rank keeps only its shard of the gradients (reduce-scattered
    /// bucket by bucket), not the whole gradient buffer.
    bool shard_grads = false;
    LoraTargets lora_targets = LoraTargets::all_projections;   ///< where the adapters sit when `lora`
    GradReduce grad_reduce = GradReduce::fp32;
    bool overlap_grad_reduce = true, overlap_param_gather = true, tp_comm_overlap = false;
    bool fusions = true, flash_attention = true, cuda_graphs = false, moe_grouped_gemm = true;
    Dispatcher dispatcher = Dispatcher::alltoall;
    Precision precision = Precision::bf16;
    /// FP8 with a scale per row (torchao's rowwise recipe, a CUTLASS kernel): more accurate than one
    /// scale per tensor, and its GEMMs run no faster than BF16's.
    bool fp8_rowwise = false;
    /// Sharded parameters are gathered in FP8, one byte each (torchao's FP8 all-gather for FSDP2).
    bool fp8_param_gather = false;
    /// Megatron-Core's implementation (NeMo): the vocab-parallel loss runs in place on one fp32 copy of the
    /// logits, and sequence parallelism keeps only the sharded inputs of the tp GEMMs (gathered again in the
    /// backward). False: PyTorch-native stacks (torchtitan, Hugging Face models): F.cross_entropy on an fp32
    /// copy, which also keeps its log-softmax, and DTensor's tp GEMMs keep the gathered inputs they multiplied.
    bool megatron_core = true;
};

/// Memory per GPU on the most loaded pipeline stage, GiB.
struct Memory {
    double params = 0, grads = 0, optimizer = 0, activations = 0, other = 0, total = 0, capacity = 0;
};

/// Step time and where it goes, seconds. The parts add up to `step_time_s`.
struct Breakdown {
    double compute = 0, tp_comm = 0, pp_bubble = 0, dp_comm = 0, cp_comm = 0, ep_comm = 0, overhead = 0;
};

/// The nominal model's answer for one configuration.
struct Estimate {
    bool valid = false;             ///< false when the layout is inconsistent (see `problem`)
    const char* problem = "";       ///< static text naming the inconsistency
    bool fits = false;
    Memory memory_gib;
    Breakdown breakdown_s;
    double step_time_s = 0;
    double tokens_per_s_per_gpu = 0;
    double tflops_per_gpu = 0;      ///< model FLOPs (Megatron-Core causal convention) per second
    double mfu = 0;                 ///< against the dense peak of the layout's precision
};

/// Model FLOPs per token (forward + backward, causal attention, Megatron-Core formula 1b).
double flops_per_token(const ModelShape& model);

/// Total and active-per-token parameter counts.
double total_params(const ModelShape& model);

/// The expert tensor parallelism a searched layout pairs with its tp where the recipe leaves etp to follow
/// tp: tp itself, halved until the expert grid (ep x etp x pp) fits in the GPUs. The framework defaults etp
/// to tp and refuses a grid larger than the world, so a layout below tp writes etp out (one lever's companion,
/// as the rules' exchanges of pp or ep for expert tp do).
int etp_following_tp(const Layout& layout);

/// The nominal estimate: pure, no allocation, a few microseconds.
Estimate estimate(const Hardware& hardware, const ModelShape& model, const Layout& layout);

}  // namespace attune::sim
