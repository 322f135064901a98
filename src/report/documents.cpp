#include <attune/campaign/budget.hpp>
#include <attune/report/report.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::report {

namespace {

using campaign::CampaignRecord;
using campaign::TrialRecord;
using nlohmann::json;

std::string show(const json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

std::string number(const json& value, const char* format = "{:.0f}") {
    return value.is_number() ? fmt::format(fmt::runtime(format), value.get<double>()) : "-";
}

/// Text from logs, recipes or an LLM may hold markup: escape it before it enters HTML or SVG.
std::string escape_html(std::string_view text) {
    std::string out;
    for (const char c : text) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

std::string escape_md(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '|') out += "\\|";
        else if (c == '\n') out += ' ';
        else out += c;
    }
    return out;
}

std::string edits_text(const json& edits) {
    std::string out;
    for (const auto& [key, value] : edits.items()) out += (out.empty() ? "" : ", ") + key + "=" + show(value);
    return out.empty() ? "-" : out;
}

struct Section {
    std::string title;
    std::vector<std::string> lines;
};

/// The diagnoses and evidence of every launched trial, shared by the Markdown and HTML forms.
std::vector<Section> diagnoses(const CampaignRecord& record) {
    std::vector<Section> out;
    for (const auto& t : record.trials) {
        if (!t.view.measured) continue;
        Section s{fmt::format("Trial {} ({})", t.view.n, t.view.measured->status), {}};
        s.lines.push_back(fmt::format("bottleneck: {}{}", t.view.measured->bottleneck,
                                      t.view.measured->explanation.empty() ? "" : " — " + t.view.measured->explanation));
        if (!t.rationale.empty()) s.lines.push_back("why this trial: " + t.rationale);
        for (const auto& e : t.evidence) s.lines.push_back("evidence: " + e);
        out.push_back(std::move(s));
    }
    return out;
}

}  // namespace

std::string markdown(const CampaignRecord& record, const std::filesystem::path& dir) {
    const json s = summary_json(record, dir);
    std::string out = fmt::format("# attune campaign: {}\n\n", record.start.value("recipe", ""));
    out += fmt::format("Framework {}, backend {}, policy {}, cluster {} × {} {}. Budget {}; spent {}.\n\n",
                       record.start.value("framework", ""), record.start.value("backend", ""), record.start.value("policy", ""),
                       record.start["cluster"].value("nodes", 0), record.start["cluster"].value("gpus_per_node", 0),
                       record.start["cluster"].value("gpu", ""), campaign::format_gpu_hours(record.budget_gpu_s()),
                       campaign::format_gpu_hours(record.spent_gpu_s));
    out += "## Result\n\n| | tokens/s/GPU | TFLOP/s/GPU | MFU | step time (s) |\n|---|---|---|---|---|\n";
    for (const char* which : {"baseline", "best"})
        out += fmt::format("| {} | {} | {} | {} | {} |\n", which, number(s[which].value("tokens_per_s_per_gpu", json())),
                           number(s[which].value("tflops_per_gpu", json())),
                           s[which].value("mfu", json()).is_number() ? fmt::format("{:.1f}%", 100 * s[which]["mfu"].get<double>()) : "-",
                           number(s[which].value("step_time_s", json()), "{:.3f}"));
    out += s["speedup"].is_number() ? fmt::format("\nSpeed-up: **{:.2f}×**. ", s["speedup"].get<double>())
                                    : std::string("\nNo configuration ran to completion: the recipe as given could not be measured, and no single-lever change made it run. ");
    if (record.llm_exchanges > 0)
        out += fmt::format("LLM: {} calls, {} input + {} output tokens, {} answers refused, {} steps fell back to rules. ",
                           record.llm_exchanges, record.llm_input_tokens, record.llm_output_tokens, record.llm_refusals,
                           record.llm_fallbacks);
    if (!s["lessons"].empty())
        out += fmt::format("Lessons read (best first): {}. ", escape_md(fmt::format("{}", fmt::join(s["lessons"].get<std::vector<std::string>>(), ", "))));
    out += fmt::format("Stopped: {}\n\n", escape_md(s["stop_reason"].is_string() ? s["stop_reason"].get<std::string>() : "still running"));
    out += "## Winning levers\n\n```diff\n";
    if (s["best"]["edits"].empty()) out += "  (none: the original recipe stays the best measured)\n";
    for (const auto& [key, value] : s["best"]["edits"].items()) out += fmt::format("+ {}: {}\n", key, show(value));
    out += "```\n\n## Trials\n\n| # | lever | change | verdict | status | tokens/s/GPU | GPU-h | reason |\n|---|---|---|---|---|---|---|---|\n";
    for (const auto& t : s["trials"])
        out += fmt::format("| {} | {} | {} | {} | {} | {} | {:.2f} | {} |\n", t["n"].get<int>(),
                           escape_md(t["lever"].get<std::string>() + (t["lesson"].is_string() ? " (lesson " + t["lesson"].get<std::string>() + ")" : "")),
                           escape_md(edits_text(t["edits"])), t["verdict"].get<std::string>(),
                           t["status"].is_string() ? t["status"].get<std::string>() : "-", number(t["tokens_per_s_per_gpu"]),
                           t["gpu_hours"].get<double>(), escape_md(t["reason"].get<std::string>()));
    out += "\n## Diagnoses\n\n";
    for (const auto& section : diagnoses(record)) {
        out += "### " + section.title + "\n\n";
        for (const auto& line : section.lines) out += "- " + escape_md(line) + "\n";
        out += "\n";
    }
    return out;
}

