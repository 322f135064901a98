#include <attune/campaign/trial_io.hpp>
#include <attune/core/error.hpp>
#include <attune/diagnose/diagnosis.hpp>
#include <attune/diagnose/parse.hpp>
#include <attune/sim/from_recipe.hpp>

#include <fmt/format.h>

#include <cmath>

namespace attune::campaign {

namespace {

std::optional<sim::SimInputs> inputs_of(const recipe::Document& recipe, const gate::Adapter& adapter,
                                        const cluster::Cluster& cluster, std::string* problem) {
    try {
        return sim::from_recipe(recipe, adapter, cluster);
    } catch (const InputError& e) {
        if (problem != nullptr) *problem = e.what();
        return std::nullopt;
    }
}

const char* recompute_name(sim::Recompute recompute) {
    switch (recompute) {
        case sim::Recompute::none: return "none";
        case sim::Recompute::selective: return "selective";
        case sim::Recompute::saved_ops: return "selective";  // torchtitan's per-op selective checkpointing
        case sim::Recompute::full: return "full";
    }
    return "none";
}

double peak_tflops(const sim::Hardware& hardware, sim::Precision precision) {
    return precision == sim::Precision::fp8 ? hardware.fp8_tflops : hardware.bf16_tflops;
}

/// A whole, positive quantity of the recipe, or nullopt (absent, fractional or not positive).
std::optional<int> whole(const gate::Adapter& adapter, const recipe::Document& recipe, std::string_view name,
                         const cluster::Cluster& cluster) {
    const auto value = adapter.quantity(recipe, name, cluster);
    if (!value || *value < 1 || *value != std::floor(*value)) return std::nullopt;
    return static_cast<int>(*value);
}

/// The layout from the adapter's quantities alone, for a recipe whose model the simulator cannot
/// build or a GPU it does not know (then without capacity and peak).
diagnose::Layout layout_of(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster) {
    const auto hardware = sim::find_hardware(cluster.gpu);
    const auto quantity = [&](std::string_view name) { return whole(adapter, recipe, name, cluster); };
    diagnose::Layout layout;
    layout.tp = quantity("tp"), layout.pp = quantity("pp"), layout.vpp = quantity("vpp");
    layout.cp = quantity("cp"), layout.ep = quantity("ep"), layout.dp = quantity("dp");
    layout.nodes = quantity("nodes"), layout.gpus_per_node = quantity("gpus_per_node");
    layout.micro_batch = quantity("mbs");
    // Micro-batches per optimizer step, as the framework derives them (gbs / (mbs x dp) where the
    // global batch is given; 1 where the adapter derives the global batch from the micro batch).
    layout.num_microbatches = quantity("grad_accum");
    if (const auto recompute = adapter.quantity(recipe, "recompute", cluster)) {
        // The adapters' recompute quantity maps the recipe's setting to 0 none, 1 selective, 2 full.
        layout.recompute = *recompute >= 2 ? "full" : *recompute >= 1 ? "selective" : "none";
    }
    if (hardware) {
        layout.gpu_memory_gib = hardware->hbm_gib;
        layout.peak_tflops = peak_tflops(*hardware, sim::precision_of(recipe, adapter));
    }
    return layout;
}

/// Megatron prints step time, not tokens: tokens/s/GPU = global batch x sequence / (step x GPUs),
/// from the adapter's quantities (no model or GPU specs needed).
void fill_throughput(policy::Measurement& m, const recipe::Document& recipe, const gate::Adapter& adapter,
                     const cluster::Cluster& cluster, const diagnose::Layout& layout) {
    const auto gbs = adapter.quantity(recipe, "gbs", cluster);
    const auto seq_len = adapter.quantity(recipe, "seq_len", cluster);
    const auto world = adapter.quantity(recipe, "world", cluster);
    if (!m.tokens_per_s_per_gpu && m.step_time_s && *m.step_time_s > 0 && gbs && seq_len && world && *world > 0)
        m.tokens_per_s_per_gpu = *gbs * *seq_len / (*m.step_time_s * *world);
    if (m.peak_memory_gib && layout.gpu_memory_gib) m.facts["memory_headroom_gib"] = *layout.gpu_memory_gib - *m.peak_memory_gib;
}

}  // namespace

diagnose::Layout diagnosis_layout(const sim::SimInputs& in) {
    const sim::Layout& l = in.layout;
    diagnose::Layout layout;
    const int world = l.nodes * l.gpus_per_node;
    const int dp = std::max(1, world / std::max(1, l.tp * l.pp * l.cp));
    layout.tp = l.tp, layout.pp = l.pp, layout.vpp = l.vpp, layout.cp = l.cp, layout.ep = l.ep, layout.dp = dp;
    layout.gpus_per_node = l.gpus_per_node, layout.nodes = l.nodes;
    layout.micro_batch = l.mbs;
    layout.num_microbatches = std::max(1, l.gbs / std::max(1, l.mbs * dp));
    layout.recompute = recompute_name(l.recompute);
    layout.gpu_memory_gib = in.hardware.hbm_gib;
    layout.peak_tflops = peak_tflops(in.hardware, l.precision);
    return layout;
}

diagnose::Layout diagnosis_layout(const recipe::Document& recipe, const gate::Adapter& adapter,
                                  const cluster::Cluster& cluster) {
    const auto in = inputs_of(recipe, adapter, cluster, nullptr);
    return in ? diagnosis_layout(*in) : layout_of(recipe, adapter, cluster);
}

policy::Preflight preflight_of(const recipe::Document& recipe, const gate::Adapter& adapter,
                               const cluster::Cluster& cluster) {
    policy::Preflight p;
    const auto in = inputs_of(recipe, adapter, cluster, &p.problem);
    if (!in) return p;
    const sim::Estimate e = sim::estimate(in->hardware, in->model, in->layout);
    p.estimated = true;
    p.valid = e.valid;
    if (!e.valid) p.problem = e.problem;
    p.fits = e.fits;
    p.memory_gib = e.memory_gib.total;
    p.capacity_gib = e.memory_gib.capacity;
    p.step_time_s = e.step_time_s;
    p.tokens_per_s_per_gpu = e.tokens_per_s_per_gpu;
    return p;
}

int gpus_of(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster) {
    const auto world = adapter.quantity(recipe, "world", cluster);
    return world && *world >= 1 ? int(*world) : cluster.nodes * cluster.gpus_per_node;
}

Reading read_trial(const std::vector<std::filesystem::path>& logs, const recipe::Document& recipe,
                   const gate::Adapter& adapter, const cluster::Cluster& cluster) {
    Reading reading;
    diagnose::RunMetrics metrics;
    try {
        metrics = diagnose::parse_logs(logs, std::nullopt);
    } catch (const InputError& e) {
        reading.measured.status = "crash";
        reading.measured.bottleneck = "unknown";
        reading.evidence.push_back(e.what());
        return reading;
    }
    const auto in = inputs_of(recipe, adapter, cluster, nullptr);
    diagnose::Layout layout;
    layout = in ? diagnosis_layout(*in) : layout_of(recipe, adapter, cluster);
    const auto diagnosis = diagnose::diagnose(metrics, layout, diagnose::default_rules());
    policy::Measurement& m = reading.measured;
    m.status = std::string(diagnose::status_name(metrics.status));
    m.tokens_per_s_per_gpu = metrics.steady.tokens_per_s_per_gpu;
    m.tflops_per_gpu = metrics.steady.tflops_per_gpu;
    m.step_time_s = metrics.steady.step_time_s;
    // Acceptance compares two runs' medians, so its noise is the median's standard error
    // (1.2533 x 1.4826 x MAD / sqrt(n)), not the spread of single steps.
    if (metrics.steady.noise && metrics.steady.steps_used > 0)
        m.noise = 1.858 * *metrics.steady.noise / std::sqrt(double(metrics.steady.steps_used));
    m.peak_memory_gib = metrics.peak_memory_gib;
    m.bottleneck = diagnosis.bottleneck;
    m.explanation = diagnosis.explanation;
    m.facts = diagnosis.facts;
    if (const auto mfu = diagnosis.facts.find("mfu"); mfu != diagnosis.facts.end()) m.mfu = mfu->second;
    fill_throughput(m, recipe, adapter, cluster, layout);
    for (const auto& step : metrics.steps)
        if (step.loss && std::isfinite(*step.loss)) reading.losses.push_back(*step.loss);
    for (const auto& e : metrics.evidence) reading.evidence.push_back(fmt::format("{}: {}", e.line, e.text));
    return reading;
}

}  // namespace attune::campaign
