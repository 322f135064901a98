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

/// `llama3` from `meta-llama/Meta-Llama-3-8B`: the first known family name in the model's name,
/// with the version digits that follow it (the families lessons files use, skills/lessons/README.md).
std::string family_of(const LessonFacts& facts) {
    const auto slash = facts.model.rfind('/');  // `meta-llama/` names the publisher, not the model
    std::string name;
    for (const char c : facts.model.substr(slash == std::string::npos ? 0 : slash + 1))
        name += char(std::tolower(static_cast<unsigned char>(c)));
    const auto digit = [&](std::size_t i) { return i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); };
    for (const std::string family : {"llama", "mixtral", "mistral", "qwen", "deepseek", "gemma", "nemotron", "glm", "gpt"}) {
        const auto at = name.find(family);
        if (at == std::string::npos) continue;
        std::size_t start = at + family.size();
        if (start < name.size() && (name[start] == '-' || name[start] == '_') && digit(start + 1)) ++start;
        std::size_t end = start;
        while (digit(end)) ++end;
        // A version, not a size: `Llama-3.1-70B` is llama3, `Mixtral-8x7B` is mixtral.
        const bool version = end > start && (end == name.size() || !std::isalpha(static_cast<unsigned char>(name[end])));
        return family + (version ? name.substr(start, end - start) : "");
    }
    return "unknown";
}

/// The edits a trial made on top of the incumbent it was proposed against.
policy::Edits change_of(const CampaignRecord& record, const TrialRecord& t) {
    const TrialRecord* incumbent = record.trial(t.view.incumbent);
    policy::Edits change;
    for (const auto& [key, value] : t.view.edits)
        if (!incumbent || !incumbent->view.edits.contains(key) || !incumbent->view.edits.at(key).same_as(value))
            change.insert_or_assign(key, value);
    return change;
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
            out += fmt::format("| {} | {} | {} | trial {}, {} |\n", t.view.lever, edits_text(change_of(record, t)),
                               t.gain ? fmt::format("{:+.1f}%", 100 * *t.gain) : "-", t.view.n, speed(t));
    out += "\n## What failed or was refused, and why\n";
    for (const auto& t : record.trials) {
        const std::string verdict = verdict_of(t);
        if (verdict == "refused" || verdict == "predicted-oom" || verdict == "infeasible")
            out += fmt::format("- {} ({}): {} — {}\n", t.view.lever, edits_text(change_of(record, t)), verdict, t.refusal);
        else if (t.view.measured && t.view.measured->status != "ok")
            out += fmt::format("- {} ({}): {} — {}\n", t.view.lever, edits_text(change_of(record, t)), t.view.measured->status,
                               t.evidence.empty() ? t.reason : t.evidence.front());
    }
    out += "\n## For the next campaign\n";
    out += record.incumbent == 0 ? "No single-lever change beat the recipe as given beyond noise; start elsewhere.\n"
                                 : fmt::format("Start from the final layout above ({}).\n", speed(best));
    if (record.end) out += fmt::format("The campaign stopped because: {}\n", record.end->value("reason", ""));
    return out;
}

}  // namespace attune::report
