#pragma once

#include <attune/diagnose/diagnosis.hpp>

#include <filesystem>

namespace attune::diagnose {

/// The Layout of the run a recipe describes, read through the gate's adapter quantities.
/// NOT YET IMPLEMENTED: the recipe and gate modules do not exist on this branch; until the lead
/// wires it, this throws InputError saying `--recipe` is not supported yet, rather than guessing.
Layout layout_from_recipe(const std::filesystem::path& recipe);

}  // namespace attune::diagnose
