#pragma once
// What the loop learns about one configuration before and after it runs: the nominal estimate
// (preflight) and the measurement read from its logs.

#include <attune/cluster/cluster.hpp>
#include <attune/diagnose/diagnosis.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/policy/policy.hpp>
#include <attune/sim/from_recipe.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace attune::campaign {

/// The nominal estimate of a recipe on a cluster (never the simulated world).
policy::Preflight preflight_of(const recipe::Document& recipe, const gate::Adapter& adapter,
                               const cluster::Cluster& cluster);

/// The run's layout as the diagnosis rules read it, the one used by `attune diagnose --recipe` and
/// by a campaign: from the simulator's reading of the recipe where it can build one, else from the
/// adapter's quantities. The MFU basis is the cluster GPU's dense peak for the precision the GEMMs
/// run in (FP8 recipes against the FP8 peak). Throws InputError for a GPU with no known specs.
diagnose::Layout diagnosis_layout(const recipe::Document& recipe, const gate::Adapter& adapter,
                                  const cluster::Cluster& cluster);
/// The same from the simulator's inputs (torchtitan's per-op checkpointing reads as selective).
diagnose::Layout diagnosis_layout(const sim::SimInputs& inputs);

/// A trial's logs read into a measurement, the loss series and the deciding evidence lines.
struct Reading {
    policy::Measurement measured;
    std::vector<double> losses;
    std::vector<std::string> evidence;
};

/// Reads a trial's logs with the diagnosis rules; the recipe gives the layout (for tokens/s when
/// the framework prints only step times, memory headroom and the bubble). Never throws on a log
/// it cannot read: that is a `crash` with the reason as evidence.
Reading read_trial(const std::vector<std::filesystem::path>& logs, const recipe::Document& recipe,
                   const gate::Adapter& adapter, const cluster::Cluster& cluster);

/// The GPUs a recipe's job takes.
int gpus_of(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster);

}  // namespace attune::campaign
