#include <attune/model/shape.hpp>

#include <array>

namespace attune::model {
namespace {

struct IntField {
    std::string_view name;
    int ModelShape::*member;
};

struct BoolField {
    std::string_view name;
    bool ModelShape::*member;
};

// seq_len is the recipe's, never the model's: it has no name here.
constexpr std::array k_ints{
    IntField{"layers", &ModelShape::layers},
    IntField{"hidden", &ModelShape::hidden},
    IntField{"ffn", &ModelShape::ffn},
    IntField{"heads", &ModelShape::heads},
    IntField{"kv_heads", &ModelShape::kv_heads},
    IntField{"head_dim", &ModelShape::head_dim},
    IntField{"vocab", &ModelShape::vocab},
    IntField{"experts", &ModelShape::experts},
    IntField{"topk", &ModelShape::topk},
    IntField{"moe_ffn", &ModelShape::moe_ffn},
    IntField{"shared_ffn", &ModelShape::shared_ffn},
    IntField{"moe_latent", &ModelShape::moe_latent},
    IntField{"dense_layers", &ModelShape::dense_layers},
    IntField{"mtp_layers", &ModelShape::mtp_layers},
    IntField{"q_lora_rank", &ModelShape::q_lora_rank},
    IntField{"kv_lora_rank", &ModelShape::kv_lora_rank},
    IntField{"qk_nope_dim", &ModelShape::qk_nope_dim},
    IntField{"qk_rope_dim", &ModelShape::qk_rope_dim},
    IntField{"v_head_dim", &ModelShape::v_head_dim},
    IntField{"attention_layers", &ModelShape::attention_layers},
    IntField{"mamba_layers", &ModelShape::mamba_layers},
    IntField{"mamba_heads", &ModelShape::mamba_heads},
    IntField{"mamba_head_dim", &ModelShape::mamba_head_dim},
    IntField{"mamba_state", &ModelShape::mamba_state},
    IntField{"mamba_groups", &ModelShape::mamba_groups},
};

constexpr std::array k_bools{
    BoolField{"gated_mlp", &ModelShape::gated_mlp},
    BoolField{"mla", &ModelShape::mla},
};

}  // namespace

std::optional<double> field(const ModelShape& shape, std::string_view name) {
    for (const auto& f : k_ints)
        if (f.name == name) return shape.*f.member;
    for (const auto& f : k_bools)
        if (f.name == name) return shape.*f.member ? 1.0 : 0.0;
    return std::nullopt;
}

bool set_field(ModelShape& shape, std::string_view name, double value) {
    for (const auto& f : k_ints)
        if (f.name == name) return shape.*f.member = int(value), true;
    for (const auto& f : k_bools)
        if (f.name == name) return shape.*f.member = value != 0, true;
    return false;
}

std::vector<std::string> field_names() {
    std::vector<std::string> names;
    for (const auto& f : k_ints) names.emplace_back(f.name);
    for (const auto& f : k_bools) names.emplace_back(f.name);
    return names;
}

}  // namespace attune::model
