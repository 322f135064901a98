#include <attune/diagnose/line_reader.hpp>

#include <attune/core/error.hpp>

#include <cstring>
#include <system_error>

namespace attune::diagnose {
namespace {
constexpr std::size_t k_buffer_size = 1u << 20;
}

LineReader::LineReader(const std::filesystem::path& path, std::size_t max_line)
    : m_max_line(max_line), m_buffer(k_buffer_size) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
        throw InputError(path.string() + ": is a folder, expected a log file");
    }
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr) {
        throw InputError(path.string() + ": cannot open log file: " + std::strerror(errno));
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
    m_end = std::fread(m_buffer.data(), 1, m_buffer.size(), m_file);
    m_eof = m_end == 0;
    return !m_eof;
}

bool LineReader::next_physical() {
    m_line.clear();
    bool got_any = false;
    for (;;) {
        if (m_begin == m_end && !fill()) {
            return got_any;
        }
        got_any = true;
        const char* start = m_buffer.data() + m_begin;
        const auto available = m_end - m_begin;
        const auto* newline = static_cast<const char*>(std::memchr(start, '\n', available));
        const auto length = newline != nullptr ? static_cast<std::size_t>(newline - start) : available;
        // Bytes beyond the cap are skipped, not kept: memory stays bounded on 1 MB lines.
        if (m_line.size() < m_max_line) {
            m_line.append(start, std::min(length, m_max_line - m_line.size()));
        }
        m_begin += length;
        if (newline != nullptr) {
            ++m_begin;
            return true;
        }
    }
}

bool LineReader::next(std::string_view& line) {
    for (;;) {
        if (m_have_line && m_piece <= m_line.size()) {
            const auto carriage = m_line.find('\r', m_piece);
            const auto stop = carriage == std::string::npos ? m_line.size() : carriage;
            line = std::string_view(m_line).substr(m_piece, stop - m_piece);
            m_piece = stop + 1;
            // A trailing '\r' (CRLF files) ends the line rather than starting an empty piece.
            if (!line.empty() || carriage == std::string::npos || carriage + 1 < m_line.size()) {
                return true;
            }
            continue;
        }
        if (!next_physical()) {
            return false;
        }
        ++m_line_number;
        m_have_line = true;
        m_piece = 0;
    }
}

}  // namespace attune::diagnose
