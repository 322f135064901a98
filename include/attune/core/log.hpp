#pragma once

namespace attune {

enum class Verbosity { quiet, normal, verbose };

/// Sends spdlog's default logger to stderr, coloured only on a TTY and when NO_COLOR is unset.
void setup_logging(Verbosity verbosity);

/// True when stderr is a terminal and NO_COLOR is unset: progress displays use it.
bool stderr_is_interactive();

}  // namespace attune
