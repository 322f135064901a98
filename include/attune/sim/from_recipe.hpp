#pragma once
// The one place where a recipe becomes simulator inputs, through the gate adapter's quantities
// and levers (so every framework's key paths live in gate/frameworks/, not here).

#include <attune/cluster/cluster.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/recipe/document.hpp>
#include <attune/sim/oracle.hpp>
#include <attune/sim/world.hpp>

#include <string_view>

namespace attune::sim {

/// Everything the simulator needs about one recipe on one cluster.
struct SimInputs {
    Hardware hardware;
    ModelShape model;
    Layout layout;
    Objective objective;
    Dialect dialect = Dialect::megatron;
};

/// Builds the inputs. The model comes from the recipe's shape quantities, else from the
/// catalogue by `pretrained_model_name_or_path`. Throws InputError naming what is missing.
SimInputs from_recipe(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster);

/// The precision the recipe's GEMMs run in (FP8 where its fp8 lever is set to a recipe, BF16 otherwise).
Precision precision_of(const recipe::Document& recipe, const gate::Adapter& adapter);

/// How a recompute setting reads, lower-cased (`full`, `selective`, `uniform`, `true`, ...).
Recompute parse_recompute(std::string_view value);

/// The lever space the adapter allows around the recipe (its domains for tp, pp, vpp, cp, ep,
/// micro-batch, recompute and the overlap / graph flags).
LeverSpace lever_space(const gate::Adapter& adapter);

}  // namespace attune::sim
