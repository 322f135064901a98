#pragma once
// The training command of one trial, from the cluster's launcher and the family's launch arguments.

#include <attune/cluster/cluster.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/launch/backend.hpp>

#include <string>
#include <vector>

namespace attune::launch {

/// The environment variable every trial's process gets: the trial recipe's absolute path (the
/// local backend also finds its own processes by it).
inline constexpr const char* k_trial_recipe_variable = "ATTUNE_TRIAL_RECIPE";

/// The argv of a trial: the cluster's launcher with {recipe}, {steps} and {overrides} filled in;
/// a launcher with no placeholder gets the adapter's launch arguments appended (the recipe's path
/// unless the family passes it otherwise, e.g. `--job.config_file {recipe}`). Throws InputError
/// when the cluster has no launcher.
std::vector<std::string> trial_command(const cluster::Cluster& cluster, const gate::GatedTrial& trial, const TrialPlan& plan);

/// The keys a trial changes from the original as hydra overrides: `key=value`, `+key=value` for a
/// key the original lacks, `~key` for one the trial removes.
std::vector<std::string> overrides_of(const gate::Verdict& verdict);

}  // namespace attune::launch
