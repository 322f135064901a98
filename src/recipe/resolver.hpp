#pragma once

// Flattening and OmegaConf interpolation: private to src/recipe/.

#include "tree.hpp"

namespace attune::recipe {

/// The leaves of a tree in document order, with `${...}` interpolations resolved against the
/// tree and `${oc.env:VAR}` against the mappings named in `env_sections`. Throws InputError
/// naming `origin` on an interpolation cycle.
std::vector<Leaf> flatten_and_resolve(const Node& root, const std::vector<std::string>& env_sections,
                                      const std::string& origin);

}  // namespace attune::recipe
