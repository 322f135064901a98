#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace attune::diagnose {

/// The bytes [begin, end) of a file; an `end` past the end of the file reads to its end.
struct ByteRange {
    std::uintmax_t begin = 0;
    std::uintmax_t end = std::numeric_limits<std::uintmax_t>::max();
};

/// Reads a file line by line with bounded memory: lines end at '\n' (or "\r\n"), each '\r'-separated
/// update of a progress bar is its own line (with the same line number), and a line or update longer
/// than `max_line` keeps its first `max_line` bytes. Bytes are passed through as they are (non-UTF-8 tolerated).
class LineReader {
public:
    static constexpr std::size_t k_default_max_line = 64 * 1024;

    /// Opens `path` and reads `range` of it, which should start at a line's start (line numbers count
    /// from 1 there); throws InputError when it is missing or unreadable.
    explicit LineReader(const std::filesystem::path& path, std::size_t max_line = k_default_max_line, ByteRange range = {});
    ~LineReader();
    LineReader(const LineReader&) = delete;
    LineReader& operator=(const LineReader&) = delete;

    /// The next line (valid until the next call) or false at the end of the file.
    bool next(std::string_view& line);
    /// The 1-based number of the physical line last returned.
    [[nodiscard]] std::size_t line_number() const { return m_line_number; }
    /// Whether the line last returned holds an ESC byte (an ANSI colour escape starts there). The
    /// buffer is scanned for ESC once per block, not once per line.
    [[nodiscard]] bool has_escape() const { return m_escape; }

private:
    bool fill();
    bool next_piece(std::string_view& piece, bool& line_ended);
    // The buffer offset of the first `byte` at or after m_begin (m_end when none); `cached` keeps
    // the answer while it lies ahead, so a block is scanned for each byte about once.
    std::size_t next_in_block(char byte, std::size_t& cached) const;

    std::FILE* m_file = nullptr;
    std::size_t m_max_line;
    std::vector<char> m_buffer;
    std::size_t m_begin = 0;
    std::size_t m_end = 0;
    bool m_eof = false;
    std::uintmax_t m_unread;     // bytes of the range not yet read into the buffer
    std::string m_line;          // a line or '\r' piece that spans buffer refills (capped)
    bool m_at_line_start = true;  // the next piece starts a new physical line
    std::size_t m_line_number = 0;
    std::size_t m_next_cr = 0;       // next_in_block's answers for '\r' and ESC (reset by fill())
    std::size_t m_next_escape = 0;
    bool m_piece_escape = false;     // the piece taken from the buffer holds ESC
    bool m_escape = false;           // the line last returned holds ESC
};

}  // namespace attune::diagnose
