// Builds simulator inputs from published.csv rows (data/calibration/published.csv; each row's source
// and source_url name the publication). Settings the tables do not publish (recompute, etp) are
// filled from Megatron-Bridge's perf recipes for the same layout (NVIDIA-NeMo/Megatron-Bridge
// src/megatron/bridge/perf_recipes), as each row's columns say.

#include <attune/sim/calibration.hpp>

#include <attune/core/error.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

namespace attune::sim {
namespace {

// RFC 4180 fields: commas inside double quotes, "" for a quote.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
    bool quoted = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') records.back().back() += '"', ++i;
            else if (c == '"') quoted = false;
            else records.back().back() += c;
        } else if (c == '"') quoted = true;
        else if (c == ',') records.back().emplace_back();
        else if (c == '\n') records.emplace_back(1);
        else if (c != '\r') records.back().back() += c;
    }
    if (records.back().size() == 1 && records.back()[0].empty()) records.pop_back();
    return records;
}

int leading_int(const std::string& text, int fallback) {
    std::smatch match;
    static const std::regex number{R"(^\s*(\d+))"};
    return std::regex_search(text, match, number) ? std::stoi(match[1]) : fallback;
}

bool contains(const std::string& text, std::string_view needle) {
    return util::to_lower(text).find(needle) != std::string::npos;
}

std::optional<ModelShape> catalogued(std::string_view key) {
    const auto* entry = model::Catalogue::shipped().find(key, true);
    return entry ? std::optional<ModelShape>(entry->shape) : std::nullopt;
}

// The catalogue entry of a model named only in the `model` column (benchmark tables' names).
std::optional<std::string> catalogue_key_of_name(const std::string& name) {
    static const std::vector<std::pair<std::string, std::string>> aliases{
        {"qwen2.5 7b", "qwen2.5_7b"},     {"qwen2.5 32b", "qwen2.5_32b"}, {"gpt-3 175b", "gpt3_175b"},
        {"gpt3-5b", "gpt3_5b"},           {"gpt3-20b", "gpt3_20b"},       {"nemotron-8b", "nemotron_8b"},
        {"nemotron-22b", "nemotron_22b"},
        {"nemotron-15b", "nemotron_15b"}, {"nemotron_3_nano", "nemotron3_nano_30b_a3b"},
        {"nemotron v3 nano", "nemotron3_nano_30b_a3b"}, {"nemotron_3_super", "nemotron3_super_120b_a12b"},
        {"nemotron v3 super", "nemotron3_super_120b_a12b"}, {"nemotron-340b", "nemotron_340b"}};
    const std::string lowered = util::to_lower(name);
    for (const auto& [prefix, key] : aliases) {
        if (lowered.starts_with(prefix)) return key;
    }
    return std::nullopt;
}

// Models named only in the `model` column: published shapes in the name, or benchmark models.
std::optional<ModelShape> model_from_name(const std::string& name) {
    static const std::regex gpt{R"(h=(\d+), L=(\d+), heads=(\d+), V=(\d+))"};
    std::smatch match;
    if (std::regex_search(name, match, gpt)) {
        ModelShape m;
        m.hidden = std::stoi(match[1]), m.layers = std::stoi(match[2]), m.heads = std::stoi(match[3]);
        m.kv_heads = m.heads, m.vocab = std::stoi(match[4]), m.ffn = 4 * m.hidden, m.gated_mlp = false;
        return m;
    }
    const auto key = catalogue_key_of_name(name);
    return key ? catalogued(*key) : std::nullopt;
}

struct Columns {
    std::map<std::string, std::size_t> index;
    const std::string& get(const std::vector<std::string>& record, const std::string& name) const {
        static const std::string empty;
        const auto it = index.find(name);
        return it == index.end() || it->second >= record.size() ? empty : record[it->second];
    }
};

double number(const std::string& text) { return util::parse_number(util::trim(text)).value_or(0.0); }

// FLOPs per token in the non-causal convention of NeMo <= 25.07 and Megatron-LM r0.8 (NVIDIA/NeMo
// nemo/utils/flops_formulas.py before 6251117f4c; Narayanan et al. 2021, arXiv:2104.04473, §5.1).
double noncausal_flops_per_token(const ModelShape& m) {
    ModelShape shape = m;
    const double causal = flops_per_token(shape);
    shape.seq_len = 0;
    const double without_attention = flops_per_token(shape);
    return without_attention + 2.0 * (causal - without_attention);
}

