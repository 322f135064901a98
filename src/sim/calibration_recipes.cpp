// The calibration through recipes: published rows rendered as their family's own recipe and read back
// through its adapter, as `attune sim estimate` reads a user's recipe (docs/simulator.md).
#include <attune/sim/calibration.hpp>

#include <attune/core/error.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <map>

namespace attune::sim {
namespace {

struct Template {
    std::string framework;   ///< rows whose `framework` column contains it
    const gate::Adapter* adapter = nullptr;
    std::string extension;
    std::string text;
    std::map<std::string, std::map<std::string, std::string>> spell;
};

/// The placeholders a template may spell, and the values each takes.
const std::map<std::string, std::vector<std::string>>& spellable() {
    static const std::map<std::string, std::vector<std::string>> values{
        {"recompute", {"none", "selective", "full", "saved_ops"}}, {"fp8", {"true", "false"}},
        {"fp8_rowwise", {"true", "false"}}, {"fp8_param_gather", {"true", "false"}}, {"tp_comm_overlap", {"true", "false"}},
        {"cuda_graphs", {"true", "false"}}, {"dispatcher", {"alltoall", "allgather", "flex"}},
        {"distributed_optimizer", {"true", "false"}}, {"grad_reduce_bf16", {"true", "false"}}, {"lora", {"true", "false"}},
        {"lora_targets", {"attention_qkv", "all_projections"}}, {"fusions", {"true", "false"}}};
    return values;
}

std::vector<std::string> names_of(const std::map<std::string, std::vector<std::string>>& values) {
    std::vector<std::string> names;
    for (const auto& [name, ignored] : values) names.push_back(name);
    return names;
}

std::vector<Template> load_templates(const std::filesystem::path& path, const gate::Rules& rules) {
    const util::DataFile file(path);
    file.expect_fields(file.root(), {"families"});
    std::vector<Template> out;
    for (const auto& node : file.root()["families"]) {
        file.expect_fields(node, {"framework", "adapter", "extension", "template", "spell"});
        Template t;
        t.framework = util::to_lower(file.string(node["framework"], "framework"));
        const std::string adapter = file.string(node["adapter"], "adapter");
        t.adapter = rules.find(adapter);
        if (t.adapter == nullptr) file.fail(node["adapter"], "no adapter '" + adapter + "' in gate/frameworks/");
        t.extension = file.string(node["extension"], "extension");
        t.text = file.string(node["template"], "template");
        for (const auto& placeholder : node["spell"]) {
            const std::vector<std::string> names = names_of(spellable());
            const std::string name = names[file.one_of(placeholder.first, "placeholder", names)];
            for (const auto& value : placeholder.second) {
                const auto& allowed = spellable().at(name);
                t.spell[name][allowed[file.one_of(value.first, name + " value", allowed)]] = file.string(value.second, name);
            }
        }
        out.push_back(std::move(t));
    }
    return out;
}

const char* recompute_name(Recompute r) {
    switch (r) {
        case Recompute::none: return "none";
        case Recompute::selective: return "selective";
        case Recompute::full: return "full";
        case Recompute::saved_ops: return "saved_ops";
    }
    return "none";
}

/// The row's layout and model in the template's placeholders.
std::map<std::string, std::string> placeholders(const CalibrationRow& row) {
    const Layout& l = row.layout;
    const ModelShape& m = row.model;
    const int world = l.nodes * l.gpus_per_node;
    const int dp = world / (l.tp * l.pp * l.cp);
    const int dp_shard = l.fsdp_shard > 0 ? l.fsdp_shard / l.cp : dp;
    const auto flag = [](bool on) { return std::string(on ? "true" : "false"); };
    return {{"model", row.model_key}, {"seq_len", std::to_string(row.seq_len)},
            {"mbs", std::to_string(l.mbs)}, {"gbs", std::to_string(l.gbs)}, {"tp", std::to_string(l.tp)},
            {"pp", std::to_string(l.pp)}, {"cp", std::to_string(l.cp)}, {"ep", std::to_string(l.ep)},
            {"dp_shard", std::to_string(dp_shard)}, {"dp_replicate", std::to_string(std::max(1, dp / std::max(1, dp_shard)))},
            {"recompute", recompute_name(l.recompute)}, {"fp8", flag(l.precision == Precision::fp8)},
            {"fp8_rowwise", flag(l.fp8_rowwise)}, {"fp8_param_gather", flag(l.fp8_param_gather)},
            {"tp_comm_overlap", flag(l.tp_comm_overlap)}, {"vpp", std::to_string(l.vpp)}, {"etp", std::to_string(l.etp)},
            // Full recompute of every layer, or of the first N layers of each stage (Megatron's block method).
            {"recompute_method", l.recompute_layers > 0 ? "block" : "uniform"},
            {"recompute_num_layers", std::to_string(l.recompute_layers > 0 ? l.recompute_layers : 1)},
            {"sequence_parallel", flag(l.sequence_parallel)},
            {"distributed_optimizer", flag(l.sharding == Sharding::distributed_optimizer)},
            {"overlap_grad_reduce", flag(l.overlap_grad_reduce)}, {"overlap_param_gather", flag(l.overlap_param_gather)},
            {"grad_reduce_bf16", flag(l.grad_reduce == GradReduce::bf16)}, {"cuda_graphs", flag(l.cuda_graphs)},
            {"moe_grouped_gemm", flag(l.moe_grouped_gemm)}, {"flash_attention", flag(l.flash_attention)},
            {"dispatcher", l.dispatcher == Dispatcher::flex ? "flex" : l.dispatcher == Dispatcher::allgather ? "allgather" : "alltoall"},
            {"layers", std::to_string(m.layers)}, {"hidden", std::to_string(m.hidden)}, {"ffn", std::to_string(m.ffn)},
            {"heads", std::to_string(m.heads)}, {"kv_heads", std::to_string(m.kv_heads > 0 ? m.kv_heads : m.heads)},
            {"vocab", std::to_string(m.vocab)}, {"lora", flag(l.lora)}, {"fusions", flag(l.fusions)},
            {"lora_targets", l.lora_targets == LoraTargets::attention_qkv ? "attention_qkv" : "all_projections"}};
}

void replace_all(std::string& text, const std::string& name, const std::string& written) {
    for (auto at = text.find("{" + name + "}"); at != std::string::npos; at = text.find("{" + name + "}", at + written.size()))
        text.replace(at, name.size() + 2, written);
}

/// The template with its spelled placeholders first (a spelling may hold plain ones), then the plain ones.
std::string render(const Template& t, const std::map<std::string, std::string>& values) {
    std::string text = t.text;
    for (const auto& [name, spellings] : t.spell) {
        const auto& value = values.at(name);
        const auto found = spellings.find(value);
        if (found == spellings.end()) throw InputError("the template spells no '" + value + "' for {" + name + "}");
        replace_all(text, name, found->second);
    }
    for (const auto& [name, value] : values) replace_all(text, name, value);
    return text;
}

/// The first family whose `framework` the row's column contains (so "nemo automodel" can come before "nemo").
const Template* claimant(const std::vector<Template>& templates, const CalibrationRow& row) {
    const std::string framework = util::to_lower(row.framework);
    for (const auto& t : templates)
        if (framework.find(t.framework) != std::string::npos) return &t;
    return nullptr;
}

}  // namespace

std::vector<RecipeCalibration> calibrate_through_recipes(const CalibrationSummary& summary,
                                                         const std::filesystem::path& templates_yaml) {
    std::vector<RecipeCalibration> out;
    const auto templates = load_templates(templates_yaml, gate::default_rules());
    for (const Template& t : templates) {
        RecipeCalibration family{t.framework, t.adapter->name(), {}, {}, {}, {}};
        std::vector<double> direct, through;
        for (const auto& row : summary.rows) {
            if (!row.modelled || claimant(templates, row) != &t) continue;
            try {
                const auto recipe = recipe::Document::parse(render(t, placeholders(row)), fmt::format("published.csv:{}{}", row.line, t.extension));
                cluster::Cluster cluster;
                cluster.gpu = row.gpu, cluster.nodes = row.layout.nodes, cluster.gpus_per_node = row.layout.gpus_per_node;
                const auto in = from_recipe(recipe, *t.adapter, cluster);
                const Estimate e = estimate(in.hardware, in.model, in.layout);
                const double error = e.valid ? e.tokens_per_s_per_gpu / row.published_tokens - 1.0 : -1.0;
                family.errors.emplace_back(row.line, error);
                through.push_back(std::abs(error));
                direct.push_back(std::abs(row.error));
            } catch (const InputError& e) {
                family.problems.push_back(fmt::format("line {}: {}", row.line, e.what()));
            }
        }
        family.direct = accuracy_of(std::move(direct));
        family.through_recipe = accuracy_of(std::move(through));
        out.push_back(std::move(family));
    }
    return out;
}

std::string format_recipe_calibration(const std::vector<RecipeCalibration>& families) {
    std::string out;
    for (const auto& f : families) {
        out += fmt::format("{} rows through {} recipes: rows {}, within ±20%: {:.1f}%, median |error|: {:.1f}% (the same rows from their "
                           "layouts: {:.1f}%, {:.1f}%)\n",
                           f.framework, f.family, f.through_recipe.rows, 100 * f.through_recipe.within_20, 100 * f.through_recipe.median_abs_error,
                           100 * f.direct.within_20, 100 * f.direct.median_abs_error);
        for (const auto& [line, error] : f.errors) out += fmt::format("  line {:>4}: {:+.1f}%\n", line, 100 * error);
        for (const auto& problem : f.problems) out += "  not read: " + problem + "\n";
    }
    const Accuracy all = recipe_calibration_overall(families);
    out += fmt::format("all rows through recipes: rows {}, within ±20%: {:.1f}%, median |error|: {:.1f}%\n", all.rows,
                       100 * all.within_20, 100 * all.median_abs_error);
    return out;
}

Accuracy recipe_calibration_overall(const std::vector<RecipeCalibration>& families) {
    std::vector<double> errors;
    for (const auto& f : families) {
        for (const auto& [line, error] : f.errors) errors.push_back(std::abs(error));
        errors.insert(errors.end(), f.problems.size(), 1.0);   // a row not read is a miss
    }
    return accuracy_of(std::move(errors));
}

}  // namespace attune::sim
