#include <attune/campaign/journal.hpp>
#include <attune/core/error.hpp>
#include <attune/util/files.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace attune::campaign {

namespace {

std::string iso_now() {
    const auto now = std::chrono::system_clock::now();
    const auto seconds = std::chrono::system_clock::to_time_t(now);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buffer;
}

void write_all(int fd, const std::string& bytes, const std::filesystem::path& path) {
    std::size_t written = 0;
    while (written < bytes.size()) {
        const auto n = ::write(fd, bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw RuntimeFailure("cannot append to " + path.string() + ": " + std::strerror(errno));
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) throw RuntimeFailure("cannot fsync " + path.string() + ": " + std::strerror(errno));
}

long fault_abort_after() {
    const char* text = std::getenv("ATTUNE_FAULT_ABORT_AFTER_EVENTS");
    if (text == nullptr || *text == '\0') return -1;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 1)
        throw InputError(std::string("ATTUNE_FAULT_ABORT_AFTER_EVENTS=") + text + ": expected a whole number >= 1");
    return value;
}

}  // namespace

Journal::Journal(Journal&& other) noexcept
    : m_path(std::move(other.m_path)), m_fd(other.m_fd), m_events(std::move(other.m_events)),
      m_dropped_bytes(other.m_dropped_bytes), m_abort_after(other.m_abort_after), m_appended(other.m_appended) {
    other.m_fd = -1;
}

Journal& Journal::operator=(Journal&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0) ::close(m_fd);
        m_path = std::move(other.m_path);
        m_fd = other.m_fd;
        m_events = std::move(other.m_events);
        m_dropped_bytes = other.m_dropped_bytes;
        m_abort_after = other.m_abort_after;
        m_appended = other.m_appended;
        other.m_fd = -1;
    }
    return *this;
}

Journal::~Journal() {
    if (m_fd >= 0) ::close(m_fd);
}

Journal Journal::open(const std::filesystem::path& dir) {
    Journal journal;
    journal.m_path = dir / "journal.jsonl";
    journal.m_abort_after = fault_abort_after();
    std::string text;
    if (std::filesystem::exists(journal.m_path)) text = util::read_text_file(journal.m_path, std::size_t{1} << 30);
    // Everything after the last newline is a line the writer did not finish.
    const auto complete = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    journal.m_dropped_bytes = text.size() - complete;
    std::istringstream lines(text.substr(0, complete));
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
        if (line.empty()) continue;
        nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
        if (event.is_discarded() || !event.is_object() || !event.contains("type") || !event.contains("v"))
            throw InputError(journal.m_path.string() + ":" + std::to_string(number) + ": not a journal event");
        if (event["v"] != k_journal_schema)
            throw InputError(journal.m_path.string() + ":" + std::to_string(number) + ": journal schema " +
                             event["v"].dump() + ", this attune reads schema " + std::to_string(k_journal_schema));
        journal.m_events.push_back(std::move(event));
    }
    journal.m_fd = ::open(journal.m_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (journal.m_fd < 0) throw RuntimeFailure("cannot open " + journal.m_path.string() + ": " + std::strerror(errno));
    if (::ftruncate(journal.m_fd, static_cast<off_t>(complete)) != 0 || ::lseek(journal.m_fd, 0, SEEK_END) < 0)
        throw RuntimeFailure("cannot repair " + journal.m_path.string() + ": " + std::strerror(errno));
    return journal;
}

const nlohmann::json& Journal::append(const std::string& type, nlohmann::json fields) {
    nlohmann::json event = {{"v", k_journal_schema},
                            {"seq", m_events.size() + 1},
                            {"time", iso_now()},
                            {"type", type}};
    for (auto& [key, value] : fields.items()) event[key] = std::move(value);
    write_all(m_fd, event.dump() + "\n", m_path);
    m_events.push_back(std::move(event));
    if (m_abort_after > 0 && ++m_appended >= m_abort_after) std::abort();
    return m_events.back();
}

CampaignLock::CampaignLock(const std::filesystem::path& dir) {
    const auto path = dir / ".lock";
    m_fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m_fd < 0) throw InputError(dir.string() + ": cannot create the campaign lock: " + std::strerror(errno));
    if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        std::ifstream holder(path);
        std::string pid;
        std::getline(holder, pid);
        ::close(m_fd);
        m_fd = -1;
        throw InputError(dir.string() + ": another attune process" + (pid.empty() ? "" : " (pid " + pid + ")") +
                         " is running this campaign; wait for it or stop it first");
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(m_fd, 0) == 0) (void)::write(m_fd, pid.data(), pid.size());
}

CampaignLock::~CampaignLock() {
    if (m_fd >= 0) ::close(m_fd);
}

}  // namespace attune::campaign