// A source that states no tensor or pipeline size (the Megatron-LM strong-scaling endpoints) ran the
// layout its authors tuned: the fastest one that fits memory among tp ≤ 8 (inside a node), pipelines
// that divide the layers, interleaving and micro-batches of 1-4, keeping the published batch.
struct Configured {
    Layout layout;
    Estimate estimate;
};

Configured best_layout(const Hardware& hw, const ModelShape& m, Layout l, int gpus) {
    Configured best{l, {}};
    for (const int tp : {1, 2, 4, 8}) {
        for (int pp = 1; pp <= 32; ++pp) {
            if (m.layers % pp != 0 || gpus % (tp * pp * l.cp) != 0) continue;
            for (const int vpp : {1, 2, 3, 4, 6, 8}) {
                if (m.layers % (pp * vpp) != 0 || (vpp > 1 && pp == 1)) continue;
                for (const int mbs : {1, 2, 4}) {
                    l.tp = tp, l.pp = pp, l.vpp = vpp, l.mbs = mbs, l.dp = 0, l.sequence_parallel = tp > 1;
                    const Estimate e = estimate(hw, m, l);
                    if (e.valid && e.fits && e.tokens_per_s_per_gpu > best.estimate.tokens_per_s_per_gpu) best = {l, e};
                }
            }
        }
    }
    return best;
}

// Automodel's rows leave recompute to the recipe YAML ("see recipe YAML"). Its LoRA benchmark recipes
// that shard with tp > 1 (examples/llm_benchmark custom_llama3_3_70b_instruct_peft_benchmark*.yaml,
// custom_qwen2_5_32b_peft_benchmark*.yaml) set `activation_checkpointing: true`, which wraps every
// decoder layer (full recompute); the tp = 1 ones (llama3_1_8b_, qwen2_5_7b_peft_benchmark.yaml) do not.
bool automodel_lora_checkpoints(const std::string& framework, const std::string& recompute, const Layout& l) {
    return contains(framework, "automodel") && contains(recompute, "see recipe yaml") && l.lora && l.tp > 1;
}

// NeMo's own performance tables (NeMo 1.x up to 24.07, NeMo 2.0 from 24.09), not Automodel's and not
// Megatron-Bridge's; `release` is the table's "NeMo YY.MM".
bool nemo_table(const std::string& framework) {
    return util::to_lower(framework).starts_with("nemo") && !contains(framework, "automodel");
}

bool nemo_1x(const std::string& framework, const std::string& release) {
    static const std::regex version{R"(nemo (\d\d)\.(\d\d))"};
    std::smatch match;
    const std::string lowered = util::to_lower(release);
    if (!nemo_table(framework) || !std::regex_search(lowered, match, version)) return false;
    const int year = std::stoi(match[1]), month = std::stoi(match[2]);
    return year < 24 || (year == 24 && month <= 7);
}

// NeMo 1.x adapts only the fused QKV projection by default (examples/nlp/language_modeling/tuning/conf/
// megatron_gpt_finetuning_config.yaml: `lora_tuning.target_modules: ['attention_qkv']`); Automodel's
// benchmark recipes adapt `*_proj`.
LoraTargets lora_targets(const std::string& framework, const std::string& release) {
    return nemo_1x(framework, release) ? LoraTargets::attention_qkv : LoraTargets::all_projections;
}

// NeMo's benchmark runs reduce gradients in bf16: NeMo 1.x's H100 launcher runs set
// `+training.model.optim.grad_sync_dtype=bf16` (NeMo-Framework-Launcher examples/training/gpt/h100/
// 20b_fp8_1node.sh, llama/h100/llama2_70b_bf16.sh), NeMo 2.0's performance recipes and scripts set
// `recipe.trainer.plugins.grad_reduce_in_fp32 = False`.
GradReduce grad_reduce(const std::string& framework) {
    return nemo_table(framework) ? GradReduce::bf16 : GradReduce::fp32;
}

