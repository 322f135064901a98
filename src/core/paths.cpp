#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>

#include <cstdlib>
#include <system_error>

namespace attune {

namespace {

std::filesystem::path installed_data_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    return exe.parent_path().parent_path() / "share" / "attune";
}

bool holds_data(const std::filesystem::path& dir) {
    std::error_code ec;
    return !dir.empty() && std::filesystem::is_directory(dir / "gate" / "frameworks", ec);
}

}  // namespace

std::filesystem::path data_dir() {
    if (const char* env = std::getenv("ATTUNE_DATA_DIR"); env != nullptr && *env != '\0') {
        if (!holds_data(env))
            throw InputError(std::string("ATTUNE_DATA_DIR=") + env +
                             ": expected a folder with gate/frameworks/ inside");
        return env;
    }
    if (auto dir = installed_data_dir(); holds_data(dir)) return dir;
    return ATTUNE_SOURCE_DIR;
}

}  // namespace attune
