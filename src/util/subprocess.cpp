#include <attune/util/subprocess.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <stdexcept>
#include <string_view>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

extern char** environ;

namespace attune::util {

namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
    std::vector<char*> out;
    out.reserve(argv.size() + 1);
    for (const auto& arg : argv) out.push_back(const_cast<char*>(arg.c_str()));
    out.push_back(nullptr);
    return out;
}

int status_code(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

// Only async-signal-safe calls between fork and exec: the message is written with write(2).
[[noreturn]] void exec_failed(const char* program) {
    const char* reason = std::strerror(errno);
    const std::string_view parts[] = {"attune: cannot run ", program, ": ", reason, "\n"};
    for (const auto part : parts) (void)!::write(STDERR_FILENO, part.data(), part.size());
    ::_exit(127);
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    ProcessResult result;
    if (argv.empty()) {
        result.exit_code = 127, result.err = "empty command";
        return result;
    }
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
        result.exit_code = 127, result.err = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
        ::close(out_pipe[0]), ::close(out_pipe[1]);
        result.exit_code = 127, result.err = std::string("pipe: ") + std::strerror(errno);
        return result;
    }
    auto args = c_argv(argv);
    const pid_t pid = ::fork();
    if (pid < 0) {
        for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
        result.exit_code = 127, result.err = std::string("fork: ") + std::strerror(errno);
        return result;
    }
    if (pid == 0) {
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
        ::dup2(out_pipe[1], STDOUT_FILENO);
        ::dup2(err_pipe[1], STDERR_FILENO);
        ::execvp(args[0], args.data());
        exec_failed(args[0]);
    }
    ::close(out_pipe[1]), ::close(err_pipe[1]);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buffer[8192];
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            ::kill(pid, SIGKILL);
            result.timed_out = true;
            break;
        }
        const int ready = ::poll(fds, 2, int(std::min<long long>(left.count(), 1000)));
        if (ready < 0 && errno != EINTR) break;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
            if (n > 0) sinks[i]->append(buffer, std::size_t(n));
            else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (auto& fd : fds)
        if (fd.fd >= 0) ::close(fd.fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    result.exit_code = status_code(status);
    return result;
}

pid_t spawn_process_group(const std::vector<std::string>& argv, const std::filesystem::path& log,
                          const std::map<std::string, std::string>& env) {
    if (argv.empty()) throw std::runtime_error("empty command");
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) throw std::runtime_error(log.string() + ": cannot open for writing: " + std::strerror(errno));
    // The environment is built before fork: the current one, with `env` replacing or adding.
    std::vector<std::string> entries;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const auto name = entry.substr(0, entry.find('='));
        if (!env.contains(std::string(name))) entries.emplace_back(entry);
    }
    for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
    auto envp = c_argv(entries);
    auto args = c_argv(argv);
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        ::close(log_fd);
        throw std::system_error(error, std::generic_category(), "fork");
    }
    if (pid == 0) {
        ::setsid();
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        // Signals the parent ignores stay ignored across exec; a trial must be killable by SIGINT.
        ::signal(SIGINT, SIG_DFL), ::signal(SIGTERM, SIG_DFL), ::signal(SIGPIPE, SIG_DFL);
        ::execvpe(args[0], args.data(), envp.data());
        exec_failed(args[0]);
    }
    ::close(log_fd);
    return pid;
}

bool process_alive(pid_t pid) {
    if (pid <= 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return ::kill(pid, 0) == 0;
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

}  // namespace attune::util