void build_row(const Columns& c, const std::vector<std::string>& r, CalibrationRow& row) {
    const std::string& model_key = c.get(r, "model_key");
    std::optional<ModelShape> model = model_key.empty() ? model_from_name(c.get(r, "model")) : catalogued(model_key);
    row.model_key = model_key.empty() ? catalogue_key_of_name(c.get(r, "model")).value_or("") : model_key;
    if (model) row.model = *model;
    // The `system` column names the machine measured; a 500 W-capped H100 (Grand Teton) is its own part.
    const bool capped = contains(c.get(r, "system"), "500w") && contains(c.get(r, "gpu"), "h100");
    row.framework = c.get(r, "framework"), row.gpu = capped ? "h100_500w" : util::to_lower(c.get(r, "gpu"));
    const auto hardware = find_hardware(row.gpu);
    if (!model) return void(row.why_not = "model not in the catalogue");
    if (!hardware) return void(row.why_not = "GPU not in the catalogue");
    model->seq_len = row.seq_len = row.model.seq_len = leading_int(c.get(r, "seq_len"), 0);

    Layout l;
    l.tp = leading_int(c.get(r, "tp"), 1), l.pp = leading_int(c.get(r, "pp"), 1), l.cp = leading_int(c.get(r, "cp"), 1);
    l.ep = leading_int(c.get(r, "ep"), 1), l.etp = leading_int(c.get(r, "etp"), 1), l.vpp = leading_int(c.get(r, "vp"), 1);
    l.mbs = leading_int(c.get(r, "mbs"), 1), l.gbs = leading_int(c.get(r, "gbs"), 0);
    const int gpus = leading_int(c.get(r, "num_gpus"), 0);
    const int model_ranks = l.tp * l.pp * l.cp;
    const int dp = std::max(1, gpus / model_ranks);   // the long-sequence table's products do not match #GPUs
    const int world = model_ranks * dp;
    l.gpus_per_node = std::min(8, world), l.nodes = world / l.gpus_per_node;
    while (l.gbs % (l.mbs * dp) != 0 && l.mbs > 1) --l.mbs;
    if (l.gbs < dp) l.gbs = dp;   // a published batch smaller than DP (torchtitan CP rows): one sequence per rank
    const std::string precision = c.get(r, "precision");
    l.precision = contains(precision, "fp8") || contains(precision, "float8") || contains(precision, "mx") ||
                          contains(precision, "fp4") ? Precision::fp8 : Precision::bf16;
    const std::string sharding = c.get(r, "fsdp_dist_opt");
    if (contains(sharding, "fsdp")) {
        l.sharding = Sharding::fsdp;
        static const std::regex shard{R"((\d+)-way|dp_shard=(\d+))"};
        std::smatch match;
        // The published degree is the data-parallel shard; torchtitan's FSDP2 mesh (dp_shard_cp) also spans
        // the context-parallel ranks.
        if (std::regex_search(sharding, match, shard)) l.fsdp_shard = std::stoi(match[1].matched ? match[1] : match[2]) * l.cp;
    }
    const std::string recompute = c.get(r, "recompute");
    const std::string framework = c.get(r, "framework");
    const std::string task = c.get(r, "task");
    l.lora = contains(task, "lora") || contains(task, "peft");
    l.lora_targets = lora_targets(framework, c.get(r, "release"));
    l.grad_reduce = grad_reduce(framework);
    if (contains(recompute, "full") || automodel_lora_checkpoints(framework, recompute, l))
        l.recompute = Recompute::full;
    else if (contains(recompute, "selective") || contains(recompute, "sac"))
        l.recompute = contains(framework, "torchtitan") ? Recompute::saved_ops : Recompute::selective;
    // Megatron's block method recomputes only `recompute_num_layers` layers per stage ("layers=N").
    static const std::regex recompute_layers{R"(method=block,\s*layers=(\d+))"};
    std::smatch layers_match;
    if (l.recompute == Recompute::full && std::regex_search(recompute, layers_match, recompute_layers))
        l.recompute_layers = std::stoi(layers_match[1]);
    const bool megatron = contains(framework, "megatron") || (contains(framework, "nemo") && !contains(framework, "automodel"));
    l.sequence_parallel = l.tp > 1;
    // PyTorch-native stacks lack Transformer Engine's fused kernels unless the row says it ran them
    // (Automodel's "kernels=TE + ..." column).
    l.fusions = megatron || contains(c.get(r, "notes"), "kernels=te");
    l.megatron_core = megatron;
    const std::string notes = c.get(r, "notes");
    // torchtitan's rows say async TP (which overlaps its collectives with the GEMMs) in either column.
    l.tp_comm_overlap = megatron || contains(precision, "asynctp") || contains(notes, "async tp");
    l.fp8_rowwise = contains(precision, "rowwise");
    l.fp8_param_gather = contains(precision, "fp8 all-gather");
    l.cuda_graphs = contains(notes, "cuda_graph");
    l.dispatcher = contains(notes, "hybridep") || contains(notes, "deepep") || contains(notes, "flex") ? Dispatcher::flex
                                                                                                       : Dispatcher::alltoall;
    row.published_tokens = number(c.get(r, "tokens_per_sec_per_gpu"));
    if (row.published_tokens <= 0) {
        const double tflops = number(c.get(r, "tflops_per_gpu"));
        row.published_tokens = tflops * 1e12 / noncausal_flops_per_token(*model);
    }
    static const std::regex mem{R"(mem ([0-9.]+) GiB)"};
    std::smatch match;
    if (std::regex_search(notes, match, mem)) row.published_mem_gib = std::stod(match[1]);

    // NeMo's long-sequence tables give the best configuration without context parallelism, or "OOM": the
    // row's layout with cp 1 (its ranks to data parallelism) must not fit, even recomputing every layer.
    if (contains(notes, "without cp") && contains(notes, "oom")) {
        Layout no_cp = l;
        no_cp.cp = 1, no_cp.recompute = Recompute::full, no_cp.dp = 0;
        no_cp.gbs = std::max(l.gbs, world / (l.tp * l.pp) * l.mbs);   // at least one sequence per rank
        const Estimate e = estimate(*hardware, *model, no_cp);
        row.known_oom = true;
        row.predicted_oom = e.valid && !e.fits;
    }

    const bool unpublished_layout = util::trim(c.get(r, "tp")).empty() && util::trim(c.get(r, "pp")).empty();
    if (unpublished_layout) l.gbs = leading_int(c.get(r, "gbs"), l.gbs);   // not widened to the tp = 1 dp
    Configured chosen = unpublished_layout ? best_layout(*hardware, *model, l, gpus) : Configured{l, estimate(*hardware, *model, l)};
    // An MoE row that states no expert-parallel size (Automodel's "-") ran the one its recipe tuned:
    // the fastest power of two that divides the experts and fits in a pipeline stage.
    if (model->experts > 0 && leading_int(c.get(r, "ep"), 0) == 0 && chosen.estimate.valid) {
        for (int ep = 2; ep <= model->experts && ep * l.etp <= gpus / l.pp; ep *= 2) {
            l.ep = ep;
            const Estimate candidate = estimate(*hardware, *model, l);
            const Estimate& e = chosen.estimate;
            if (candidate.valid && (candidate.fits || !e.fits) && candidate.tokens_per_s_per_gpu > e.tokens_per_s_per_gpu) {
                chosen = {l, candidate};
            }
        }
    }
    const Estimate& e = chosen.estimate;
    if (unpublished_layout && !e.valid) return void(row.why_not = "no layout fits");
    if (!e.valid) return void(row.why_not = e.problem);
    row.modelled = row.published_tokens > 0;
    row.layout = chosen.layout;
    row.estimate = e;
    row.error = row.modelled ? e.tokens_per_s_per_gpu / row.published_tokens - 1.0 : 0.0;
    if (row.published_mem_gib > 0) row.mem_error = e.memory_gib.total / row.published_mem_gib - 1.0;
}

}  // namespace

