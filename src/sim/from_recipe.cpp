#include <attune/sim/from_recipe.hpp>

#include <attune/core/error.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::sim {
namespace {

int quantity_or(const recipe::Document& r, const gate::Adapter& a, const cluster::Cluster& c, std::string_view name,
                int fallback) {
    const auto value = a.quantity(r, name, c);
    return value ? int(*value) : fallback;
}

/// An on/off lever: the recipe's, else what the family's runtime does when it is silent, else `fallback`.
bool flag(const recipe::Document& r, const gate::Adapter& a, const cluster::Cluster& c, std::string_view lever,
          bool fallback) {
    if (const auto found = a.runtime().defaults.find(std::string(lever)); found != a.runtime().defaults.end())
        fallback = found->second;
    // A quantity of that name maps the key's values (NeMo's optim.name: fused_adam is no distributed optimizer).
    if (a.has_quantity(lever))
        if (const auto q = a.quantity(r, lever, c)) return *q != 0;
    const auto value = a.lever_value(r, lever);
    if (!value || value->is_null()) return fallback;
    if (const auto b = value->as_bool()) return *b;
    return fallback;
}

std::string text(const recipe::Document& r, const gate::Adapter& a, std::string_view lever) {
    const auto value = a.lever_value(r, lever);
    return value && !value->is_null() ? util::to_lower(value->to_string()) : std::string();
}

/// Why the model is unknown: the name the recipe gives that resolves to nothing (with a
/// did-you-mean), or that it names none; and how to say it.
std::string unknown_model(const recipe::Document& r, const gate::Adapter& a, const std::vector<std::string>& missing) {
    std::string what = fmt::format("{}: the model's {} unknown", r.origin(), util::join(missing, ", ") + (missing.size() > 1 ? " are" : " is"));
    if (const auto name = a.model_name(r)) {
        what += fmt::format(": '{}' is neither in the model catalogue nor a local folder with a config.json", *name);
        if (const auto suggestion = a.closest_model(*name)) what += fmt::format(" (did you mean '{}'?)", *suggestion);
    }
    std::vector<std::string> hints;
    for (const auto& field : missing) hints.push_back(field + ": " + a.how_to_give(field));
    return what + " (" + util::join(hints, "; ") + ")";
}

ModelShape model_of(const recipe::Document& r, const gate::Adapter& a, const cluster::Cluster& c) {
    ModelShape m;
    if (const auto identity = a.model_identity(r)) m = identity->shape;
    // Any field of the shape a family's quantities give (Megatron's flags give MLA and shared experts too).
    for (const auto& field : model::field_names())
        if (const auto value = a.quantity(r, field, c); value && field != "seq_len") model::set_field(m, field, *value);
    if (m.kv_heads == 0) m.kv_heads = m.heads;
    m.seq_len = quantity_or(r, a, c, "seq_len", 4096);
    std::vector<std::string> missing;
    for (const char* field : {"layers", "hidden", "heads", "vocab"})
        if (model::field(m, field).value_or(0) <= 0) missing.emplace_back(field);
    if (!missing.empty()) throw InputError(unknown_model(r, a, missing));
    return m;
}

}  // namespace

Recompute parse_recompute(std::string_view value) {
    // A plain `true` is the HF/FSDP flag (HyperPod, AutoModel), which wraps every transformer block
    // in a checkpoint: the whole layer is recomputed. Hugging Face stacks' `offload` (Axolotl's
    // gradient_checkpointing) checkpoints every layer too, keeping the checkpoints in host memory.
    if (value.find("full") != std::string_view::npos || value == "uniform" || value == "block" || value == "true" ||
        value.starts_with("offload"))
        return Recompute::full;
    if (value.find("selective") != std::string_view::npos) return Recompute::selective;
    return Recompute::none;
}

Precision precision_of(const recipe::Document& r, const gate::Adapter& a) {
    // A family whose FP8 switch is no single key (torchtitan's converter list) says it as a quantity of
    // its keys alone (no cluster field reaches it).
    if (a.has_quantity("fp8")) return a.quantity(r, "fp8", cluster::default_cluster()).value_or(0) != 0 ? Precision::fp8 : Precision::bf16;
    const std::string fp8 = text(r, a, "fp8");
    return !fp8.empty() && fp8 != "false" && fp8 != "none" ? Precision::fp8 : Precision::bf16;
}

