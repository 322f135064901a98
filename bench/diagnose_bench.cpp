// Times `attune diagnose`'s parser on a generated multi-hundred-MB Megatron log, on two threads (as
// it runs) and on one, then `attune diagnose --json` on the same log as a user runs it (wall time
// and peak memory of the process), and for scale `grep -c iteration`. Each is run five times and
// the median counts (the machine is shared). Usage: diagnose_bench [MEGABYTES] [ATTUNE]
// (default 400 and the attune binary beside this one). The log is a fresh file under $TMPDIR
// (mkstemps), so runs side by side do not share it; it is removed when the bench ends.
#include <attune/diagnose/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include <stdlib.h>  // mkstemps
#include <fcntl.h>         // open
#include <sys/resource.h>  // rusage
#include <sys/wait.h>      // wait4
#include <unistd.h>        // close, fork, execv

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Writes iteration records (each followed by a timers block, as Megatron-Core prints them) until
// the file reaches `megabytes`.
void generate(const fs::path& path, std::size_t megabytes) {
    std::ofstream out(path, std::ios::binary);
    const std::size_t target = megabytes << 20;
    std::size_t written = 0;
    for (long step = 1; written < target; ++step) {
        const auto record = fmt::format(
            " [2026-01-01 00:00:00] iteration {:>8}/ 10000000 | consumed samples: {:>12} | elapsed time per iteration (ms): {:.1f} | "
            "throughput per GPU (TFLOP/s/GPU): {:.1f} | learning rate: 3.000000E-04 | global batch size:   256 | lm loss: {:.6E} | "
            "loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            "max time across ranks (ms):\n    forward-backward ...............................: 2612.19\n"
            "    optimizer ......................................: 40.12\n",
            step, step * 256, 2600.0 + static_cast<double>(step % 50), 460.0 + static_cast<double>(step % 7), 2.0 + 1.0 / static_cast<double>(step));
        out << record;
        written += record.size();
    }
}

// A file of its own under the temporary folder, created empty by mkstemps and removed with the object.
class TempFile {
public:
    TempFile() {
        std::string name = (fs::temp_directory_path() / "attune-diagnose-bench-XXXXXX.log").string();
        const int fd = ::mkstemps(name.data(), 4);
        if (fd < 0) {
            throw std::system_error(errno, std::generic_category(), "mkstemps " + name);
        }
        ::close(fd);
        m_path = name;
    }
    ~TempFile() {
        std::error_code ignored;
        fs::remove(m_path, ignored);
    }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    [[nodiscard]] const fs::path& path() const { return m_path; }

private:
    fs::path m_path;
};

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr int k_runs = 5;

// The median of k_runs timings of `run`.
template <typename Run>
double median_seconds(const Run& run) {
    std::vector<double> times;
    for (int i = 0; i < k_runs; ++i) {
        const auto start = Clock::now();
        run();
        times.push_back(seconds_since(start));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

struct ChildRun {
    double seconds = 0;
    long peak_kib = 0;
    bool ok = false;
};

// Runs `argv` with stdout to /dev/null (no shell) and measures its wall time and peak resident memory.
ChildRun run_child(const std::vector<std::string>& args) {
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const auto start = Clock::now();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    ::wait4(pid, &status, 0, &usage);
    return {seconds_since(start), usage.ru_maxrss, WIFEXITED(status) && WEXITSTATUS(status) == 0};
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t megabytes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 400;
    const std::string attune = argc > 2 ? argv[2] : (fs::path(argv[0]).parent_path() / "attune").string();
    const TempFile file;
    const fs::path& path = file.path();
    generate(path, megabytes);
    const double size_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);

    // grep first: all then read a file the page cache already holds. Its output goes through a
    // pipe because GNU grep stops at the first match when stdout is /dev/null.
    int grep_status = 0;
    const double grep_s = median_seconds([&] { grep_status |= std::system(("grep -c iteration " + path.string() + " | cat > /dev/null").c_str()); });

    std::size_t steps = 0;
    const double parse_s = median_seconds([&] { steps = attune::diagnose::parse_logs({path}, std::nullopt).steps.size(); });
    const attune::diagnose::SplitPolicy one_thread{.min_bytes = std::numeric_limits<std::uintmax_t>::max()};
    const double one_thread_s = median_seconds([&] { (void)attune::diagnose::parse_logs({path}, std::nullopt, {}, one_thread); });

    std::vector<ChildRun> json_runs;
    for (int i = 0; i < k_runs; ++i) json_runs.push_back(run_child({attune, "diagnose", "--json", path.string()}));
    std::sort(json_runs.begin(), json_runs.end(), [](const ChildRun& a, const ChildRun& b) { return a.seconds < b.seconds; });
    const auto& json = json_runs[json_runs.size() / 2];
    const bool json_ok = std::all_of(json_runs.begin(), json_runs.end(), [](const ChildRun& r) { return r.ok; });

    fmt::print("file:    {} ({:.0f} MB, {} steps); medians of {} runs\n", path.string(), size_mb, steps, k_runs);
    fmt::print("parser:  {:.2f} s, {:.0f} MB/s ({:.0f}% of grep's speed)\n", parse_s, size_mb / parse_s, 100.0 * grep_s / parse_s);
    fmt::print("1 thread:{:.2f} s, {:.0f} MB/s ({:.0f}% of grep's speed)\n", one_thread_s, size_mb / one_thread_s, 100.0 * grep_s / one_thread_s);
    fmt::print("--json:  {:.2f} s, {:.0f} MiB peak ({:.2f}x the parse){}\n", json.seconds, static_cast<double>(json.peak_kib) / 1024,
               json.seconds / parse_s, json_ok ? "" : " (attune failed: " + attune + ")");
    fmt::print("grep -c: {:.2f} s, {:.0f} MB/s{}\n", grep_s, size_mb / grep_s, grep_status == 0 ? "" : " (grep failed)");
    return 0;
}
