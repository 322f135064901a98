#include <attune/diagnose/diagnosis.hpp>

#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/strings.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>

namespace attune::diagnose {
namespace {

constexpr std::array k_ops = {"<=", ">=", "==", "!=", "<", ">"};

Condition parse_condition(const std::string& text, const std::string& where) {
    for (const std::string_view op : k_ops) {
        const auto at = text.find(op);
        if (at == std::string::npos) {
            continue;
        }
        const auto fact = util::trim(std::string_view(text).substr(0, at));
        const auto number = util::parse_number(util::trim(std::string_view(text).substr(at + op.size())));
        if (fact.empty() || !number) {
            break;
        }
        return {std::string(fact), std::string(op), *number};
    }
    throw InputError(where + ": condition '" + text + "': expected 'fact op number' with op one of < <= > >= == !=");
}

bool holds(const Condition& condition, const std::map<std::string, double>& facts) {
    const auto found = facts.find(condition.fact);
    if (found == facts.end()) {
        return false;
    }
    const double left = found->second;
    const double right = condition.value;
    if (condition.op == "<") return left < right;
    if (condition.op == "<=") return left <= right;
    if (condition.op == ">") return left > right;
    if (condition.op == ">=") return left >= right;
    if (condition.op == "==") return left == right;
    return left != right;
}

Rule parse_rule(const util::DataFile& file, const YAML::Node& node) {
    file.expect_fields(node, {"name", "bottleneck", "headroom", "when", "explanation"});
    Rule rule;
    rule.name = node["name"] ? file.string(node["name"], "name") : "";
    rule.bottleneck = node["bottleneck"] ? file.string(node["bottleneck"], "bottleneck") : "";
    rule.headroom = node["headroom"] ? file.string(node["headroom"], "headroom") : "";
    rule.explanation = node["explanation"] ? file.string(node["explanation"], "explanation") : "";
    if (rule.name.empty() || (rule.bottleneck.empty() && rule.headroom.empty()) || !node["when"].IsSequence())
        file.fail(node, "rule '" + rule.name + "': expected keys name, when (a list) and bottleneck or headroom");
    const auto rule_where = file.where(node) + ": rule '" + rule.name + "'";
    for (const auto& condition : node["when"]) rule.conditions.push_back(parse_condition(file.string(condition, "a condition"), rule_where));
    return rule;
}

void put(std::map<std::string, double>& facts, const std::string& name, const std::optional<double>& value) {
    if (value) {
        facts[name] = *value;
    }
}

void put(std::map<std::string, double>& facts, const std::string& name, const std::optional<int>& value) {
    if (value) {
        facts[name] = *value;
    }
}

}  // namespace

RuleSet load_rules(const std::filesystem::path& path) {
    const util::DataFile file(path);
    file.expect_fields(file.root(), {"rules"});
    if (!file.root()["rules"].IsSequence()) file.fail(file.root(), "expected a top-level 'rules' list");
    RuleSet set;
    for (const auto& node : file.root()["rules"]) set.rules.push_back(parse_rule(file, node));
    return set;
}

RuleSet default_rules() {
    return load_rules(data_dir() / "skills" / "diagnosis.yaml");
}

std::map<std::string, double> facts_of(const RunMetrics& metrics, const Layout& layout) {
    std::map<std::string, double> facts;
    facts["status_" + std::string(status_name(metrics.status))] = 1;
    facts["failed"] = metrics.status == Status::ok ? 0 : 1;
    facts["oom_host_memory"] = metrics.cause == k_host_memory ? 1 : 0;
    put(facts, "noise", metrics.steady.noise);
    put(facts, "step_time_s", metrics.steady.step_time_s);
    put(facts, "tokens_per_s_per_gpu", metrics.steady.tokens_per_s_per_gpu);
    put(facts, "tflops_per_gpu", metrics.steady.tflops_per_gpu);
    put(facts, "peak_memory_gib", metrics.peak_memory_gib);
    put(facts, "tp", layout.tp);
    put(facts, "pp", layout.pp);
    put(facts, "vpp", layout.vpp);
    put(facts, "cp", layout.cp);
    put(facts, "ep", layout.ep);
    put(facts, "dp", layout.dp);
    put(facts, "gpus_per_node", layout.gpus_per_node);
    put(facts, "nodes", layout.nodes);
    put(facts, "micro_batch", layout.micro_batch);
    put(facts, "num_microbatches", layout.num_microbatches);
    put(facts, "gpu_memory_gib", layout.gpu_memory_gib);
    put(facts, "peak_tflops", layout.peak_tflops);
    if (layout.recompute) {
        facts["recompute_full"] = *layout.recompute == "full" ? 1 : 0;
        facts["recompute_selective"] = *layout.recompute == "selective" ? 1 : 0;
    }
    if (metrics.steady.tflops_per_gpu && layout.peak_tflops && *layout.peak_tflops > 0) {
        facts["mfu"] = *metrics.steady.tflops_per_gpu / *layout.peak_tflops;
    }
    if (metrics.peak_memory_gib && layout.gpu_memory_gib && *layout.gpu_memory_gib > 0) {
        facts["memory_fraction"] = *metrics.peak_memory_gib / *layout.gpu_memory_gib;
    }
    if (layout.pp && layout.num_microbatches && *layout.num_microbatches > 0) {
        facts["bubble_fraction"] = double(*layout.pp - 1) / (double(layout.vpp.value_or(1)) * *layout.num_microbatches);
    }
    if (layout.tp && layout.gpus_per_node && *layout.gpus_per_node > 0) {
        facts["tp_over_node"] = double(*layout.tp) / *layout.gpus_per_node;
    }
    return facts;
}

Diagnosis diagnose(const RunMetrics& metrics, const Layout& layout, const RuleSet& rules) {
    Diagnosis diagnosis;
    diagnosis.bottleneck = "unknown";
    diagnosis.facts = facts_of(metrics, layout);
    for (const auto& rule : rules.rules) {
        const bool all = std::all_of(rule.conditions.begin(), rule.conditions.end(),
                                     [&](const Condition& c) { return holds(c, diagnosis.facts); });
        if (!all) {
            continue;
        }
        if (!rule.bottleneck.empty() && diagnosis.rule.empty()) {
            diagnosis.bottleneck = rule.bottleneck;
            diagnosis.rule = rule.name;
            diagnosis.explanation = rule.explanation;
        }
        if (!rule.headroom.empty()) {
            diagnosis.headroom.push_back(rule.headroom);
        }
    }
    return diagnosis;
}

}  // namespace attune::diagnose
