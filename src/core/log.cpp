#include <attune/core/log.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

namespace attune {

bool stderr_is_interactive() {
    return isatty(STDERR_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr;
}

void setup_logging(Verbosity verbosity) {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>(
        stderr_is_interactive() ? spdlog::color_mode::automatic : spdlog::color_mode::never);
    auto logger = std::make_shared<spdlog::logger>("attune", sink);
    logger->set_pattern("attune: %^%l%$: %v");
    switch (verbosity) {
        case Verbosity::quiet: logger->set_level(spdlog::level::err); break;
        case Verbosity::normal: logger->set_level(spdlog::level::info); break;
        case Verbosity::verbose: logger->set_level(spdlog::level::debug); break;
    }
    spdlog::set_default_logger(logger);
}

}  // namespace attune
