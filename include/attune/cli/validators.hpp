#pragma once

#include <CLI/CLI.hpp>

namespace attune::cli {

/// A number greater than 0. CLI11's PositiveNumber rejects the same values but names its internal
/// range ("not in range 0.000000 to 1.79769e+308") instead of what the flag expects.
CLI::Validator positive_number();

}  // namespace attune::cli
