#pragma once

#include <attune/diagnose/run_metrics.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attune::diagnose {

/// The parallel layout and hardware of the run, as far as the caller knows it; every field optional.
struct Layout {
    std::optional<int> tp, pp, vpp, cp, ep, dp;
    std::optional<int> gpus_per_node, nodes;
    std::optional<int> micro_batch, num_microbatches;
    std::optional<std::string> recompute;      ///< none, selective or full
    std::optional<double> gpu_memory_gib;      ///< capacity of one GPU
    std::optional<double> peak_tflops;         ///< dense peak TFLOP/s of one GPU for the dtype in use
};

/// One condition of a rule: `fact op value`, e.g. `memory_fraction > 0.92`.
struct Condition {
    std::string fact;
    std::string op;  ///< one of < <= > >= == !=
    double value = 0;
};

/// A rule of skills/diagnosis.yaml: when all conditions hold, it names a bottleneck (or a headroom).
struct Rule {
    std::string name;
    std::string bottleneck;  ///< empty for headroom-only rules
    std::string headroom;    ///< what the spare resource can buy, if this rule finds one
    std::vector<Condition> conditions;
    std::string explanation;
};

/// The bottleneck rules, in priority order (the first bottleneck rule that holds wins).
struct RuleSet {
    std::vector<Rule> rules;
};

/// Reads the rules file; throws InputError naming the file and the key when it is malformed.
RuleSet load_rules(const std::filesystem::path& path);

/// The rules shipped with attune: <data_dir>/skills/diagnosis.yaml.
RuleSet default_rules();

/// What the rules concluded, with the facts they read.
struct Diagnosis {
    std::string bottleneck;                 ///< "unknown" when no rule holds
    std::string rule;                       ///< the rule that named it
    std::string explanation;
    std::vector<std::string> headroom;      ///< spare resources and what they buy
    std::map<std::string, double> facts;    ///< the numbers the rules were evaluated on
};

/// The facts the rules can test: status_* flags, mfu, memory_fraction, bubble_fraction,
/// tp_over_node, noise, step figures and every set Layout field.
std::map<std::string, double> facts_of(const RunMetrics& metrics, const Layout& layout);

/// Evaluates `rules` over the metrics and layout.
Diagnosis diagnose(const RunMetrics& metrics, const Layout& layout, const RuleSet& rules);

}  // namespace attune::diagnose