SimInputs from_recipe(const recipe::Document& r, const gate::Adapter& a, const cluster::Cluster& c) {
    SimInputs in;
    const auto hardware = find_hardware(c.gpu);
    if (!hardware)
        throw InputError(fmt::format("cluster {}: attune has no specs for GPU '{}' ({}); add it to data/hardware.yaml, or run on "
                                     "the local or Slurm backend, which tune without estimates",
                                     c.name, c.gpu, known_gpus_hint(c.gpu)));
    in.hardware = *hardware;
    if (c.network_gbps_per_gpu) in.hardware.network_gbps = *c.network_gbps_per_gpu / 8.0;
    in.model = model_of(r, a, c);
    Layout& l = in.layout;
    l.nodes = quantity_or(r, a, c, "nodes", c.nodes), l.gpus_per_node = quantity_or(r, a, c, "gpus_per_node", c.gpus_per_node);
    l.tp = quantity_or(r, a, c, "tp", 1), l.pp = quantity_or(r, a, c, "pp", 1), l.vpp = quantity_or(r, a, c, "vpp", 1);
    l.cp = quantity_or(r, a, c, "cp", 1), l.ep = quantity_or(r, a, c, "ep", 1), l.etp = quantity_or(r, a, c, "etp", 1);
    l.mbs = quantity_or(r, a, c, "mbs", 1), l.gbs = quantity_or(r, a, c, "gbs", l.mbs * l.nodes * l.gpus_per_node);
    l.vpp = std::max(1, l.vpp);
    // AutoModel's pipeline schedule splits each rank's local batch into micro batches of their own size.
    if (const auto pp_mbs = a.quantity(r, "pp_mbs", c); pp_mbs && l.pp > 1 && *pp_mbs >= 1) l.mbs = int(*pp_mbs);
    l.sequence_parallel = flag(r, a, c, "sequence_parallel", false);
    // A family's `fsdp` quantity decides (DeepSpeed's stage 2 is no FSDP though its key is the fsdp lever); else a
    // strategy written as text (`fsdp: full_shard auto_wrap`) turns it on.
    const auto fsdp_quantity = a.has_quantity("fsdp") ? a.quantity(r, "fsdp", c) : std::nullopt;
    const bool fsdp = fsdp_quantity ? *fsdp_quantity != 0
                                    : flag(r, a, c, "fsdp", false) || (!text(r, a, "fsdp").empty() && text(r, a, "fsdp") != "false");
    l.sharding = fsdp ? Sharding::fsdp
                      : (flag(r, a, c, "distributed_optimizer", true) ? Sharding::distributed_optimizer : Sharding::none);
    // The family's `recompute` quantity (0 none, 1 selective, 2 full) where it has one: it knows the
    // runtime's default (torchtitan checkpoints selectively when the recipe says nothing).
    if (const auto q = a.has_quantity("recompute") ? a.quantity(r, "recompute", c) : std::nullopt)
        l.recompute = Recompute(std::clamp(int(*q), 0, 2));
    else
        l.recompute = parse_recompute(text(r, a, "recompute"));
    if (l.recompute == Recompute::selective && quantity_or(r, a, c, "per_op_recompute", 0) == 1) l.recompute = Recompute::saved_ops;
    if (l.recompute == Recompute::full) l.recompute_layers = quantity_or(r, a, c, "recompute_layers", 0);
    l.offload_activations = flag(r, a, c, "activation_offload", false);
    l.shard_grads = l.sharding == Sharding::distributed_optimizer && flag(r, a, c, "shard_grads", false);
    // LoRA freezes the base weights (no weight gradients or optimizer state for them).
    l.lora = quantity_or(r, a, c, "lora", 0) == 1;
    if (l.lora && quantity_or(r, a, c, "lora_qkv_only", 0) == 1) l.lora_targets = LoraTargets::attention_qkv;
    l.overlap_grad_reduce = flag(r, a, c, "overlap_grad_reduce", true);
    l.overlap_param_gather = flag(r, a, c, "overlap_param_gather", true);
    l.tp_comm_overlap = flag(r, a, c, "tp_comm_overlap", false);
    l.fusions = flag(r, a, c, "fusions", false);
    l.megatron_core = a.runtime().engine == gate::Engine::megatron_core;
    l.flash_attention = flag(r, a, c, "flash_attention", true);
    l.cuda_graphs = flag(r, a, c, "cuda_graphs", false);
    l.moe_grouped_gemm = flag(r, a, c, "moe_grouped_gemm", true);
    const std::string dispatcher = text(r, a, "moe_dispatcher");
    l.dispatcher = dispatcher.find("flex") != std::string::npos || dispatcher.find("deepep") != std::string::npos
                       ? Dispatcher::flex
                       : (dispatcher.find("allgather") != std::string::npos ? Dispatcher::allgather : Dispatcher::alltoall);
    l.precision = precision_of(r, a);
    l.grad_reduce = quantity_or(r, a, c, "grad_reduce_bf16", 0) == 1 ? GradReduce::bf16 : GradReduce::fp32;
    l.fp8_param_gather = l.precision == Precision::fp8 && quantity_or(r, a, c, "fp8_param_gather", 0) == 1;
    l.fp8_rowwise = l.precision == Precision::fp8 && quantity_or(r, a, c, "fp8_rowwise", 0) == 1;
    if (const auto lr = a.lever_value(r, "learning_rate"); lr && lr->as_number()) in.objective.lr = *lr->as_number();
    if (const auto dropout = a.lever_value(r, "dropout"); dropout && dropout->as_number())
        in.objective.dropout = *dropout->as_number();
    switch (a.runtime().log_dialect) {
        case gate::LogDialect::megatron: in.dialect = Dialect::megatron; break;
        case gate::LogDialect::torchtitan: in.dialect = Dialect::torchtitan; break;
        case gate::LogDialect::automodel: in.dialect = Dialect::automodel; break;
    }
    return in;
}

