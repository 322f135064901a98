#pragma once

#include <attune/core/error.hpp>

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace attune::cli {

/// What a subcommand does once its arguments are parsed: returns the process exit code.
using Action = std::function<int()>;

/// A subcommand's registration: it adds itself to `parent` and stores its action in `chosen`
/// from a CLI11 callback, so that `run` executes it after parsing has succeeded.
using Registrar = std::function<void(CLI::App& parent, Action& chosen)>;

/// Adds a subcommand to the program; called from a static object in each src/cli/<verb>.cpp.
/// `order` fixes the position in --help.
struct Registration {
    Registration(int order, Registrar registrar);
};

/// The program: parses argv, runs the chosen subcommand, maps every error to its exit code.
int run(int argc, char** argv);

/// Global flags every subcommand shares.
struct GlobalOptions {
    bool quiet = false;
    bool verbose = false;
};
const GlobalOptions& global_options();

}  // namespace attune::cli
