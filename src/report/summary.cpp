#include <attune/campaign/budget.hpp>
#include <attune/report/report.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::report {

namespace {

using campaign::CampaignRecord;
using campaign::Stage;
using campaign::TrialRecord;
using nlohmann::json;

json figures(const TrialRecord& trial) {
    json out = json::object();
    if (!trial.view.measured) return out;
    const auto& m = *trial.view.measured;
    out["status"] = m.status;
    const auto put = [&](const char* key, const std::optional<double>& value) { out[key] = value ? json(*value) : json(nullptr); };
    put("tokens_per_s_per_gpu", m.tokens_per_s_per_gpu);
    put("tflops_per_gpu", m.tflops_per_gpu);
    put("mfu", m.mfu);
    put("step_time_s", m.step_time_s);
    put("noise", m.noise);
    put("peak_memory_gib", m.peak_memory_gib);
    out["bottleneck"] = m.bottleneck;
    return out;
}

/// The edits a trial made against its incumbent (the baseline makes none).
json change_of(const TrialRecord& trial, const CampaignRecord& record) {
    json out = json::object();
    const TrialRecord* incumbent = record.trial(trial.view.incumbent);
    for (const auto& [path, value] : trial.view.edits) {
        const bool inherited = incumbent && incumbent->view.edits.contains(path) &&
                               incumbent->view.edits.at(path).same_as(value);
        if (!inherited || trial.view.kind == "confirm") out[path] = value.to_json();
    }
    return out;
}

std::optional<double> speed(const TrialRecord* trial) {
    if (trial == nullptr || !trial->view.measured || trial->view.measured->status != "ok") return std::nullopt;
    return trial->view.measured->tokens_per_s_per_gpu;
}

std::string show(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

}  // namespace

std::string verdict_of(const TrialRecord& trial) {
    switch (trial.stage) {
        case Stage::refused: return "refused";
        case Stage::predicted: return trial.view.outcome;
        case Stage::decided:
        case Stage::confirmed: return trial.decision;
        default: return "pending";
    }
}

json summary_json(const CampaignRecord& record, const std::filesystem::path& dir) {
    const TrialRecord* base = record.baseline();
    const TrialRecord& best = record.best();
    json out;
    out["baseline"] = base ? figures(*base) : json::object();
    out["best"] = figures(best);
    out["best"]["trial"] = best.view.n;
    out["best"]["edits"] = policy::edits_to_json(best.view.edits);
    const auto b = speed(base), w = speed(&best);
    out["speedup"] = b && w ? json(*w / *b) : json(nullptr);
    out["budget_gpu_hours"] = record.budget_gpu_s() / 3600;
    out["gpu_hours_spent"] = record.spent_gpu_s / 3600;
    int launched = 0, refused = 0, failed = 0, predicted = 0;
    json trials = json::array();
    for (const auto& t : record.trials) {
        launched += t.attempts;
        refused += t.stage == Stage::refused ? 1 : 0;
        predicted += t.stage == Stage::predicted ? 1 : 0;
        failed += t.view.measured && t.view.measured->status != "ok" ? 1 : 0;
        trials.push_back({{"n", t.view.n},
                          {"kind", t.view.kind},
                          {"lever", t.view.lever},
                          {"edits", change_of(t, record)},
                          {"verdict", verdict_of(t)},
                          {"reason", t.stage == Stage::refused || t.stage == Stage::predicted ? t.refusal : t.reason},
                          {"status", t.view.measured ? json(t.view.measured->status) : json(nullptr)},
                          {"tokens_per_s_per_gpu", speed(&t) ? json(*speed(&t)) : json(nullptr)},
                          {"gpu_hours", t.gpu_seconds / 3600},
                          {"lesson", t.view.lesson.empty() ? json(nullptr) : json(t.view.lesson)}});
    }
    out["trials"] = trials;
    out["lessons"] = record.start.value("lessons", json::array());
    out["launched"] = launched;
    out["refused"] = refused;
    out["predicted_to_fail"] = predicted;
    out["failed"] = failed;
    if (record.llm_exchanges > 0)
        out["llm"] = {{"calls", record.llm_exchanges}, {"input_tokens", record.llm_input_tokens},
                      {"output_tokens", record.llm_output_tokens}, {"refused_answers", record.llm_refusals},
                      {"fallbacks_to_rules", record.llm_fallbacks}};
    out["stop_reason"] = record.end ? json(record.end->value("reason", "")) : json(nullptr);
    out["finished"] = record.end.has_value();
    out["best_recipe"] = campaign::best_recipe_path(dir, record).string();
    out["campaign_dir"] = dir.string();
    return out;
}

std::string trial_line(const CampaignRecord& record, const TrialRecord& trial) {
    std::string change;
    if (trial.view.kind == "baseline") change = "baseline";
    else if (trial.view.kind == "confirm") change = "confirm best";
    else {
        const json changed = change_of(trial, record);
        for (const auto& [key, value] : changed.items()) change += (change.empty() ? "" : ", ") + key + "=" + show(value);
    }
    std::string speed_text = "-";
    if (const auto s = speed(&trial)) {
        speed_text = fmt::format("{:.0f} tok/s/GPU", *s);
        if (trial.gain) speed_text += fmt::format(" ({:+.1f}%)", 100 * *trial.gain);
    } else if (trial.view.measured) {
        speed_text = trial.view.measured->status;
    }
    return fmt::format("trial {:>3}  {:<10} {:<48} {:<13} {:<28} {}/{}", trial.view.n, trial.view.lever.empty() ? "-" : trial.view.lever,
                       change, verdict_of(trial), speed_text, campaign::format_gpu_hours(record.spent_gpu_s),
                       campaign::format_gpu_hours(record.budget_gpu_s()));
}

std::string budget_bar(const CampaignRecord& record, int width) {
    const double fraction = record.budget_gpu_s() > 0 ? std::clamp(record.spent_gpu_s / record.budget_gpu_s(), 0.0, 1.0) : 0.0;
    const int filled = static_cast<int>(fraction * width + 0.5);
    return fmt::format("[{}{}] {} of {}, {} trials", std::string(std::size_t(filled), '#'), std::string(std::size_t(width - filled), '.'),
                       campaign::format_gpu_hours(record.spent_gpu_s), campaign::format_gpu_hours(record.budget_gpu_s()),
                       record.trials.size());
}

std::string terminal_summary(const CampaignRecord& record, const std::filesystem::path& dir) {
    const json s = summary_json(record, dir);
    std::string out;
    const auto row = [&](const char* name, const json& figures) {
        const auto num = [&](const char* key, const char* format, double scale) {
            return figures.contains(key) && figures[key].is_number() ? fmt::format(fmt::runtime(format), scale * figures[key].get<double>())
                                                                     : std::string("-");
        };
        out += fmt::format("{:<9} {:>12} {:>12} {:>7} {:>10}\n", name, num("tokens_per_s_per_gpu", "{:.0f}", 1),
                           num("tflops_per_gpu", "{:.0f}", 1), num("mfu", "{:.1f}%", 100), num("step_time_s", "{:.2f} s", 1));
    };
    out += fmt::format("{:<9} {:>12} {:>12} {:>7} {:>10}\n", "", "tok/s/GPU", "TFLOP/s/GPU", "MFU", "step");
    row("baseline", s["baseline"]);
    row("best", s["best"]);
    out += s["speedup"].is_number() ? fmt::format("speed-up  {:.2f}x\n", s["speedup"].get<double>())
                                    : std::string("speed-up  - (no configuration ran to completion)\n");
    out += "\nwinning levers (against the original recipe):\n";
    if (s["best"]["edits"].empty()) out += "  none: the original recipe stays the best measured\n";
    for (const auto& [key, value] : s["best"]["edits"].items()) out += fmt::format("  {}: {}\n", key, show(value));
    out += fmt::format("\nbudget    {} of {} spent\n", campaign::format_gpu_hours(record.spent_gpu_s),
                       campaign::format_gpu_hours(record.budget_gpu_s()));
    out += fmt::format("trials    {} proposed, {} launched, {} refused by the gate, {} stopped by preflight, {} failed\n",
                       record.trials.size(), s["launched"].get<int>(), s["refused"].get<int>(),
                       s["predicted_to_fail"].get<int>(), s["failed"].get<int>());
    if (record.llm_exchanges > 0)
        out += fmt::format("llm       {} calls, {} input + {} output tokens, {} answers refused, {} steps fell back to rules\n",
                           record.llm_exchanges, record.llm_input_tokens, record.llm_output_tokens, record.llm_refusals,
                           record.llm_fallbacks);
    if (record.end) out += fmt::format("stopped   {}\n", record.end->value("reason", ""));
    out += fmt::format("files     {} (best recipe), {} (report), {} (journal)\n", campaign::best_recipe_path(dir, record).string(),
                       (dir / "report.md").string(), (dir / "journal.jsonl").string());
    return out;
}

}  // namespace attune::report
