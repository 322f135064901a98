#include <attune/diagnose/report.hpp>

#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <cmath>

namespace attune::diagnose {
namespace {

// JSON has no NaN: a value the log printed as nan/inf, or did not print, is null.
nlohmann::json number_or_null(const std::optional<double>& value) {
    if (!value || !std::isfinite(*value)) {
        return nullptr;
    }
    return *value;
}

// A per-step value as JSON text: the shortest decimal that reads back the same double, or null.
std::string json_number(const std::optional<double>& value) {
    return value && std::isfinite(*value) ? fmt::format("{}", *value) : std::string("null");
}

std::string shown(const std::optional<double>& value, std::string_view unit) {
    return value && std::isfinite(*value) ? util::format_number(std::round(*value * 1000.0) / 1000.0) + std::string(unit) : "-";
}

}  // namespace

nlohmann::json to_json(const RunMetrics& metrics, const Diagnosis& diagnosis) {
    nlohmann::json evidence = nlohmann::json::array();
    for (const auto& item : metrics.evidence) {
        evidence.push_back({{"line", item.line == 0 ? nlohmann::json(nullptr) : nlohmann::json(item.line)}, {"text", item.text}});
    }
    nlohmann::json facts = nlohmann::json::object();
    for (const auto& [name, value] : diagnosis.facts) {
        facts[name] = number_or_null(value);
    }
    return {{"dialect", metrics.dialect.empty() ? nlohmann::json(nullptr) : nlohmann::json(metrics.dialect)},
            {"status", status_name(metrics.status)},
            {"cause", metrics.cause.empty() ? nlohmann::json(nullptr) : nlohmann::json(metrics.cause)},
            {"steps_seen", metrics.steps.size()},
            {"last_step", metrics.last_step ? nlohmann::json(*metrics.last_step) : nlohmann::json(nullptr)},
            {"steady",
             {{"steps_used", metrics.steady.steps_used},
              {"step_time_s", number_or_null(metrics.steady.step_time_s)},
              {"tokens_per_s_per_gpu", number_or_null(metrics.steady.tokens_per_s_per_gpu)},
              {"tflops_per_gpu", number_or_null(metrics.steady.tflops_per_gpu)},
              {"noise", number_or_null(metrics.steady.noise)}}},
            {"peak_memory_gib", number_or_null(metrics.peak_memory_gib)},
            {"bottleneck", diagnosis.bottleneck},
            {"bottleneck_rule", diagnosis.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(diagnosis.rule)},
            {"headroom", diagnosis.headroom},
            {"facts", facts},
            {"evidence", evidence}};
}

void write_json(std::ostream& out, const nlohmann::json& document, const RunMetrics& metrics, bool with_steps) {
    auto text = document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!with_steps) {
        out << text << '\n';
        return;
    }
    text.resize(text.size() - 2);  // the closing "\n}": the steps go last
    out << text << ",\n  \"steps\": [";
    fmt::memory_buffer line;
    for (std::size_t i = 0; i < metrics.steps.size(); ++i) {
        const auto& step = metrics.steps[i];
        line.clear();
        fmt::format_to(std::back_inserter(line),
                       "{}\n    {{\"step\": {}, \"step_time_s\": {}, \"tokens_per_s_per_gpu\": {}, \"tflops_per_gpu\": {}, "
                       "\"loss\": {}, \"grad_norm\": {}, \"memory_gib\": {}}}",
                       i == 0 ? "" : ",", step.step, json_number(step.step_time_s), json_number(step.tokens_per_s_per_gpu),
                       json_number(step.tflops_per_gpu), json_number(step.loss), json_number(step.grad_norm), json_number(step.memory_gib));
        out.write(line.data(), static_cast<std::streamsize>(line.size()));
    }
    out << (metrics.steps.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

std::string to_text(const RunMetrics& metrics, const Diagnosis& diagnosis) {
    std::string out = fmt::format("dialect:    {}\nstatus:     {}{}\nsteps:      {} seen, last step {}\n",
                                  metrics.dialect.empty() ? "-" : metrics.dialect, status_name(metrics.status),
                                  metrics.cause.empty() ? "" : " (" + metrics.cause + ")", metrics.steps.size(),
                                  metrics.last_step ? std::to_string(*metrics.last_step) : "-");
    out += fmt::format("steady:     {} steps, step time {}, {} tokens/s/GPU, {} TFLOP/s/GPU, noise {}\n", metrics.steady.steps_used,
                       shown(metrics.steady.step_time_s, " s"), shown(metrics.steady.tokens_per_s_per_gpu, ""),
                       shown(metrics.steady.tflops_per_gpu, ""), shown(metrics.steady.noise, ""));
    out += fmt::format("peak mem:   {}\n", shown(metrics.peak_memory_gib, " GiB"));
    out += fmt::format("bottleneck: {}{}\n", diagnosis.bottleneck, diagnosis.explanation.empty() ? "" : " (" + diagnosis.explanation + ")");
    for (const auto& headroom : diagnosis.headroom) {
        out += fmt::format("headroom:   {}\n", headroom);
    }
    for (const auto& item : metrics.evidence) {
        out += item.line == 0 ? fmt::format("evidence:   {}\n", item.text) : fmt::format("evidence:   line {}: {}\n", item.line, item.text);
    }
    return out;
}

}  // namespace attune::diagnose
