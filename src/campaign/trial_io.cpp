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

diagnose::Layout diagnosis_layout(const sim::SimInputs& in) {
    const sim::Layout& l = in.layout;
    diagnose::Layout layout;
    const int world = l.nodes * l.gpus_per_node;
    const int dp = std::max(1, world / std::max(1, l.tp * l.pp * l.cp));
    layout.tp = l.tp, layout.pp = l.pp, layout.vpp = l.vpp, layout.cp = l.cp, layout.ep = l.ep, layout.dp = dp;
    layout.gpus_per_node = l.gpus_per_node, layout.nodes = l.nodes;
    layout.micro_batch = l.mbs;
    layout.num_microbatches = std::max(1, l.gbs / std::max(1, l.mbs * dp));
    constexpr const char* recompute_names[] = {"none", "selective", "full"};
    layout.recompute = recompute_names[static_cast<int>(l.recompute)];
    layout.gpu_memory_gib = in.hardware.hbm_gib;
    layout.peak_tflops = l.precision == sim::Precision::fp8 ? in.hardware.fp8_tflops : in.hardware.bf16_tflops;
    return layout;
}

/// Megatron prints step time, not tokens: tokens/s/GPU = global batch x sequence / (step x GPUs).
void fill_throughput(policy::Measurement& m, const sim::SimInputs& in) {
    const int world = in.layout.nodes * in.layout.gpus_per_node;
    if (!m.tokens_per_s_per_gpu && m.step_time_s && *m.step_time_s > 0 && world > 0)
        m.tokens_per_s_per_gpu = double(in.layout.gbs) * in.model.seq_len / (*m.step_time_s * world);
    if (m.peak_memory_gib) m.facts["memory_headroom_gib"] = in.hardware.hbm_gib - *m.peak_memory_gib;
}

}  // namespace

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
    const auto layout = in ? diagnosis_layout(*in) : diagnose::Layout{};
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
    if (in) fill_throughput(m, *in);
    for (const auto& step : metrics.steps)
        if (step.loss && std::isfinite(*step.loss)) reading.losses.push_back(*step.loss);
    for (const auto& e : metrics.evidence) reading.evidence.push_back(fmt::format("{}: {}", e.line, e.text));
    return reading;
}

}  // namespace attune::campaign