Accuracy accuracy_of(std::vector<double> abs_errors) {
    Accuracy a;
    a.rows = abs_errors.size();
    if (abs_errors.empty()) return a;
    const auto within = std::count_if(abs_errors.begin(), abs_errors.end(), [](double e) { return e <= 0.2; });
    a.within_20 = double(within) / double(abs_errors.size());
    std::sort(abs_errors.begin(), abs_errors.end());
    a.median_abs_error = abs_errors[abs_errors.size() / 2];
    return a;
}

CalibrationSummary run_calibration(const std::filesystem::path& published_csv) {
    const auto records = parse_csv(util::read_text_file(published_csv));
    if (records.empty()) throw InputError(fmt::format("{}:1: expected a header row", published_csv.string()));
    Columns columns;
    for (std::size_t i = 0; i < records[0].size(); ++i) columns.index[records[0][i]] = i;
    CalibrationSummary summary;
    std::vector<double> errors, mem_errors;
    int line = 1;
    for (std::size_t i = 1; i < records.size(); ++i) {
        CalibrationRow row;
        row.line = ++line;   // no record in the file spans lines
        const auto& r = records[i];
        row.label = fmt::format("{} {}x{} {} s={}", columns.get(r, "model"), columns.get(r, "num_gpus"),
                                columns.get(r, "gpu"), columns.get(r, "precision").substr(0, 12), columns.get(r, "seq_len"));
        build_row(columns, r, row);
        errors.push_back(row.modelled ? std::abs(row.error) : 1.0);
        if (row.published_mem_gib > 0) mem_errors.push_back(row.modelled ? std::abs(row.mem_error) : 1.0);
        summary.known_oom += row.known_oom ? 1 : 0;
        summary.predicted_oom += row.known_oom && row.predicted_oom ? 1 : 0;
        summary.rows.push_back(std::move(row));
    }
    summary.speed = accuracy_of(std::move(errors));
    summary.memory = accuracy_of(std::move(mem_errors));
    return summary;
}

