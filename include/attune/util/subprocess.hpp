#pragma once
// Child processes without a shell: argv vectors are exec'd as they are, so no value is ever
// interpreted by sh. Used by the local and Slurm backends.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace attune::util {

/// What a finished command printed and how it ended.
struct ProcessResult {
    int exit_code = -1;      ///< the exit status; 128 + N when killed by signal N; 127 when it could not be started
    std::string out;         ///< everything written to stdout
    std::string err;         ///< everything written to stderr (or why it could not be started)
    bool timed_out = false;  ///< killed because it ran past the timeout
};

/// Runs argv[0] (looked up in PATH) with the rest as arguments, stdin from /dev/null, and
/// captures its output. Past `timeout` the process is killed (SIGKILL) and `timed_out` set.
/// Never throws for a command that fails or cannot be started: that is in the result.
ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout = std::chrono::seconds(60));

/// Starts argv as the leader of a new session and process group (so that the whole tree can be
/// signalled at once), stdin from /dev/null, stdout and stderr appended to `log`, with the current
/// environment plus `env`. Returns the child's pid; throws std::system_error when fork fails and
/// std::runtime_error when the log cannot be opened or argv is empty. A program that cannot be
/// exec'd exits 127 with the reason in the log.
pid_t spawn_process_group(const std::vector<std::string>& argv, const std::filesystem::path& log,
                          const std::map<std::string, std::string>& env);

/// Whether `pid` names a live process (a zombie counts as ended).
bool process_alive(pid_t pid);

}  // namespace attune::util
