#pragma once
// What a campaign found, for people (terminal, Markdown, HTML with an inline SVG plot) and for
// programs (JSON). Everything is computed from the journal's fold, so a report of a resumed or
// replayed campaign reads the same.

#include <attune/campaign/record.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace attune::report {

/// The verdict word of a trial: baseline, accept, revert, refused, predicted-oom, ..., or pending.
std::string verdict_of(const campaign::TrialRecord& trial);

/// The `attune tune --json` document (README, "attune tune").
nlohmann::json summary_json(const campaign::CampaignRecord& record, const std::filesystem::path& dir);

/// One line for the terminal as a trial finishes: n, lever, old -> new, verdict, speed, budget.
std::string trial_line(const campaign::CampaignRecord& record, const campaign::TrialRecord& trial);

/// The budget as a bar for a terminal: `[#######.............]  45.2 of 200.0 GPU-h, 7 trials`.
std::string budget_bar(const campaign::CampaignRecord& record, int width = 30);

/// The end-of-campaign summary printed on stdout.
std::string terminal_summary(const campaign::CampaignRecord& record, const std::filesystem::path& dir);

std::string markdown(const campaign::CampaignRecord& record, const std::filesystem::path& dir);
std::string html(const campaign::CampaignRecord& record, const std::filesystem::path& dir);

/// Best-so-far tokens/s/GPU against GPU-hours spent, as standalone SVG (no script, no network).
std::string throughput_svg(const campaign::CampaignRecord& record);

}  // namespace attune::report
