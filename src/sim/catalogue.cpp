// Built-in hardware and model catalogues. Hardware facts: NVIDIA's H100, H200 and B200 datasheets
// (dense peaks: half the datasheets' sparse figures), the DGX B200 spec and AWS's EC2 accelerated-
// computing instance specifications. Model shapes: each model's published config (Hugging Face
// config.json; Llama 3 paper, arXiv:2407.21783, Table 3), plus the
// older NeMo / Megatron-LM benchmark models named in published.csv, from their published configs.

#include <attune/sim/model.hpp>
#include <attune/util/strings.hpp>

#include <array>
#include <string>

namespace attune::sim {
namespace {

// Usable HBM: nvidia-smi totals (H100 81559 MiB, H200 143771 MiB; AWS p6-b200 179 GiB).
// h100_500w: Meta's Grand Teton H100 (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md):
// the same GH100 die with 96 GB HBM2e at 2.4 TB/s and a 500 W cap. Under the cap, dense GEMMs hold about 1.6 GHz instead of
// the 700 W part's 1.98 GHz boost (the 350 W H100 PCIe is rated 756 TF BF16 at a similar clock with
// fewer SMs), so its sustained peaks are taken as 1.6/1.98 of the SXM part's.
// Fused attention (forward + backward, causal) on Hopper: the cuDNN / FlashAttention-2 kernels that
// Megatron, NeMo and PyTorch SDPA run approach about 350 TF/s on H100 (the backward pass, at about 30 %
// of peak, dominates); FlashAttention-3's warp-specialised kernels are faster but not what these stacks
// ran. Blackwell's cuDNN attention (tcgen05, tensor memory) keeps a larger share of a larger peak.
constexpr std::array k_hardware{
    Hardware{"h100", 989.4, 1978.9, 79.6, 3.35, 900, 50, 0.36},
    Hardware{"h100_500w", 800, 1600, 94.0, 2.4, 900, 50, 0.36},
    Hardware{"h200", 989.4, 1978.9, 140.4, 4.8, 900, 50, 0.36},
    Hardware{"b200", 2250, 4500, 179, 8.0, 1800, 50, 0.42},
};

struct NamedModel {
    std::string_view key;
    std::string_view hf_id;
    ModelShape shape;
};

ModelShape dense(int layers, int hidden, int ffn, int heads, int kv_heads, int vocab, bool gated = true) {
    ModelShape m;
    m.layers = layers, m.hidden = hidden, m.ffn = ffn, m.heads = heads, m.kv_heads = kv_heads, m.vocab = vocab;
    m.gated_mlp = gated;
    return m;
}

ModelShape moe(ModelShape base, int experts, int topk, int moe_ffn, int shared_ffn, int dense_layers) {
    base.experts = experts, base.topk = topk, base.moe_ffn = moe_ffn, base.shared_ffn = shared_ffn;
    base.dense_layers = dense_layers;
    return base;
}

ModelShape with_head_dim(ModelShape m, int head_dim) {
    m.head_dim = head_dim;
    return m;
}

// Nemotron 3 Nano 30B-A3B (Megatron-LM examples/post_training/modelopt/conf/nvidia/
// NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.sh): 52 blocks, pattern MEMEM*EMEMEM*..., 23 Mamba-2 (64 heads
// of 64, state 128 and 8 groups by Megatron's defaults), 23 MoE (128 experts, top-6, width 1856, one
// shared expert of 3712, squared ReLU), 6 GQA attention (32 heads, 2 groups, 128 wide); hidden 2688;
// 131072 vocabulary (Nemotron-H tokenizer), untied embeddings.
ModelShape nemotron3_nano() {
    ModelShape m = moe(dense(52, 2688, 0, 32, 2, 131072, false), 128, 6, 1856, 3712, 52 - 23);
    m.head_dim = 128, m.attention_layers = 6, m.mamba_layers = 23;
    m.mamba_heads = 64, m.mamba_head_dim = 64, m.mamba_state = 128, m.mamba_groups = 8;
    return m;
}

// Nemotron 3 Super 120B-A12B (Megatron-Bridge src/megatron/bridge/models/nemotronh/nemotron_h_provider.py,
// Nemotron3SuperProvider): 88 blocks, pattern MEMEMEM*EMEMEMEM*..., 40 Mamba-2 (128 heads of 64, state
// 128, 8 groups), 40 LatentMoE (512 experts, top-22, width 2688 in a 1024-wide latent, one shared expert
// of 5376, squared ReLU), 8 GQA attention (32 heads, 2 groups, 128 wide); hidden 4096; two MTP layers of
// one attention and one MoE block each; 131072 vocabulary, untied embeddings.
ModelShape nemotron3_super() {
    ModelShape m = moe(dense(88, 4096, 0, 32, 2, 131072, false), 512, 22, 2688, 5376, 88 - 40);
    m.head_dim = 128, m.attention_layers = 8, m.mamba_layers = 40, m.moe_latent = 1024, m.mtp_layers = 2;
    m.mamba_heads = 128, m.mamba_head_dim = 64, m.mamba_state = 128, m.mamba_groups = 8;
    return m;
}

ModelShape deepseek_like(int heads, int experts, int vocab, int dense_layers, int mtp) {
    ModelShape m = moe(dense(61, 7168, 18432, heads, heads, vocab), experts, 8, 2048, 2048, dense_layers);
    m.mla = true, m.q_lora_rank = 1536, m.kv_lora_rank = 512, m.qk_nope_dim = 128, m.qk_rope_dim = 64;
    m.v_head_dim = 128, m.mtp_layers = mtp;
    return m;
}

const std::array<NamedModel, 30>& models() {
    static const std::array<NamedModel, 30> table{{
        {"llama3_8b", "meta-llama/Meta-Llama-3-8B", dense(32, 4096, 14336, 32, 8, 128256)},
        {"llama3.1_8b", "meta-llama/Llama-3.1-8B", dense(32, 4096, 14336, 32, 8, 128256)},
        {"llama3_70b", "meta-llama/Meta-Llama-3-70B", dense(80, 8192, 28672, 64, 8, 128256)},
        {"llama3.1_70b", "meta-llama/Llama-3.1-70B", dense(80, 8192, 28672, 64, 8, 128256)},
        {"llama3.1_405b", "meta-llama/Llama-3.1-405B", dense(126, 16384, 53248, 128, 8, 128256)},
        {"llama2_7b", "meta-llama/Llama-2-7b-hf", dense(32, 4096, 11008, 32, 32, 32000)},
        {"llama2_13b", "meta-llama/Llama-2-13b-hf", dense(40, 5120, 13824, 40, 40, 32000)},
        {"llama2_70b", "meta-llama/Llama-2-70b-hf", dense(80, 8192, 28672, 64, 8, 32000)},
        {"mixtral_8x7b", "mistralai/Mixtral-8x7B-v0.1", moe(dense(32, 4096, 0, 32, 8, 32000), 8, 2, 14336, 0, 0)},
        {"mixtral_8x22b", "mistralai/Mixtral-8x22B-v0.1", moe(dense(56, 6144, 0, 48, 8, 32000), 8, 2, 16384, 0, 0)},
        {"qwen3_30b_a3b", "Qwen/Qwen3-30B-A3B",
         with_head_dim(moe(dense(48, 2048, 0, 32, 4, 151936), 128, 8, 768, 0, 0), 128)},
        {"qwen3_235b_a22b", "Qwen/Qwen3-235B-A22B",
         with_head_dim(moe(dense(94, 4096, 0, 64, 4, 151936), 128, 8, 1536, 0, 0), 128)},
        {"deepseek_v3", "deepseek-ai/DeepSeek-V3", deepseek_like(128, 256, 129280, 3, 1)},
        {"kimi_k2", "moonshotai/Kimi-K2-Instruct", deepseek_like(64, 384, 163840, 1, 0)},
        {"glm4.5_355b_a32b", "zai-org/GLM-4.5",
         with_head_dim(moe(dense(92, 5120, 12288, 96, 8, 151552), 160, 8, 1536, 1536, 3), 128)},
        {"glm4.5_air_106b_a12b", "zai-org/GLM-4.5-Air",
         with_head_dim(moe(dense(46, 4096, 10944, 96, 8, 151552), 128, 8, 1408, 1408, 1), 128)},
        {"minimax_m2_230b_a10b", "MiniMaxAI/MiniMax-M2",
         with_head_dim(moe(dense(62, 3072, 0, 48, 8, 200064), 256, 8, 1536, 0, 0), 128)},
        {"gpt_oss_120b", "openai/gpt-oss-120b",
         with_head_dim(moe(dense(36, 2880, 0, 64, 8, 201088), 128, 4, 2880, 0, 0), 64)},
        {"gpt_oss_20b", "openai/gpt-oss-20b",
         with_head_dim(moe(dense(24, 2880, 0, 64, 8, 201088), 32, 4, 2880, 0, 0), 64)},
        // Qwen2.5 HF configs (7B: 28×3584, ffn 18944, 28 heads / 4 KV; 32B: 64×5120, ffn 27648, 40 / 8).
        {"qwen2.5_7b", "Qwen/Qwen2.5-7B", dense(28, 3584, 18944, 28, 4, 152064)},
        {"qwen2.5_32b", "Qwen/Qwen2.5-32B", dense(64, 5120, 27648, 40, 8, 152064)},
        // GPT-3 175B as benchmarked by Megatron-LM / NeMo (96×12288, 4h GELU MLP, V=131072 padded).
        {"gpt3_175b", "gpt3-175b", dense(96, 12288, 49152, 96, 96, 131072, false)},
        // NeMo 24.07 benchmark models (NeMo launcher configs: GPT3 5B/20B, Nemotron-4 8B/15B/22B/340B;
        // Nemotron uses squared-ReLU, a 2-matrix MLP).
        {"gpt3_5b", "gpt3-5b", dense(24, 4096, 16384, 32, 32, 50304, false)},
        {"gpt3_20b", "gpt3-20b", dense(44, 6144, 24576, 48, 48, 50304, false)},
        {"nemotron_8b", "nemotron-8b", dense(32, 4096, 16384, 32, 32, 256000, false)},
        // Nemotron 22B is multi-head (launcher conf/training/nemotron/nemotron_22b.yaml: num_query_groups: null),
        // which gives the 130.3 GFLOP/token (non-causal) its NeMo 24.07 row implies.
        {"nemotron_22b", "nemotron-22b", dense(40, 6144, 24576, 48, 48, 256000, false)},
        // Nemotron-4 15B (arXiv:2402.16819, Table 1: 32 layers, hidden 6144, 48 heads, 8 KV heads,
        // 256k vocabulary, squared-ReLU MLP of 4h).
        {"nemotron_15b", "nvidia/Nemotron-4-15B", dense(32, 6144, 24576, 48, 8, 256000, false)},
        {"nemotron3_nano_30b_a3b", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", nemotron3_nano()},
        {"nemotron3_super_120b_a12b", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16", nemotron3_super()},
        {"nemotron_340b", "nvidia/Nemotron-4-340B-Base", dense(96, 18432, 73728, 96, 8, 256000, false)},
    }};
    return table;
}

}  // namespace

std::optional<Hardware> find_hardware(std::string_view name) {
    const std::string lowered = util::to_lower(util::trim(name));
    for (const auto& hardware : k_hardware) {
        if (lowered == hardware.name) return hardware;
    }
    for (const auto& hardware : k_hardware) {
        if (lowered.starts_with(std::string(hardware.name))) return hardware;
    }
    return std::nullopt;
}

std::optional<ModelShape> find_model(std::string_view name) {
    const std::string lowered = util::to_lower(util::trim(name));
    for (const auto& entry : models()) {
        if (lowered == entry.key || lowered == util::to_lower(entry.hf_id)) return entry.shape;
    }
    return std::nullopt;
}

}  // namespace attune::sim
