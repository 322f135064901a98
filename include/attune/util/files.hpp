#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attune::util {

/// Reads a whole text file. Throws InputError naming the path when it is missing, a folder,
/// unreadable, larger than `max_bytes`, or binary (contains a NUL byte).
std::string read_text_file(const std::filesystem::path& path, std::size_t max_bytes = 64u << 20);

/// Writes `content` to `<path>.tmp`, fsyncs it and renames it over `path`, so a reader sees
/// either the old file or the whole new one. Throws RuntimeFailure on error.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

}  // namespace attune::util
