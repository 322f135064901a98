#pragma once
// Internal to src/diagnose: where a large log is cut so that its two halves can be parsed on two
// threads and merged into what one thread gives.

#include "dialects.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>

namespace attune::diagnose::detail {

/// A line start where a parser can begin without having read the lines before it: the line's first
/// piece (up to '\r' or '\n', colour escapes dropped) is a record of exactly one format of its
/// dialect and prints its step. A parser started there with `spec` as its format reads each later line as
/// the parser of the whole log does, provided that one had not decided another dialect by then: the
/// dialect and the format are the only state that decides how a line is read (parse.cpp).
struct Boundary {
    std::uintmax_t offset = 0;          ///< byte offset of the line's first byte
    const DialectSpec* spec = nullptr;  ///< the format the line is a record of
    std::optional<long long> stamp;     ///< the line's time (timestamp_of), for the interval across the cut
};

/// The first boundary among the lines that start in the 1 MiB after byte `from` of `path`, or none.
/// `forced` (--framework) limits the formats to its dialect's. Formats that number records by their
/// order are never a boundary: the later half could not number its records.
std::optional<Boundary> find_boundary(const std::filesystem::path& path, std::uintmax_t from, const DialectSpec* forced);

}  // namespace attune::diagnose::detail
