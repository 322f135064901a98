#include <attune/core/error.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attune::model {

namespace {

using nlohmann::json;

/// The first of `keys` the config has, as a whole number; `fallback` when none is there.
int field(const json& config, std::initializer_list<const char*> keys, int fallback, const std::string& file) {
    for (const char* key : keys) {
        if (!config.contains(key) || config[key].is_null()) continue;
        if (!config[key].is_number_integer() || config[key].get<long long>() < 0 || config[key].get<long long>() > 100'000'000)
            throw InputError(fmt::format("{}: '{}' must be a whole number, got {}", file, key, config[key].dump()));
        return config[key].get<int>();
    }
    return fallback;
}

}  // namespace

ModelShape from_config(const std::filesystem::path& path) {
    const std::string file = path.string();
    json config;
    try {
        config = json::parse(util::read_text_file(path, 4u << 20));
    } catch (const json::parse_error& e) {
        throw InputError(fmt::format("{}: not JSON ({}); expected a Hugging Face config.json", file, e.what()));
    }
    if (!config.is_object()) throw InputError(file + ": expected a JSON object (a Hugging Face config.json)");
    // Multimodal configs nest the language model's shape.
    if (config.contains("text_config") && config["text_config"].is_object()) config = config["text_config"];
    ModelShape m;
    m.layers = field(config, {"num_hidden_layers", "n_layer", "num_layers"}, 0, file);
    m.hidden = field(config, {"hidden_size", "n_embd", "d_model"}, 0, file);
    m.heads = field(config, {"num_attention_heads", "n_head"}, 0, file);
    m.kv_heads = field(config, {"num_key_value_heads", "num_kv_heads"}, m.heads, file);
    m.vocab = field(config, {"vocab_size"}, 0, file);
    m.head_dim = field(config, {"head_dim"}, 0, file);
    m.experts = field(config, {"num_local_experts", "num_experts", "n_routed_experts"}, 0, file);
    m.topk = field(config, {"num_experts_per_tok", "moe_topk"}, 0, file);
    m.moe_ffn = field(config, {"moe_intermediate_size"}, m.experts > 0 ? field(config, {"intermediate_size"}, 0, file) : 0, file);
    m.ffn = field(config, {"intermediate_size", "n_inner", "ffn_dim"}, 4 * m.hidden, file);
    const int shared = field(config, {"n_shared_experts", "num_shared_experts"}, 0, file);
    m.shared_ffn = field(config, {"shared_expert_intermediate_size"}, shared * m.moe_ffn, file);
    m.dense_layers = field(config, {"first_k_dense_replace"}, 0, file);
    m.kv_lora_rank = field(config, {"kv_lora_rank"}, 0, file);
    if (m.kv_lora_rank > 0) {
        m.mla = true;
        m.q_lora_rank = field(config, {"q_lora_rank"}, 0, file);
        m.qk_nope_dim = field(config, {"qk_nope_head_dim"}, 0, file);
        m.qk_rope_dim = field(config, {"qk_rope_head_dim"}, 0, file);
        m.v_head_dim = field(config, {"v_head_dim"}, 0, file);
    }
    const std::string act = util::to_lower(config.value("hidden_act", config.value("activation_function", std::string("silu"))));
    m.gated_mlp = act.find("gelu") == std::string::npos && act.find("relu") == std::string::npos;
    if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || m.vocab <= 0)
        throw InputError(file + ": expected num_hidden_layers, hidden_size, num_attention_heads and vocab_size");
    return m;
}

}  // namespace attune::model
