#pragma once

// The lever space of the NeMo 70B example (tp 8 over a whole node, pp 4, full recompute) on the
// default cluster (8 x 8 H100): the setting of the layout planner's and the lesson guide's unit tests.

#include <attune/cluster/cluster.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>
#include <attune/policy/config_space.hpp>

#include <string>

namespace attune::test_support {

struct Nemo70bSpace {
    gate::LoadedRecipe loaded = gate::load_recipe(std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/nemo-llama3-70b-h100.yaml",
                                                  gate::default_rules());
    cluster::Cluster cluster = cluster::default_cluster();
    gate::Policy gate_policy = gate::load_policy(data_dir(), std::nullopt);
    policy::ConfigSpace space{loaded.document, *loaded.adapter, cluster, gate::default_rules(), gate_policy};
};

}  // namespace attune::test_support
