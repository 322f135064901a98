#pragma once
// The tuners a user would pick instead of attune's agent (docs/campaign.md, "The other policies"),
// behind the same Policy interface, judged by the same gate and charged by the same ledger. Each proposes a whole
// configuration of the lever space (policy/config_space.hpp) at once, not one lever.

#include <attune/policy/policy.hpp>

#include <cstdint>
#include <memory>

namespace attune::policy {

/// Random search: a configuration drawn uniformly from the structurally valid points of the space
/// (the gate-allowed layouts), never one already tried. It reads no memory estimate; whether the
/// campaign's preflight judges its proposals is the campaign's setting (`--preflight`).
std::unique_ptr<Policy> make_random_policy(std::uint64_t seed);

/// Bayesian optimisation: a Gaussian-process surrogate of log tokens/s/GPU with expected
/// improvement, failures (OOM, crash, refused, predicted OOM) modelled as a constraint, after
/// `initial` random configurations.
std::unique_ptr<Policy> make_bayes_policy(std::uint64_t seed, int initial = 5);

/// Grid search as NVIDIA's NeMo auto-configurator does it: tp, pp, cp, ep, vpp and micro batch
/// enumerated in ascending order, pruned by divisibility and the memory estimate (the least
/// recompute that fits), then run in that order until the budget ends.
std::unique_ptr<Policy> make_grid_policy();

}  // namespace attune::policy