std::string format_calibration(const CalibrationSummary& summary) {
    std::string out = fmt::format("{:>5}  {:<64} {:>10} {:>10} {:>8}  {:>20}\n", "line", "row", "published", "estimated",
                                  "error", "mem pub/est");
    for (const auto& row : summary.rows) {
        const std::string mem = row.published_mem_gib > 0 ? fmt::format("{:.1f}/{:.1f} {:+.0f}%", row.published_mem_gib,
                                                                         row.estimate.memory_gib.total, 100 * row.mem_error)
                                                          : "";
        if (row.modelled) {
            out += fmt::format("{:>5}  {:<64.64} {:>10.1f} {:>10.1f} {:>+7.1f}%  {:>20}\n", row.line, row.label,
                               row.published_tokens, row.estimate.tokens_per_s_per_gpu, 100 * row.error, mem);
        } else {
            out += fmt::format("{:>5}  {:<64.64} {:>10.1f} {:>10} {:>8}  ({})\n", row.line, row.label,
                               row.published_tokens, "-", "miss", row.why_not);
        }
    }
    for (const auto& [label, a] : {std::pair{"", &summary.speed}, std::pair{"peak memory: ", &summary.memory}})
        out += fmt::format("{}rows {}, within ±20%: {:.1f}%, median |error|: {:.1f}%\n", label, a->rows, 100 * a->within_20,
                           100 * a->median_abs_error);
    out += fmt::format("known out of memory: rows {}, predicted out of memory: {}\n", summary.known_oom, summary.predicted_oom);
    return out;
}

std::string explain_calibration_row(const CalibrationRow& row) {
    if (!row.modelled) return fmt::format("line {}: {}: not modelled ({})\n", row.line, row.label, row.why_not);
    const Layout& l = row.layout;
    const Estimate& e = row.estimate;
    const Breakdown& b = e.breakdown_s;
    std::string out = fmt::format("line {}: {}\n", row.line, row.label);
    out += fmt::format("  layout: {} nodes x {} GPUs, tp {} pp {} vpp {} cp {} ep {} etp {}, micro batch {}, global batch {}\n",
                       l.nodes, l.gpus_per_node, l.tp, l.pp, l.vpp, l.cp, l.ep, l.etp, l.mbs, l.gbs);
    out += fmt::format("  tokens/s/GPU: published {:.1f}, estimated {:.1f} ({:+.1f}%); MFU {:.3f}\n", row.published_tokens,
                       e.tokens_per_s_per_gpu, 100 * row.error, e.mfu);
    out += fmt::format("  step {:.4f} s: compute {:.4f}, tp comm {:.4f}, pp bubble {:.4f}, dp comm {:.4f}, cp comm {:.4f}, "
                       "ep comm {:.4f}, overhead {:.4f}\n", e.step_time_s, b.compute, b.tp_comm, b.pp_bubble, b.dp_comm,
                       b.cp_comm, b.ep_comm, b.overhead);
    const Memory& m = e.memory_gib;
    out += fmt::format("  memory {:.1f} of {:.1f} GiB{}: params {:.1f}, grads {:.1f}, optimizer {:.1f}, activations {:.1f}, other {:.1f}\n",
                       m.total, m.capacity, e.fits ? "" : " (does not fit)", m.params, m.grads, m.optimizer, m.activations, m.other);
    return out;
}

}  // namespace attune::sim
