#include <attune/diagnose/recipe_layout.hpp>

#include <attune/core/error.hpp>

namespace attune::diagnose {

Layout layout_from_recipe(const std::filesystem::path& recipe) {
    // The mapping needs the gate's adapter quantities (tp, pp, ... per framework); refusing is
    // better than a Layout guessed from key names, which would feed the rules wrong facts.
    throw InputError(recipe.string() + ": --recipe is not supported yet: the recipe-to-layout mapping awaits the gate's adapters");
}

}  // namespace attune::diagnose
