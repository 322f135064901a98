#include <attune/report/lessons.hpp>
#include <attune/report/report.hpp>

#include <attune/core/error.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/sim/from_recipe.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace attune::report {

namespace {

using campaign::CampaignRecord;
using campaign::Stage;
using campaign::TrialRecord;

std::string edits_text(const policy::Edits& edits) {
    std::string out;
    for (const auto& [key, value] : edits) out += (out.empty() ? "" : ", ") + key + ": " + value.to_string();
    return out.empty() ? "(as given)" : out;
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


bool layout_lever(const std::string& lever) {
    const auto& levers = policy::layout_levers();
    return std::find(levers.begin(), levers.end(), lever) != levers.end();
}

/// The layout levers in the order the campaign first moved them to an accepted configuration.
std::vector<std::string> layout_order(const CampaignRecord& record) {
    std::vector<std::string> order;
    for (const auto& t : record.trials)
        if (t.view.accepted && t.view.kind == "candidate" && layout_lever(t.view.lever) &&
            std::find(order.begin(), order.end(), t.view.lever) == order.end())
            order.push_back(t.view.lever);
    return order;
}

/// The campaign's own: the largest measured peak over the preflight's estimate among its runs that finished.
std::optional<double> measured_memory_bias(const CampaignRecord& record) {
    std::optional<double> bias;
    for (const auto& t : record.trials)
        if (const auto ratio = policy::peak_over_estimate(t.view)) bias = std::max(bias.value_or(1.0), *ratio);
    return bias;
}

/// One edit of a trial's change as a flag: its key is the path's last part.
policy::LessonFlag flag_of(const TrialRecord& t, const std::string& path, const recipe::Value& value) {
    const auto dot = path.rfind('.');
    return {t.view.lever, dot == std::string::npos ? path : path.substr(dot + 1), value, t.gain.value_or(0)};
}

/// The accepted moves of levers outside the layout, each edit as a flag, in the order accepted.
std::vector<policy::LessonFlag> accepted_flags(const CampaignRecord& record) {
    std::vector<policy::LessonFlag> flags;
    for (const auto& t : record.trials) {
        if (!t.view.accepted || t.view.kind != "candidate" || layout_lever(t.view.lever)) continue;
        for (const auto& [path, value] : change_of(record, t)) flags.push_back(flag_of(t, path, value));
    }
    return flags;
}

/// The run failed because of the cluster, not the move (nothing to learn about the move). A time limit
/// is the move's: sized to its steps before launch, it says the change is slower than allowed or hangs
/// (skills/rules/search.yaml's on_failure reverts it without a retry).
bool cluster_fault(const std::string& status) { return status == "node-failure" || status == "preempted"; }

/// The flag moves measured and not kept, each edit once, unless a later trial kept it: reverted, or
/// failed for a reason of the move's own.
std::vector<policy::LessonMiss> missed_flags(const CampaignRecord& record, const std::vector<policy::LessonFlag>& kept) {
    std::vector<policy::LessonMiss> hurt;
    const auto same = [](const policy::LessonFlag& a, const policy::LessonFlag& b) {
        return a.lever == b.lever && a.key == b.key && a.value.same_as(b.value);
    };
    for (const auto& t : record.trials) {
        if (t.view.accepted || t.view.kind != "candidate" || layout_lever(t.view.lever) || !t.view.measured) continue;
        const std::string& status = t.view.measured->status;
        if (cluster_fault(status) || (status == "ok" && t.stage != Stage::decided && t.stage != Stage::confirmed)) continue;
        const std::string why = status == "ok" ? "reverted" : status == "oom" ? "out-of-memory" : "failed";
        for (const auto& [path, value] : change_of(record, t)) {
            auto move = flag_of(t, path, value);
            const auto found = [&](const policy::LessonFlag& f) { return same(f, move); };
            if (std::none_of(kept.begin(), kept.end(), found) &&
                std::none_of(hurt.begin(), hurt.end(), [&](const policy::LessonMiss& m) { return found(m.move); }))
                hurt.push_back({std::move(move), why});
        }
    }
    return hurt;
}

/// The best layout in the terms that transfer, where the simulator reads the recipe's shape.
std::optional<policy::LessonLayout> best_layout(const CampaignRecord& record, const campaign::Context& context) {
    try {
        const policy::ConfigSpace space(context.original, *context.adapter, context.cluster, *context.rules, context.gate_policy);
        const auto point = space.point_of(record.best().view.edits);
        if (!point) return std::nullopt;
        const auto& in = space.inputs();
        return policy::layout_at(space, *point, sim::nvlink_reach(in.hardware, in.layout.gpus_per_node));
    } catch (const InputError&) {
        return std::nullopt;  // the model's shape is not in the recipe: the prose alone
    }
}

}  // namespace

policy::Lesson lesson_of(const CampaignRecord& record, const campaign::Context& context) {
    const auto query = policy::lesson_query(context.original, *context.adapter, context.cluster);
    const auto& start = record.start;
    policy::Lesson lesson;
    lesson.model_family = query.family;
    lesson.model = context.adapter->model_name(context.original).value_or(context.original.origin());
    lesson.params_b = query.params_b;
    lesson.moe = query.moe;
    lesson.gpu = query.gpu;
    lesson.gpus = query.gpus;
    lesson.framework = query.framework;
    lesson.seq_len = int(context.adapter->quantity(context.original, "seq_len", context.cluster).value_or(0));
    lesson.source = fmt::format("attune campaign {} ({} backend, {} policy)", start.value("time", ""), start.value("backend", ""),
                                start.value("policy", ""));
    lesson.confidence = "measured";
    lesson.layout = best_layout(record, context);
    if (lesson.layout) lesson.order = layout_order(record);
    lesson.flags = accepted_flags(record);
    lesson.hurt = missed_flags(record, lesson.flags);
    lesson.memory_bias = measured_memory_bias(record);
    lesson.trials = int(record.trials.size());
    const auto speed = [](const TrialRecord* t) -> std::optional<double> {
        return t && t->view.measured && t->view.measured->status == "ok" ? t->view.measured->tokens_per_s_per_gpu : std::nullopt;
    };
    if (const auto base = speed(record.baseline()), best = speed(&record.best()); base && best && *base > 0) lesson.gain = *best / *base - 1;
    return lesson;
}

std::string lessons(const CampaignRecord& record, const policy::Lesson& lesson) {
    std::string out = policy::front_matter(lesson);
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
