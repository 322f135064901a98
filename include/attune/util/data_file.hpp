#pragma once

// Reading attune data files (gate adapters, invariants, policies, search and diagnosis rules) with
// yaml-cpp: every key is read or refused with its file and line.

#include <attune/core/error.hpp>

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace attune::util {

/// A parsed data file plus the helpers that report `file:line: what was expected`.
class DataFile {
public:
    explicit DataFile(const std::filesystem::path& path);
    /// YAML embedded in another file (a lessons file's front matter): `first_line` is the line of
    /// `path` the text starts on, so that errors name the file's own lines.
    DataFile(const std::filesystem::path& path, std::string text, int first_line);

    [[nodiscard]] const YAML::Node& root() const { return m_root; }
    [[nodiscard]] const std::string& path() const { return m_path; }
    [[nodiscard]] const std::string& text() const { return m_text; }

    [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::string where(const YAML::Node& node) const;

    /// Refuses keys of a mapping that are not in `allowed`, with a did-you-mean.
    void expect_fields(const YAML::Node& mapping, std::initializer_list<const char*> allowed) const;
    /// The index in `names` of the string at `node`, or a refusal (`WHAT 'x' is not known`) with a did-you-mean.
    [[nodiscard]] std::size_t one_of(const YAML::Node& node, const std::string& what, const std::vector<std::string>& names) const;

    [[nodiscard]] std::string string(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] std::vector<std::string> strings(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] double number(const YAML::Node& node, const std::string& what) const;
    [[nodiscard]] bool boolean(const YAML::Node& node, const std::string& what) const;

private:
    std::string m_path;
    std::string m_text;
    YAML::Node m_root;
    int m_first_line = 1;
};

}  // namespace attune::util
