#include <attune/cli/command.hpp>

int main(int argc, char** argv) { return attune::cli::run(argc, argv); }
