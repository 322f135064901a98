#include <attune/diagnose/line_reader.hpp>

#include <attune/core/error.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

namespace attune::diagnose {
namespace {
// A quarter of a core's 1 MiB L2 on the bench VM: the block the kernel copies in is still in L2
// when it is parsed, also with two readers at once (split parse); 1 MiB measured 0-10% slower.
constexpr std::size_t k_buffer_size = 256u << 10;
constexpr std::size_t k_unknown = std::numeric_limits<std::size_t>::max();
}  // namespace

LineReader::LineReader(const std::filesystem::path& path, std::size_t max_line, ByteRange range)
    : m_max_line(max_line), m_buffer(k_buffer_size), m_unread(range.end - std::min(range.begin, range.end)) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
        throw InputError(path.string() + ": is a folder, expected a log file");
    }
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr) {
        throw InputError(path.string() + ": cannot open log file: " + std::strerror(errno));
    }
    if (range.begin > 0 && ::fseeko(m_file, static_cast<off_t>(range.begin), SEEK_SET) != 0) {
        throw InputError(path.string() + ": cannot seek to byte " + std::to_string(range.begin) + ": " + std::strerror(errno));
    }
}

LineReader::~LineReader() {
    if (m_file != nullptr) {
        std::fclose(m_file);
    }
}

bool LineReader::fill() {
    if (m_eof) {
        return false;
    }
    m_begin = 0;
    m_next_cr = k_unknown;
    m_next_escape = k_unknown;
    m_end = std::fread(m_buffer.data(), 1, static_cast<std::size_t>(std::min<std::uintmax_t>(m_buffer.size(), m_unread)), m_file);
    m_unread -= m_end;
    m_eof = m_end == 0;
    return !m_eof;
}

std::size_t LineReader::next_in_block(char byte, std::size_t& cached) const {
    if (cached == k_unknown || cached < m_begin) {
        const auto* found = static_cast<const char*>(std::memchr(m_buffer.data() + m_begin, byte, m_end - m_begin));
        cached = found != nullptr ? static_cast<std::size_t>(found - m_buffer.data()) : m_end;
    }
    return cached;
}

bool LineReader::next_piece(std::string_view& piece, bool& line_ended) {
    m_line.clear();
    bool got_any = false;
    for (;;) {
        if (m_begin == m_end && !fill()) {
            line_ended = true;
            piece = m_line;
            return got_any;
        }
        got_any = true;
        const char* start = m_buffer.data() + m_begin;
        const auto available = m_end - m_begin;
        const auto* newline = static_cast<const char*>(std::memchr(start, '\n', available));
        auto length = newline != nullptr ? static_cast<std::size_t>(newline - start) : available;
        // '\r' is looked for once per block, not once per line: most logs have none.
        const auto next_cr = next_in_block('\r', m_next_cr);
        const char* carriage = next_cr < m_begin + length ? m_buffer.data() + next_cr : nullptr;
        if (carriage != nullptr) {
            length = static_cast<std::size_t>(carriage - start);
        }
        const bool ends_here = carriage != nullptr || newline != nullptr;
        if (ends_here && m_line.empty()) {
            // the whole piece lies in the buffer: no copy
            piece = std::string_view(start, std::min(length, m_max_line));
            m_piece_escape = next_in_block('\x1b', m_next_escape) < m_begin + piece.size();
        } else {
            // Bytes beyond the cap are skipped, not kept: memory stays bounded on 1 MB lines.
            if (m_line.size() < m_max_line) {
                m_line.append(start, std::min(length, m_max_line - m_line.size()));
            }
            piece = m_line;
        }
        m_begin += length;
        if (carriage != nullptr) {
            ++m_begin;
            if (piece.data() != m_line.data()) {
                // fill() below may overwrite the buffer the piece points into
                m_line.assign(piece);
                piece = m_line;
            }
            // "\r\n" ends the line; a lone '\r' ends one progress-bar update inside it.
            line_ended = (m_begin < m_end || fill()) && m_buffer[m_begin] == '\n';
            m_begin += line_ended ? 1 : 0;
            return true;
        }
        if (newline != nullptr) {
            ++m_begin;
            line_ended = true;
            return true;
        }
    }
}

bool LineReader::next(std::string_view& line) {
    bool line_ended = false;
    if (!next_piece(line, line_ended)) {
        return false;
    }
    // A piece assembled (or copied) in m_line is looked at whole; one in the buffer was checked there.
    m_escape = line.data() == m_line.data() ? std::memchr(line.data(), '\x1b', line.size()) != nullptr : m_piece_escape;
    if (m_at_line_start) {
        ++m_line_number;
    }
    m_at_line_start = line_ended;
    return true;
}

}  // namespace attune::diagnose