std::string throughput_svg(const CampaignRecord& record) {
    constexpr double width = 640, height = 320, left = 60, right = 20, top = 20, bottom = 40;
    std::vector<std::pair<double, double>> points;  // (GPU-h spent, best tokens/s/GPU so far)
    double spent = 0, best = 0;
    for (const auto& t : record.trials) {
        spent += t.gpu_seconds / 3600;
        if (t.view.measured && t.view.measured->status == "ok" && t.view.measured->tokens_per_s_per_gpu &&
            (t.view.kind == "baseline" || t.view.accepted))
            best = std::max(best, *t.view.measured->tokens_per_s_per_gpu);
        if (best > 0) points.emplace_back(spent, best);
    }
    const double max_x = std::max(record.budget_gpu_s() / 3600, 1e-9);
    double max_y = 1;
    for (const auto& [x, y] : points) max_y = std::max(max_y, y * 1.1);
    const auto px = [&](double x) { return left + (width - left - right) * x / max_x; };
    const auto py = [&](double y) { return height - bottom - (height - top - bottom) * y / max_y; };
    std::string path;
    for (const auto& [x, y] : points) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
    std::string svg = fmt::format(R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}">)svg", width, height);
    svg += fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)svg", left, top, width - left - right,
                       height - top - bottom);
    svg += fmt::format(R"svg(<text x="{}" y="{}" font-size="12" text-anchor="middle">GPU-hours spent (budget {:.0f})</text>)svg",
                       (width + left) / 2, height - 8, max_x);
    svg += fmt::format(R"svg(<text x="14" y="{}" font-size="12" transform="rotate(-90 14 {})" text-anchor="middle">best tokens/s/GPU</text>)svg",
                       (height - bottom + top) / 2, (height - bottom + top) / 2);
    svg += fmt::format(R"svg(<text x="{}" y="{}" font-size="10" text-anchor="end">{:.0f}</text>)svg", left - 4, py(max_y) + 10, max_y);
    svg += fmt::format(R"svg(<text x="{}" y="{}" font-size="10" text-anchor="end">0</text>)svg", left - 4, py(0));
    if (!path.empty()) svg += fmt::format(R"svg(<path d="{}" fill="none" stroke="#1f77b4" stroke-width="2"/>)svg", path);
    for (const auto& [x, y] : points) svg += fmt::format(R"svg(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="#1f77b4"/>)svg", px(x), py(y));
    return svg + "</svg>";
}

std::string html(const CampaignRecord& record, const std::filesystem::path& dir) {
    const json s = summary_json(record, dir);
    std::string out = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>attune campaign</title>"
                      "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
                      "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%}code{background:#f4f4f4}</style></head><body>\n";
    out += fmt::format("<h1>attune campaign: {}</h1>\n", escape_html(record.start.value("recipe", "")));
    out += fmt::format("<p>Speed-up: <b>{}</b>. Budget {}; spent {}. Stopped: {}</p>\n",
                       s["speedup"].is_number() ? fmt::format("{:.2f}×", s["speedup"].get<double>()) : "none (nothing ran)",
                       campaign::format_gpu_hours(record.budget_gpu_s()), campaign::format_gpu_hours(record.spent_gpu_s),
                       escape_html(s["stop_reason"].is_string() ? s["stop_reason"].get<std::string>() : "still running"));
    out += "<h2>Throughput against GPU-hours</h2>\n" + throughput_svg(record) + "\n<h2>Winning levers</h2>\n<ul>\n";
    for (const auto& [key, value] : s["best"]["edits"].items())
        out += fmt::format("<li><code>{}: {}</code></li>\n", escape_html(key), escape_html(show(value)));
    out += "</ul>\n<h2>Trials</h2>\n<table><tr><th>#</th><th>lever</th><th>change</th><th>verdict</th><th>status</th>"
           "<th>tokens/s/GPU</th><th>GPU-h</th><th>reason</th></tr>\n";
    for (const auto& t : s["trials"])
        out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td></tr>\n",
                           t["n"].get<int>(), escape_html(t["lever"].get<std::string>()), escape_html(edits_text(t["edits"])),
                           t["verdict"].get<std::string>(), t["status"].is_string() ? t["status"].get<std::string>() : "-",
                           number(t["tokens_per_s_per_gpu"]), t["gpu_hours"].get<double>(), escape_html(t["reason"].get<std::string>()));
    out += "</table>\n<h2>Diagnoses</h2>\n";
    for (const auto& section : diagnoses(record)) {
        out += "<h3>" + escape_html(section.title) + "</h3>\n<ul>\n";
        for (const auto& line : section.lines) out += "<li>" + escape_html(line) + "</li>\n";
        out += "</ul>\n";
    }
    return out + "</body></html>\n";
}

}  // namespace attune::report
