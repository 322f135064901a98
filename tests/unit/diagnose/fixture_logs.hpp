#pragma once
// The diagnose golden logs, shared by the suites that read them all.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

namespace attune::diagnose::test {

/// Every .log under ../shared/logs and tests/fixtures/diagnose that has a .expected.json beside it, sorted.
inline std::vector<std::filesystem::path> fixture_logs() {
    namespace fs = std::filesystem;
    std::vector<fs::path> logs;
    for (const fs::path root : {fs::path(ATTUNE_SHARED_DIR) / "logs", fs::path(ATTUNE_FIXTURES) / "diagnose"}) {
        if (!fs::is_directory(root)) {
            continue;
        }
        for (const auto& entry : fs::recursive_directory_iterator(root)) {
            if (entry.path().extension() == ".log" && fs::exists(fs::path(entry.path()).replace_extension(".expected.json"))) {
                logs.push_back(entry.path());
            }
        }
    }
    std::sort(logs.begin(), logs.end());
    return logs;
}

/// A test name from a log's folder and stem: `megatron_oom_before_first_iteration`.
inline std::string fixture_name(const testing::TestParamInfo<std::filesystem::path>& info) {
    std::string name = info.param.parent_path().filename().string() + "_" + info.param.stem().string();
    std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return name;
}

}  // namespace attune::diagnose::test
