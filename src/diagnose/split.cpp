#include "split.hpp"

#include <attune/diagnose/line_reader.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace attune::diagnose::detail {
namespace {

constexpr std::size_t k_window = 1u << 20;

// The format `line` is a record of, when no other format of the same dialect takes it (a parser
// prefers the format of its last record, so with two candidates the answer would depend on the lines
// before) and it prints a step (else the parser reads it as a plain line).
const DialectSpec* sole_format(std::string_view line, const DialectSpec* forced) {
    const DialectSpec* found = nullptr;
    for (const auto& spec : dialect_specs()) {
        // Before any record every format is tried in order; after one, only its dialect's.
        const auto dialect = forced != nullptr ? forced->name : found != nullptr ? found->name : spec.name;
        if (spec.name != dialect || !is_record(line, spec)) {
            continue;
        }
        if (found != nullptr) {
            return nullptr;
        }
        found = &spec;
    }
    if (found == nullptr || numbers_by_order(*found) || !printed_step(*found, line)) {
        return nullptr;
    }
    return found;
}

}  // namespace

std::optional<Boundary> find_boundary(const std::filesystem::path& path, std::uintmax_t from, const DialectSpec* forced) {
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (file == nullptr || ::fseeko(file.get(), static_cast<off_t>(from), SEEK_SET) != 0) {
        return std::nullopt;
    }
    std::string window(k_window, '\0');
    window.resize(std::fread(window.data(), 1, window.size(), file.get()));
    const std::string_view text(window);
    std::string clean;
    // The first line may have started before `from`; the last may go on past the window.
    for (auto start = text.find('\n'); start != std::string_view::npos;) {
        ++start;
        const auto end = text.find('\n', start);
        if (end == std::string_view::npos) {
            break;
        }
        const auto line = text.substr(start, end - start);
        auto piece = line.substr(0, line.find('\r'));
        if (piece.size() < LineReader::k_default_max_line) {
            // as Parser::feed reads it
            piece = piece.find('\x1b') == std::string_view::npos ? piece : without_ansi(piece, clean);
            if (const auto* spec = sole_format(piece, forced)) {
                return Boundary{from + start, spec, timestamp_of(piece)};
            }
        }
        start = end;
    }
    return std::nullopt;
}

}  // namespace attune::diagnose::detail
