#pragma once

#include <stdexcept>
#include <string>

namespace attune {

/// The process exit codes: a tested contract (README).
enum class ExitCode : int {
    ok = 0,
    failure = 1,      ///< a runtime failure; the reason is on stderr
    usage = 2,        ///< usage error or bad input (file, line, what was expected)
    refused = 3,      ///< the gate refused the candidate
    diverged = 4,     ///< a replay would now decide differently
    interrupted = 130,
};

/// Base of attune's two exception types; only cli::run catches them.
class Error : public std::runtime_error {
public:
    Error(ExitCode code, const std::string& message) : std::runtime_error(message), m_code(code) {}
    [[nodiscard]] ExitCode code() const { return m_code; }

private:
    ExitCode m_code;
};

/// Something the user gave is wrong: a flag, a file, a value. Exit code 2.
/// The message names the file, line or value and what was expected.
class InputError : public Error {
public:
    explicit InputError(const std::string& message) : Error(ExitCode::usage, message) {}
};

/// Something failed while doing what was asked (a launch, a write, a network call). Exit code 1.
class RuntimeFailure : public Error {
public:
    explicit RuntimeFailure(const std::string& message) : Error(ExitCode::failure, message) {}
};

}  // namespace attune
