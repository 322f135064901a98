#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace attune::campaign {

/// The journal's line format version; every event carries it as "v".
inline constexpr int k_journal_schema = 1;

/// The campaign's source of truth: `journal.jsonl`, one JSON event a line, appended and
/// fsynced one event at a time. Opening it reads every complete event back; a torn last line
/// (a crash mid-write) is detected, dropped and cut from the file.
class Journal {
public:
    /// Opens or creates `<dir>/journal.jsonl`. Throws InputError when a complete line is not a
    /// journal event (the file is not attune's, or was edited by hand), RuntimeFailure on I/O errors.
    static Journal open(const std::filesystem::path& dir);

    Journal(Journal&&) noexcept;
    Journal& operator=(Journal&&) noexcept;
    Journal(const Journal&) = delete;
    Journal& operator=(const Journal&) = delete;
    ~Journal();

    /// Appends `{"v", "seq", "time", "type", ...fields}` and fsyncs. With
    /// ATTUNE_FAULT_ABORT_AFTER_EVENTS=N the process aborts right after its N-th append, as a
    /// crash would: the resume tests kill campaigns at every point this way.
    const nlohmann::json& append(const std::string& type, nlohmann::json fields = nlohmann::json::object());

    [[nodiscard]] const std::vector<nlohmann::json>& events() const { return m_events; }
    [[nodiscard]] const std::filesystem::path& path() const { return m_path; }
    /// How many torn bytes opening dropped (0 for a clean journal).
    [[nodiscard]] std::size_t dropped_bytes() const { return m_dropped_bytes; }

private:
    Journal() = default;

    std::filesystem::path m_path;
    int m_fd = -1;
    std::vector<nlohmann::json> m_events;
    std::size_t m_dropped_bytes = 0;
    long m_abort_after = -1;
    long m_appended = 0;
};

/// An exclusive lock on a campaign folder held for the life of the object: a second process
/// gets an InputError naming the folder and the holder's pid.
class CampaignLock {
public:
    explicit CampaignLock(const std::filesystem::path& dir);
    ~CampaignLock();
    CampaignLock(const CampaignLock&) = delete;
    CampaignLock& operator=(const CampaignLock&) = delete;

private:
    int m_fd = -1;
};

}  // namespace attune::campaign
