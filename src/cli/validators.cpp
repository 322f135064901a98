#include <attune/cli/validators.hpp>

#include <cmath>

namespace attune::cli {

CLI::Validator positive_number() {
    return CLI::Validator(
        [](std::string& input) -> std::string {
            double value = 0;
            if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value) || value <= 0)
                return "'" + input + "': expected a number greater than 0";
            return {};
        },
        "POSITIVE");
}

}  // namespace attune::cli
