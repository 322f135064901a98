#include <attune/core/error.hpp>
#include <attune/util/files.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attune::util {

std::string read_text_file(const std::filesystem::path& path, std::size_t max_bytes) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status))
        throw InputError(path.string() + ": no such file");
    if (std::filesystem::is_directory(status))
        throw InputError(path.string() + ": is a directory, expected a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path.string() + ": cannot read: " + std::strerror(errno));
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes)
        throw InputError(path.string() + ": " + std::to_string(size) + " bytes, expected a text file of at most " +
                         std::to_string(max_bytes) + " bytes");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    std::string text = buffer.str();
    if (const auto nul = text.find('\0'); nul != std::string::npos) {
        const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
        throw InputError(path.string() + ":" + std::to_string(line) +
                         ": binary data (a NUL byte), expected a text file");
    }
    return text;
}

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
    const auto temporary = path.string() + ".tmp";
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw RuntimeFailure("cannot write " + temporary + ": " + std::strerror(errno));
    std::size_t written = 0;
    while (written < content.size()) {
        const auto n = ::write(fd, content.data() + written, content.size() - written);
        if (n < 0) {
            if (errno == EINTR) continue;
            const std::string reason = std::strerror(errno);
            ::close(fd);
            ::unlink(temporary.c_str());
            throw RuntimeFailure("cannot write " + temporary + ": " + reason);
        }
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(temporary.c_str());
        throw RuntimeFailure("cannot flush " + temporary + ": " + std::strerror(errno));
    }
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
        ::unlink(temporary.c_str());
        throw RuntimeFailure("cannot rename " + temporary + " to " + path.string() + ": " + std::strerror(errno));
    }
}

}  // namespace attune::util
