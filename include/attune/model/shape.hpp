#pragma once
// The transformer's shape: what the gate's invariants and the simulator need to know about a model.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::model {

/// Dense models leave the MoE fields at zero; `mla` models use the DeepSeek latent-attention
/// ranks instead of `kv_heads`.
struct ModelShape {
    int layers = 0;
    int hidden = 0;
    int ffn = 0;                    ///< dense MLP width (the dense layers of a MoE model)
    int heads = 0;
    int kv_heads = 0;
    int head_dim = 0;               ///< 0 means hidden / heads
    int vocab = 0;
    int seq_len = 0;
    bool gated_mlp = true;          ///< SwiGLU (3 matrices) rather than GELU (2)
    int experts = 0;
    int topk = 0;
    int moe_ffn = 0;
    int shared_ffn = 0;             ///< total width of the shared experts
    int moe_latent = 0;             ///< LatentMoE: routed experts work in this width, projected from and back to hidden (0: none)
    int dense_layers = 0;           ///< leading dense layers of a MoE model (moe layer frequency)
    int mtp_layers = 0;
    bool mla = false;
    int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
    /// Hybrid Mamba models (Nemotron-H / Nemotron 3): `layers` counts every block; only
    /// `attention_layers` of them hold attention (0 means all), `mamba_layers` hold a Mamba-2 mixer,
    /// and the MLP/MoE blocks are `layers - dense_layers` (the dense ones have ffn = 0).
    int attention_layers = 0;
    int mamba_layers = 0;
    int mamba_heads = 0, mamba_head_dim = 0, mamba_state = 0, mamba_groups = 0;
};

/// A field of the shape by the name the catalogue and the adapters' `model:` quantities use
/// (`layers`, `vocab`, `kv_heads`, ...; booleans as 0 or 1); nullopt when no field has that name.
std::optional<double> field(const ModelShape& shape, std::string_view name);
/// Sets a field by name; false when no field has that name.
bool set_field(ModelShape& shape, std::string_view name, double value);
/// Every field name, in declaration order (for messages).
std::vector<std::string> field_names();

}  // namespace attune::model
