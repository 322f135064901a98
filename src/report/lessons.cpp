#include <attune/report/lessons.hpp>
#include <attune/report/report.hpp>

#include <fmt/format.h>

#include <cctype>

namespace attune::report {

namespace {

using campaign::CampaignRecord;
using campaign::TrialRecord;

std::string edits_text(const policy::Edits& edits) {
    std::string out;
    for (const auto& [key, value] : edits) out += (out.empty() ? "" : ", ") + key + ": " + value.to_string();
    return out.empty() ? "(as given)" : out;
}

/// `llama3` from `meta-llama/Llama-3.1-70B` or a recipe name: the leading letters and digits.
std::string family_of(const LessonFacts& facts) {
    std::string name = facts.model;
    if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    std::string family;
    for (const char c : name) {
        if (std::isalpha(static_cast<unsigned char>(c))) family += char(std::tolower(static_cast<unsigned char>(c)));
        else if (std::isdigit(static_cast<unsigned char>(c)) && !family.empty()) {
            family += c;
            break;
        } else if (!family.empty() && c != '-' && c != '_') break;
    }
    return family.empty() ? "unknown" : family;
}

std::string speed(const TrialRecord& t) {
    const auto& m = t.view.measured;
    return m && m->tokens_per_s_per_gpu ? fmt::format("{:.0f} tokens/s/GPU", *m->tokens_per_s_per_gpu) : "-";
}

}  // namespace

std::string lessons(const CampaignRecord& record, const LessonFacts& facts) {
    const auto& start = record.start;
    std::string out = "---\nlessons: 1\n";
    out += fmt::format("model_family: {}\nmodel: \"{}\"\n", family_of(facts), facts.model);
    out += fmt::format("params_b: {:.1f}\nmoe: {}\n", facts.params_b, facts.moe ? "true" : "false");
    out += fmt::format("gpu: {}\ngpus: {}\n", start["cluster"].value("gpu", ""), facts.gpus);
    out += fmt::format("framework: {}\nseq_len: {}\n", start.value("framework", ""), facts.seq_len);
    out += fmt::format("source: \"attune campaign {} ({} backend, {} policy)\"\n", start.value("time", ""),
                       start.value("backend", ""), start.value("policy", ""));
    out += "confidence: measured\n---\n";
    const TrialRecord& best = record.best();
    out += fmt::format("## Final layout\n{}; {}.\n\n", edits_text(best.view.edits), speed(best));
    out += "## What helped (in the order accepted)\n| lever | change | gain | evidence |\n| --- | --- | --- | --- |\n";
    for (const auto& t : record.trials)
        if (t.view.accepted && t.view.kind == "candidate")
            out += fmt::format("| {} | {} | {} | trial {}, {} |\n", t.view.lever, edits_text(t.view.edits),
                               t.gain ? fmt::format("{:+.1f}%", 100 * *t.gain) : "-", t.view.n, speed(t));
    out += "\n## What failed or was refused, and why\n";
    for (const auto& t : record.trials) {
        const std::string verdict = verdict_of(t);
        if (verdict == "refused" || verdict == "predicted-oom" || verdict == "infeasible")
            out += fmt::format("- {} ({}): {} — {}\n", t.view.lever, edits_text(t.view.edits), verdict, t.refusal);
        else if (t.view.measured && t.view.measured->status != "ok")
            out += fmt::format("- {} ({}): {} — {}\n", t.view.lever, edits_text(t.view.edits), t.view.measured->status,
                               t.evidence.empty() ? t.reason : t.evidence.front());
    }
    out += "\n## For the next campaign\n";
    out += record.incumbent == 0 ? "No single-lever change beat the recipe as given beyond noise; start elsewhere.\n"
                                 : fmt::format("Start from the final layout above ({}).\n", speed(best));
    if (record.end) out += fmt::format("The campaign stopped because: {}\n", record.end->value("reason", ""));
    return out;
}

}  // namespace attune::report