namespace {

/// The key the simulator reads a lever from: the path of the adapter quantity of that name
/// (optim.overlap_grad_sync for overlap_grad_reduce, not its bucket-size key), else the lever's
/// first exact key.
const gate::KeyRule* lever_key(const gate::Adapter& a, std::string_view lever) {
    for (const auto& path : a.quantity_paths(lever))
        if (const auto* rule = a.classify(path); rule != nullptr && rule->lever == lever) return rule;
    return a.lever_rule(lever);
}

/// The values a lever may take: its listed values, both booleans, or a small integer range.
std::vector<recipe::Value> domain_of(const gate::Adapter& a, std::string_view lever) {
    const auto* rule = lever_key(a, lever);
    if (rule == nullptr) return {};
    if (!rule->domain.values.empty()) return rule->domain.values;
    if (rule->domain.type == "bool") return {recipe::Value::boolean(false), recipe::Value::boolean(true)};
    std::vector<recipe::Value> out;
    constexpr int k_largest_enumerated = 16;  // interleaving or batch sizes beyond this are never best
    if (rule->domain.type == "int" && rule->domain.max)
        for (int v = int(rule->domain.min.value_or(1)); v <= std::min(int(*rule->domain.max), k_largest_enumerated); ++v)
            out.push_back(recipe::Value::number(v));
    return out;
}

std::vector<int> ints(const gate::Adapter& a, std::string_view lever) {
    std::vector<int> out;
    for (const auto& value : domain_of(a, lever))
        if (const auto n = value.as_number(); n && *n >= 1) out.push_back(int(*n));
    return out;
}

std::vector<bool> bools(const gate::Adapter& a, std::string_view lever) {
    std::vector<bool> out;
    for (const auto& value : domain_of(a, lever))
        if (const auto b = value.as_bool()) out.push_back(*b);
    return out;
}

}  // namespace

LeverSpace lever_space(const gate::Adapter& a) {
    LeverSpace s;
    s.tp = ints(a, "tp"), s.pp = ints(a, "pp"), s.vpp = ints(a, "vpp"), s.cp = ints(a, "cp"), s.ep = ints(a, "ep");
    s.mbs = ints(a, "micro_batch_size");
    for (const auto& value : domain_of(a, "recompute")) {
        const Recompute r = value.is_null() ? Recompute::none : parse_recompute(util::to_lower(value.to_string()));
        if (std::find(s.recompute.begin(), s.recompute.end(), r) == s.recompute.end()) s.recompute.push_back(r);
    }
    s.cuda_graphs = bools(a, "cuda_graphs"), s.tp_comm_overlap = bools(a, "tp_comm_overlap");
    s.overlap_grad_reduce = bools(a, "overlap_grad_reduce"), s.overlap_param_gather = bools(a, "overlap_param_gather");
    s.distributed_optimizer = bools(a, "distributed_optimizer");
    return s;
}

}  // namespace attune::sim
