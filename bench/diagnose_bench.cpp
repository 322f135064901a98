// Times `attune diagnose`'s parser on a generated multi-hundred-MB Megatron log and, for scale,
// `grep -c iteration` on the same file; each is run three times and the fastest run counts (the
// machine is shared, and the slower runs measure other processes). Usage: diagnose_bench
// [MEGABYTES] (default 400). The log is a fresh file under $TMPDIR (mkstemps), so runs side by side
// do not share it; it is removed when the bench ends.
#include <attune/diagnose/parse.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <stdlib.h>  // mkstemps
#include <unistd.h>  // close

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

}  // namespace

int main(int argc, char** argv) {
    const std::size_t megabytes = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 400;
    const TempFile file;
    const fs::path& path = file.path();
    generate(path, megabytes);
    const double size_mb = static_cast<double>(fs::file_size(path)) / (1 << 20);

    // grep first: both then read a file the page cache already holds. Its output goes through a
    // pipe because GNU grep stops at the first match when stdout is /dev/null.
    constexpr int k_runs = 3;
    double grep_s = 1e300;
    int grep_status = 0;
    for (int run = 0; run < k_runs; ++run) {
        const auto start = Clock::now();
        grep_status |= std::system(("grep -c iteration " + path.string() + " | cat > /dev/null").c_str());
        grep_s = std::min(grep_s, seconds_since(start));
    }

    double parse_s = 1e300;
    std::size_t steps = 0;
    for (int run = 0; run < k_runs; ++run) {
        const auto start = Clock::now();
        const auto metrics = attune::diagnose::parse_logs({path}, std::nullopt);
        parse_s = std::min(parse_s, seconds_since(start));
        steps = metrics.steps.size();
    }

    fmt::print("file:    {} ({:.0f} MB, {} steps)\n", path.string(), size_mb, steps);
    fmt::print("parser:  {:.2f} s, {:.0f} MB/s\n", parse_s, size_mb / parse_s);
    fmt::print("grep -c: {:.2f} s, {:.0f} MB/s{}\n", grep_s, size_mb / grep_s, grep_status == 0 ? "" : " (grep failed)");
    fmt::print("ratio:   parser at {:.0f}% of grep's speed\n", 100.0 * grep_s / parse_s);
    return 0;
}
