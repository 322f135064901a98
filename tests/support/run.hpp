#pragma once

// Runs the built attune binary as a user would, for the black-box CLI suites.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace attune::test_support {

struct RunResult {
    int exit_code = -1;
    std::string out;  ///< stdout
    std::string err;  ///< stderr
};

/// Runs `attune ARGS...` (argv, no shell) in `cwd` with extra `NAME=value` environment entries.
RunResult run_attune(const std::vector<std::string>& args, const std::filesystem::path& cwd = {},
                     const std::vector<std::string>& env = {});

/// A fresh temporary folder, removed when the object goes.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }
    /// Writes a file below the folder and returns its path.
    std::filesystem::path write(const std::string& name, const std::string& content) const;

private:
    std::filesystem::path m_path;
};

/// Every regular file below `dir`, concatenated: to check that a secret reached none of them.
std::string all_files_text(const std::filesystem::path& dir);

/// The events of a campaign folder's journal.jsonl, in order.
std::vector<nlohmann::json> journal_events(const std::filesystem::path& campaign);

/// ../shared, or empty when it is absent (tests that read it skip with a message).
std::filesystem::path shared_dir();

}  // namespace attune::test_support
