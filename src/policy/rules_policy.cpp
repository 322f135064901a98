#include <attune/core/error.hpp>
#include <attune/policy/layout_plan.hpp>
#include <attune/policy/lesson_guide.hpp>
#include <attune/policy/rules_policy.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace attune::policy {

namespace {

using recipe::Value;

std::string flag_name(std::string text) {
    std::replace(text.begin(), text.end(), '-', '_');
    return text;
}

bool ends_with_key(std::string_view path, std::string_view key) {
    return path == key || (path.size() > key.size() && path.ends_with(key) && path[path.size() - key.size() - 1] == '.');
}

bool exact(const gate::KeyRule& rule) { return recipe::is_key_path(rule.pattern); }

/// A concrete proposal built from a move for the current incumbent.
struct Candidate {
    const Move* move = nullptr;
    std::size_t phase = 0;
    Edits edits;
    std::string lever;
    std::string rationale;
    std::optional<Preflight> estimate;
    bool planned = false;  ///< chosen by the layout planner, on the way to a faster layout
    double plan_gain = 0;  ///< the planned layout's predicted gain over the incumbent
    bool explores = true;  ///< may lead toward a layout predicted only a little faster (Phase::explore_when)
};

class Resolver {
public:
    /// `spell_recompute`: the family's recompute keys are named by no move (see spelt_recompute).
    Resolver(const CampaignState& state, const recipe::Document& incumbent, gate::Expression::Lookup facts, bool spell_recompute)
        : m_state(state), m_adapter(*state.adapter), m_incumbent(incumbent), m_facts(std::move(facts)),
          m_spell_recompute(spell_recompute) {}

    /// The move's edits against the incumbent, or nullopt when the move does not apply.
    std::optional<Edits> resolve(const Move& move) const {
        for (const auto& [lever, wanted] : move.requires_values)
            if (!lever_is(lever, wanted)) return std::nullopt;
        const auto target = target_of(move);
        if (!target) return m_spell_recompute ? spelt_recompute(move) : std::nullopt;
        const auto& [path, rule] = *target;
        const std::optional<double> cur = current_number(move.lever, path);
        const auto value = move.set ? checked_set(move, *rule, path, cur) : stepped(move, *rule, path, cur);
        if (!value) return std::nullopt;
        Edits edits{{path, *value}};
        const std::optional<double> new_number = number_of(*value);
        for (const auto& [key, with_value] : move.with)
            if (const auto with_path = companion_path(move.lever, key)) edits.insert_or_assign(*with_path, with_value);
        for (const auto& [lever, expr] : move.adjust) {
            const gate::KeyRule* companion = companion_rule(lever, move.lever);
            if (companion == nullptr) continue;
            const std::string companion_path = m_state.original->placed(companion->pattern);
            const auto companion_value = current_value(companion_path);
            const auto adjusted = expr.evaluate(bind(new_number, cur, companion_value ? number_of(*companion_value) : std::nullopt));
            if (!adjusted || *adjusted < 1 || std::floor(*adjusted) != *adjusted) return std::nullopt;
            const Value adjusted_value = Value::number(*adjusted);
            if (!companion->domain.violation(adjusted_value).empty()) return std::nullopt;
            edits.insert_or_assign(companion_path, adjusted_value);
        }
        return edits;
    }

private:
    /// A recompute move in a family whose recompute keys no move names (MaxText's remat_policy): the level
    /// in the family's own spelling (its runtime's `recompute`), judged by its `recompute` quantity.
    std::optional<Edits> spelt_recompute(const Move& move) const {
        if (move.lever != "recompute" || !move.set) return std::nullopt;
        const auto on = move.set->as_bool();
        const std::string level = move.set->is_null() || on == false ? "none" : on == true ? "full" : move.set->to_string();
        const auto& spelt = m_adapter.runtime().recompute;
        const auto found = spelt.find(level);
        if (found == spelt.end()) return std::nullopt;
        const double wanted = level == "none" ? 0 : level == "selective" ? 1 : 2;
        const auto have = m_adapter.has_quantity("recompute") ? m_adapter.quantity(m_incumbent, "recompute", *m_state.cluster)
                                                               : std::nullopt;
        if ((have && *have == wanted) || !guard_holds(move, wanted, have)) return std::nullopt;
        Edits edits;
        for (const auto& [path, value] : found->second) edits.insert_or_assign(m_state.original->placed(path), value);
        return edits;
    }

    gate::Expression::Lookup bind(std::optional<double> new_value, std::optional<double> cur,
                                  std::optional<double> companion = std::nullopt) const {
        return [this, new_value, cur, companion](const std::string& name) -> std::optional<double> {
            if (name == "new") return new_value;
            if (name == "cur") return cur;
            if (name == "companion") return companion;
            return m_facts(name);
        };
    }

    bool guard_holds(const Move& move, std::optional<double> new_value, std::optional<double> cur) const {
        if (!move.guard) return true;
        const auto result = move.guard->evaluate(bind(new_value, cur));
        return !result || *result != 0;  // a guard over an unknown quantity does not block (skills/README.md)
    }

    bool lever_is(const std::string& lever, const Value& wanted) const {
        const auto want = number_of(wanted);
        if (m_adapter.has_quantity(lever)) {
            const auto have = m_adapter.quantity(m_incumbent, lever, *m_state.cluster);
            return have && want && *have == *want;
        }
        if (const auto have = m_adapter.lever_value(m_incumbent, lever))
            return have->same_as(wanted, Value::Numeric::coerce);
        // Silent recipe: what the runtime does then (torchtitan's TP always shards along the sequence).
        const auto& defaults = m_adapter.runtime().defaults;
        const auto found = defaults.find(lever);
        return found != defaults.end() && wanted.as_bool() == found->second;
    }

    /// The key path and rule a move writes: the first of its keys this framework has.
    std::optional<std::pair<std::string, const gate::KeyRule*>> target_of(const Move& move) const {
        if (move.keys.empty()) {
            for (const auto& rule : m_adapter.key_rules())
                if (rule.lever == move.lever && exact(rule) &&
                    (!move.set || rule.domain.violation(*move.set).empty()))
                    return std::make_pair(m_state.original->placed(rule.pattern), &rule);
            return std::nullopt;
        }
        for (const auto& key : move.keys) {
            for (const auto& rule : m_adapter.key_rules())
                if (rule.lever == move.lever && exact(rule) && ends_with_key(rule.pattern, key))
                    return std::make_pair(m_state.original->placed(rule.pattern), &rule);
            for (const auto& rule : m_adapter.env_rules())
                if (rule.lever == move.lever && rule.pattern == key)
                    if (const auto section = env_section()) return std::make_pair(*section + "." + key, &rule);
        }
        return std::nullopt;
    }

    /// The environment section the recipe already has; environment moves need one.
    std::optional<std::string> env_section() const {
        for (const auto& section : m_adapter.env_sections())
            if (m_state.original->has(section)) return section;
        return std::nullopt;
    }

    std::optional<std::string> companion_path(const std::string& lever, const std::string& key) const {
        for (const auto& rule : m_adapter.key_rules())
            if (exact(rule) && ends_with_key(rule.pattern, key) &&
                (rule.lever == lever ||
                 std::find(rule.companion_of.begin(), rule.companion_of.end(), lever) != rule.companion_of.end()))
                return m_state.original->placed(rule.pattern);
        return std::nullopt;
    }

    const gate::KeyRule* companion_rule(const std::string& lever, const std::string& moved) const {
        for (const auto& rule : m_adapter.key_rules())
            if (rule.lever == lever && exact(rule) &&
                std::find(rule.companion_of.begin(), rule.companion_of.end(), moved) != rule.companion_of.end())
                return &rule;
        return nullptr;
    }

    std::optional<Value> current_value(const std::string& path) const {
        if (const Value* value = m_incumbent.find(path)) return *value;
        return std::nullopt;
    }

    std::optional<double> current_number(const std::string& lever, const std::string& path) const {
        if (m_adapter.has_quantity(lever)) return m_adapter.quantity(m_incumbent, lever, *m_state.cluster);
        if (const auto value = current_value(path)) return number_of(*value);
        return std::nullopt;
    }

    std::optional<Value> checked_set(const Move& move, const gate::KeyRule& rule, const std::string& path,
                                     std::optional<double> cur) const {
        const Value& value = *move.set;
        if (!rule.domain.violation(value).empty()) return std::nullopt;
        const auto current = current_value(path);
        if (current ? current->same_as(value, Value::Numeric::coerce) : value.is_null()) return std::nullopt;
        // An absent key holds the framework's default (the lever's quantity): setting it is no move.
        if (!current && cur && number_of(value) == cur) return std::nullopt;
        if (!guard_holds(move, number_of(value), cur)) return std::nullopt;
        return value;
    }

    /// The nearest value up (down) the lever's domain order for which the guard holds and that the
    /// preflight predicts to fit (interleaving: vpp 2 may need more memory than vpp 5); the nearest
    /// guarded value when none is predicted to fit.
    std::optional<Value> stepped(const Move& move, const gate::KeyRule& rule, const std::string& path,
                                 std::optional<double> cur) const {
        std::optional<Value> nearest;
        for (const Value& value : ordered_candidates(rule, path, cur, move.step)) {
            if (!guard_holds(move, number_of(value), cur)) continue;
            if (!nearest) nearest = value;
            if (predicted_to_fit(path, value)) return value;
        }
        return nearest;
    }

    bool predicted_to_fit(const std::string& path, const Value& value) const {
        if (!m_state.estimate) return true;
        Edits edits = m_state.incumbent_edits;
        edits.insert_or_assign(path, value);
        const Preflight p = m_state.estimate(edits);
        return !p.valid || p.fits;
    }

    std::vector<Value> ordered_candidates(const gate::KeyRule& rule, const std::string& path,
                                          std::optional<double> cur, int step) const {
        std::vector<Value> out;
        if (rule.domain.type == "bool" || !rule.domain.values.empty()) {
            auto values = rule.domain.values;
            if (values.empty()) values = {Value::boolean(false), Value::boolean(true)};
            // A key the recipe does not write holds the framework's default, the lever's quantity (cp 1).
            const auto current = current_value(path).value_or(cur ? Value::number(*cur) : Value::null());
            const auto at = std::find_if(values.begin(), values.end(),
                                         [&](const Value& v) { return v.same_as(current, Value::Numeric::coerce); });
            if (at == values.end()) return out;
            if (step > 0) out.assign(at + 1, values.end());
            else out.assign(std::make_reverse_iterator(at), values.rend());
            return out;
        }
        if (rule.domain.type != "int" || !cur) return out;
        const double low = rule.domain.min.value_or(1);
        const double high = rule.domain.max.value_or(std::max(1024.0, *cur * 64));
        constexpr int k_max_candidates = 4096;  // bounds the search on an open range
        for (double v = *cur + step; v >= low && v <= high && out.size() < k_max_candidates; v += step)
            out.push_back(Value::number(v));
        return out;
    }

    const CampaignState& m_state;
    const gate::Adapter& m_adapter;
    const recipe::Document& m_incumbent;
    gate::Expression::Lookup m_facts;
    bool m_spell_recompute;
};

/// The configuration key used to never propose a measured (or refused) configuration twice.
std::string signature(const Edits& edits) { return edits_to_json(edits).dump(); }

class RulesPolicy final : public Policy {
public:
    RulesPolicy(const SearchRules& rules, std::vector<Lesson> lessons) : m_rules(rules), m_lessons(std::move(lessons)) {}

    std::string name() const override { return "rules"; }

    Decision propose(const CampaignState& state) override {
        const recipe::Document incumbent = state.original->with_edits(edit_list(state.incumbent_edits));
        const auto campaign = campaign_facts(state);
        const auto facts = facts_lookup(incumbent, *state.adapter, *state.cluster, state.incumbent_measured, campaign);
        auto candidates = applicable(state, incumbent, facts);
        // A near miss to measure again counts as a move left.
        const bool incumbent_ok = state.incumbent_measured && state.incumbent_measured->status == "ok";
        auto again = incumbent_ok ? remeasure(state, campaign) : std::nullopt;
        const auto taught = from_lesson(state, candidates);
        auto stop_facts = campaign;
        // A move only a worthwhile plan may take is no move left to explore with.
        const auto exploring = std::count_if(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.explores; });
        stop_facts["moves_left"] = double(exploring + (again ? 1 : 0) + (taught ? 1 : 0));
        const auto stop_lookup = facts_lookup(incumbent, *state.adapter, *state.cluster, state.incumbent_measured, stop_facts);
        for (const auto& rule : m_rules.stop)
            if (const auto holds = rule.when.evaluate(stop_lookup); holds && *holds != 0) return Stop{rule.why};
        if (taught) return *taught;
        const auto best = choose(state, candidates);
        if (!best && again) return *again;
        if (!best && !estimated(state)) return Stop{"Every applicable move has been measured against the incumbent."};
        if (!best) return Stop{"Every applicable move is predicted not to fit or to be slower than the incumbent, and no "
                               "layout predicted faster is reachable."};
        return Proposal{best->lever,    best->move->id, best->edits,   best->rationale,
                        answers(state), best->planned,  best->plan_gain};
    }

private:
    /// Its moves spent, the candidate reverted against this incumbent that the estimate predicts
    /// fastest, if the rules' `remeasure` says its runs so far leave the question open: with budget
    /// to spare, another run narrows the noise around a gain of half a percent, or around a plan's
    /// step that measured a little below its prediction.
    std::optional<Proposal> remeasure(const CampaignState& state, const std::map<std::string, double>& campaign) const {
        const auto& rule = m_rules.acceptance.remeasure;
        const auto incumbent = std::find_if(state.history.begin(), state.history.end(),
                                            [&](const TrialView& t) { return t.n == state.incumbent; });
        if (!rule || incumbent == state.history.end() || !state.incumbent_measured->tokens_per_s_per_gpu) return std::nullopt;
        struct Runs {
            const TrialView* first = nullptr;
            double predicted = 0;
            int runs = 0;
            double gains = 0;
        };
        std::map<std::string, Runs> by_config;
        for (const auto& t : state.history) {
            if (t.kind != "candidate" || t.incumbent != state.incumbent || t.accepted || !t.measured ||
                t.measured->status != "ok" || !t.measured->tokens_per_s_per_gpu)
                continue;
            const auto predicted = predicted_gain(t, *incumbent);
            if (!predicted) continue;
            auto& runs = by_config[signature(t.edits)];
            if (runs.first == nullptr) runs.first = &t, runs.predicted = *predicted;
            ++runs.runs;
            runs.gains += *t.measured->tokens_per_s_per_gpu / *state.incumbent_measured->tokens_per_s_per_gpu - 1;
        }
        const Runs* chosen = nullptr;
        for (const auto& [config, runs] : by_config) {
            auto facts = campaign;
            facts.insert({{"runs", double(runs.runs)},
                          {"gain", runs.gains / runs.runs},
                          {"predicted_gain", runs.predicted},
                          {"stepping_stone", runs.first->stepping_stone ? 1.0 : 0.0},
                          {"prerequisite", m_rules.is_prerequisite(runs.first->lever) ? 1.0 : 0.0}});
            if (rule->holds(facts) && (chosen == nullptr || runs.predicted > chosen->predicted)) chosen = &runs;
        }
        if (chosen == nullptr) return std::nullopt;
        const TrialView& first = *chosen->first;
        Proposal again{first.lever,
                        first.move,
                        first.edits,
                        fmt::format("its moves spent: trial {} measured {:+.1f}% over {} run(s), predicted {:+.1f}%; measuring it "
                                    "again with the budget left",
                                    first.n, 100 * chosen->gains / chosen->runs, chosen->runs, 100 * chosen->predicted),
                        state.incumbent_measured->bottleneck,
                        first.stepping_stone,
                        first.plan_gain,
                        first.n};
        again.lesson = first.lesson;
        return again;
    }

    /// The diagnosis a proposal answers: the incumbent's bottleneck.
    static std::string answers(const CampaignState& state) {
        return state.incumbent_measured ? state.incumbent_measured->bottleneck : "";
    }

    // ------------------------------------------------------------------ lessons
    /// The move the first lesson still standing points to: a step of its layout, else a flag that helped.
    std::optional<Proposal> from_lesson(const CampaignState& state, const std::vector<Candidate>& candidates) {
        const Lesson* lesson = leading_lesson(state);
        if (!lesson) return std::nullopt;
        // A flag that measured a large gain there goes first (grouped expert GEMMs, +40%): its gain is
        // evidence from the same kind of run, where a layout step's is only the estimate's.
        if (auto flag = flag_step(state, *lesson, candidates, k_lesson_flag_first)) return flag;
        auto [reached, step] = layout_step(state, *lesson);
        if (step) return step;
        // The other flags once its layout is reached: tp overlap turned on at tp 8 would hold tp at 8.
        if (!reached) return std::nullopt;
        return flag_step(state, *lesson, candidates, -std::numeric_limits<double>::infinity());
    }

    /// The first lesson still standing, if any.
    const Lesson* leading_lesson(const CampaignState& state) const {
        const auto lesson = std::find_if(m_lessons.begin(), m_lessons.end(), [&](const Lesson& l) { return !dropped(state, l); });
        return lesson == m_lessons.end() ? nullptr : &*lesson;
    }

    /// The candidate is a move of `flag`'s lever that sets its key to its value.
    static bool sets(const Candidate& c, const LessonFlag& flag) {
        return c.lever == flag.lever && std::any_of(c.edits.begin(), c.edits.end(), [&](const auto& edit) {
                   return ends_with_key(edit.first, flag.key) && edit.second.same_as(flag.value, Value::Numeric::coerce);
               });
    }

    /// The leading lesson measured this move there and did not keep it: it goes after every other move
    /// (still proposed when nothing else is left, as the cluster here may differ).
    static bool hurt_there(const Lesson* lesson, const Candidate& c) {
        return lesson && std::any_of(lesson->hurt.begin(), lesson->hurt.end(), [&](const LessonMiss& m) { return sets(c, m.move); });
    }

    /// Where a lesson's layout stands: reached (or none to reach), else the next step toward it, if one fits.
    struct LayoutStep {
        bool reached = false;
        std::optional<Proposal> step;
    };

    /// A lesson whose move was measured (or refused, or predicted to fail) and not accepted here does not hold.
    static bool dropped(const CampaignState& state, const Lesson& lesson) {
        const auto taught = [&](const TrialView& t) { return t.kind == "candidate" && t.lesson == lesson.name; };
        for (const auto& t : state.history) {
            if (!taught(t) || t.accepted || t.outcome == "pending") continue;
            const bool repeated_into_accept = std::any_of(state.history.begin(), state.history.end(), [&](const TrialView& u) {
                return taught(u) && u.accepted && u.edits == t.edits;
            });
            if (!repeated_into_accept) return true;
        }
        return false;
    }

    /// The lesson's memory bias counts where it was measured on the same GPU: the same cluster's allocator.
    double lesson_bias(const CampaignState& state, const Lesson& lesson) const {
        const double bias = memory_bias(state);
        return lesson.memory_bias && lesson.gpu == util::to_lower(state.cluster->gpu) ? std::max(bias, *lesson.memory_bias) : bias;
    }

    /// One lever of the incumbent's layout moved toward the lesson's target (LessonGuide), as a step of a plan.
    LayoutStep layout_step(const CampaignState& state, const Lesson& lesson) {
        if (!lesson.layout || !planner_for(state)) return {true, std::nullopt};
        const auto incumbent = m_space->point_of(state.incumbent_edits);
        if (!incumbent) return {};
        const LessonGuide::Bounds bounds{estimated(state), lesson_bias(state, lesson), oom_memory_floor(state)};
        const auto target = m_guide->target(lesson, *incumbent, bounds);
        if (!target) return {};
        if (m_planner->same_layout(*target, *incumbent)) return {true, std::nullopt};
        std::set<std::string> tried;
        for (const auto& t : state.history) tried.insert(signature(t.edits));
        const Edits from = m_space->edits(*incumbent);
        const auto step = m_guide->step(lesson, *incumbent, *target, bounds, [&](const Point& p) {
            return !tried.contains(signature(merged(state.incumbent_edits, difference(m_space->edits(p), from))));
        });
        if (!step) return {};
        const std::string lever(lever_name(step->field));
        const double now = bounds.estimated ? m_space->estimate(*incumbent).tokens_per_s_per_gpu : 0;
        const double target_gain = now > 0 ? m_space->estimate(*target).tokens_per_s_per_gpu / now - 1 : lesson.gain;
        Proposal p{lever,
                   "lesson-" + lever,
                   difference(m_space->edits(step->point), from),
                   fmt::format("lesson {} ({}): {} toward its layout, here {}", lesson.name, lesson.source, lever,
                               m_space->describe(*target)),
                   answers(state),
                   true,
                   target_gain};
        p.lesson = lesson.name;
        return {false, std::move(p)};
    }

    /// The first flag that helped in the lesson, by at least `min_gain`, that a move of the rules sets here and that fits.
    std::optional<Proposal> flag_step(const CampaignState& state, const Lesson& lesson, const std::vector<Candidate>& candidates,
                                      double min_gain) const {
        const double bias = lesson_bias(state, lesson);
        for (const auto& flag : lesson.flags) {
            if (flag.gain < min_gain) continue;
            for (const auto& c : candidates) {
                if (!sets(c, flag)) continue;
                if (state.estimate) {
                    const auto e = state.estimate(merged(state.incumbent_edits, c.edits));
                    if (e.valid && (!e.fits || e.memory_gib * bias > e.capacity_gib)) continue;
                }
                Proposal p{c.lever, c.move->id, c.edits,
                           fmt::format("lesson {} ({}): {} helped there ({:+.1f}%)", lesson.name, lesson.source, flag.key,
                                       100 * flag.gain),
                           answers(state)};
                p.lesson = lesson.name;
                return p;
            }
        }
        return std::nullopt;
    }

    /// The edits of `to` that differ from `from`.
    static Edits difference(const Edits& to, const Edits& from) {
        Edits out;
        for (const auto& [key, value] : to)
            if (const auto it = from.find(key); it == from.end() || !it->second.same_as(value)) out.insert_or_assign(key, value);
        return out;
    }

    static std::map<std::string, double> campaign_facts(const CampaignState& state) {
        int since_accept = 0, failures_in_row = 0;
        bool failures_run = true;
        for (auto it = state.history.rbegin(); it != state.history.rend(); ++it) {
            if (it->kind != "candidate") continue;
            if (it->accepted) break;
            ++since_accept;
        }
        for (auto it = state.history.rbegin(); it != state.history.rend() && failures_run; ++it) {
            if (!it->measured) continue;
            failures_run = it->measured->status != "ok";
            failures_in_row += failures_run ? 1 : 0;
        }
        double best_gain = 0;
        if (!state.history.empty() && state.history.front().measured && state.incumbent_measured &&
            state.history.front().measured->tokens_per_s_per_gpu && state.incumbent_measured->tokens_per_s_per_gpu)
            best_gain = *state.incumbent_measured->tokens_per_s_per_gpu / *state.history.front().measured->tokens_per_s_per_gpu - 1;
        return {{"budget_left_gpuh", state.budget_left_gpu_s / 3600},
                {"trial_cost_gpuh", state.trial_cost_gpu_s / 3600},
                {"trials_done", double(state.history.size())},
                {"trials_since_accept", double(since_accept)},
                {"failures_in_row", double(failures_in_row)},
                {"best_gain", best_gain}};
    }

    /// True when no recompute move names a key the family writes its recompute choices with: its
    /// recompute moves are then written in its own spelling.
    bool recompute_unnamed(const gate::Adapter& adapter) const {
        for (const auto& phase : m_rules.phases)
            for (const auto& move : phase.moves)
                for (const auto& key : move.lever == "recompute" ? move.keys : std::vector<std::string>{})
                    for (const auto& [level, keys] : adapter.runtime().recompute)
                        for (const auto& [path, value] : keys)
                            if (ends_with_key(path, key)) return false;
        return true;
    }

    std::vector<Candidate> applicable(const CampaignState& state, const recipe::Document& incumbent,
                                      const gate::Expression::Lookup& facts) const {
        std::set<std::string> tried_moves, tried_configs;
        for (const auto& trial : state.history) {
            tried_configs.insert(signature(trial.edits));
            if (trial.incumbent == state.incumbent) tried_moves.insert(trial.move);
        }
        const Resolver resolver{state, incumbent, facts, recompute_unnamed(*state.adapter)};
        std::vector<Candidate> out;
        for (std::size_t p = 0; p < m_rules.phases.size(); ++p) {
            const Phase& phase = m_rules.phases[p];
            if (phase.when) {
                const auto holds = phase.when->evaluate(facts);
                if (holds && *holds == 0) continue;
            }
            const auto explore = phase.explore_when ? phase.explore_when->evaluate(facts) : std::nullopt;
            const bool explores = !explore || *explore != 0;
            for (const Move& move : phase.moves) {
                if (tried_moves.contains(move.id)) continue;
                auto edits = resolver.resolve(move);
                if (!edits || tried_configs.contains(signature(merged(state.incumbent_edits, *edits)))) continue;
                if (std::any_of(out.begin(), out.end(), [&](const Candidate& c) { return c.edits == *edits; })) continue;
                out.push_back({&move, p, std::move(*edits), move.lever,
                               fmt::format("{} ({}): {}", phase.name, move.id, move.why), std::nullopt});
                out.back().explores = explores;
            }
        }
        return out;
    }

    /// The smallest estimated memory of a layout that ran out of GPU memory, from any incumbent (the
    /// host's OOM killer says nothing of the GPU's).
    static std::optional<double> oom_memory_floor(const CampaignState& state) {
        std::optional<double> floor;
        for (const auto& trial : state.history)
            if (trial.measured && trial.measured->status == "oom" && !host_memory_oom(*trial.measured) && trial.preflight &&
                trial.preflight->valid)
                floor = std::min(floor.value_or(trial.preflight->memory_gib), trial.preflight->memory_gib);
        return floor;
    }

    static bool host_memory_oom(const Measurement& measured) {
        const auto fact = measured.facts.find("oom_host_memory");
        return fact != measured.facts.end() && fact->second != 0;
    }

    /// How much more memory this cluster's runs use than the estimate says: the largest measured peak over
    /// its estimate among the runs that finished (fragmentation, allocator and library buffers the
    /// nominal model does not see); never below 1.
    static double memory_bias(const CampaignState& state) {
        double bias = 1;
        for (const auto& trial : state.history)
            if (const auto ratio = peak_over_estimate(trial)) bias = std::max(bias, *ratio);
        return bias;
    }

    /// Whether the estimate reaches this campaign (not on a GPU attune has no specs for, nor --blind).
    static bool estimated(const CampaignState& state) {
        return state.estimate && state.estimate(state.incumbent_edits).estimated;
    }

    std::optional<Candidate> choose(const CampaignState& state, std::vector<Candidate>& candidates) {
        const auto incumbent_estimate = state.estimate ? std::optional{state.estimate(state.incumbent_edits)} : std::nullopt;
        // Any incumbent's OOM counts: the estimates already differ by what the flags change.
        const auto oom_floor = oom_memory_floor(state);
        const double bias = memory_bias(state);
        constexpr double k_slower_than_incumbent = 0.9;  // predicted >10% slower: not worth a trial, unless planned
        std::vector<Candidate*> fitting, viable;
        for (auto& c : candidates) {
            if (state.estimate) {
                c.estimate = state.estimate(merged(state.incumbent_edits, c.edits));
                if (c.estimate->valid && !c.estimate->fits) continue;
                if (c.estimate->valid && c.estimate->memory_gib * bias > c.estimate->capacity_gib) continue;
                if (oom_floor && c.estimate->valid && c.estimate->memory_gib >= *oom_floor) continue;
                fitting.push_back(&c);
                if (c.estimate->valid && incumbent_estimate && incumbent_estimate->valid && incumbent_estimate->fits &&
                    state.incumbent_measured && state.incumbent_measured->status == "ok" &&
                    c.estimate->tokens_per_s_per_gpu < k_slower_than_incumbent * incumbent_estimate->tokens_per_s_per_gpu)
                    continue;
            } else {
                fitting.push_back(&c);
            }
            viable.push_back(&c);
        }
        std::vector<Candidate*> own;
        std::copy_if(viable.begin(), viable.end(), std::back_inserter(own),
                     [&](const Candidate* c) { return !m_rules.phases[c->phase].planned_only; });
        const auto speed = [](const Candidate* c) {
            return c->estimate && c->estimate->valid ? c->estimate->tokens_per_s_per_gpu : 0.0;
        };
        std::stable_sort(own.begin(), own.end(), [&](const Candidate* a, const Candidate* b) { return speed(a) > speed(b); });
        const Lesson* lesson = leading_lesson(state);
        std::stable_partition(own.begin(), own.end(), [&](const Candidate* c) { return !hurt_there(lesson, *c); });
        // The planner bounds a step's slowdown by its target's gain (LayoutPlanner::choose): a path to a much
        // faster layout may cross one that is more than 10% slower. A move predicted to gain more on its own
        // than the plan's whole destination goes first (grouped expert GEMMs before a detour through layouts),
        // and so does a flag predicted to gain 20% or more: the plan ranked its layouts with the incumbent's
        // flags, so its gain is overstated by what the flag would add to every layout on the way.
        if (const auto planned = fitting.empty() ? std::nullopt : plan(state, fitting, k_planned_gain, bias)) {
            if (own.empty() || !incumbent_estimate || !incumbent_estimate->valid) return *planned;
            const double now = incumbent_estimate->tokens_per_s_per_gpu;
            if (speed(own.front()) > (1 + planned->plan_gain) * now) return *own.front();
            const auto incumbent = m_space ? m_space->point_of(state.incumbent_edits) : std::nullopt;
            const auto flag = std::find_if(own.begin(), own.end(), [&](const Candidate* c) {
                return speed(c) > (1 + k_flag_first_gain) * now && incumbent && keeps_layout(state, *incumbent, *c);
            });
            return flag != own.end() ? **flag : *planned;
        }
        if (viable.empty()) return std::nullopt;
        // The moves are spent and budget is left: explore toward layouts predicted only a little faster,
        // which the cluster may rank differently than the model (a detour that does not pay is undone
        // when the campaign ends: incumbent-restored).
        if (own.empty()) {
            std::erase_if(viable, [](const Candidate* c) { return !c->explores; });
            std::stable_partition(viable.begin(), viable.end(), [&](const Candidate* c) { return !hurt_there(lesson, *c); });
            // Without estimates nothing ranks them: each is measured in the rules' order.
            if (!estimated(state)) return viable.empty() ? std::nullopt : std::optional<Candidate>(*viable.front());
            return plan(state, viable, k_explore_gain, bias);
        }
        return *own.front();
    }

    /// The candidate changes flags only: the same tp, pp, vpp, cp, ep, micro batch and recompute as the
    /// incumbent's point (a plan was chosen, so the planner and its space exist).
    bool keeps_layout(const CampaignState& state, const Point& incumbent, const Candidate& c) const {
        const auto point = m_space->point_of(merged(state.incumbent_edits, c.edits));
        return point && m_planner->same_layout(*point, incumbent);
    }

    /// The viable move that leads toward a faster layout the planner can reach, if any.
    /// `bias`: this cluster's measured memory over the estimate (memory_bias).
    std::optional<Candidate> plan(const CampaignState& state, const std::vector<Candidate*>& viable, double min_gain,
                                  double bias) {
        if (!estimated(state)) return std::nullopt;
        const LayoutPlanner* planner = planner_for(state);
        if (!planner) return std::nullopt;
        const auto incumbent = m_space->point_of(state.incumbent_edits);
        if (!incumbent) return std::nullopt;
        // A layout measured before is not planned through again: reverted, the cluster disagreed with the
        // estimate there, whatever flags differ since; left behind, going back to it circles (a plan
        // whose target measured below its prediction would head back and forth between the same layouts).
        std::vector<Point> reverted;
        for (const auto& trial : state.history)
            if (trial.measured && trial.measured->status == "ok")
                if (auto p = m_space->point_of(trial.edits)) reverted.push_back(std::move(*p));
        std::vector<std::optional<Point>> points;
        for (const Candidate* c : viable) {
            auto p = m_space->point_of(merged(state.incumbent_edits, c->edits));
            if (p && !planner->same_layout(*p, *incumbent) &&
                std::any_of(reverted.begin(), reverted.end(), [&](const Point& r) { return planner->same_layout(*p, r); }))
                p.reset();
            points.push_back(std::move(p));
        }
        // A layout estimated at or above one that ran out of memory is not planned through.
        const auto oom_floor = oom_memory_floor(state);
        const auto choice = planner->choose(*incumbent, points, memory_limit_below(oom_floor), min_gain, bias);
        if (!choice) return std::nullopt;
        Candidate chosen = *viable[choice->index];
        chosen.planned = true;
        chosen.plan_gain = choice->target_gain;
        return chosen;
    }

    const LayoutPlanner* planner_for(const CampaignState& state) {
        if (!m_planner && !m_no_space) {
            try {
                m_space = std::make_unique<ConfigSpace>(*state.original, *state.adapter, *state.cluster, *state.rules, *state.gate_policy);
                m_planner = std::make_unique<LayoutPlanner>(*m_space, k_memory_margin);
                m_guide = std::make_unique<LessonGuide>(*m_space, *m_planner);
            } catch (const InputError&) {
                m_no_space = true;  // the simulator cannot model this recipe: rank by estimate alone
            }
        }
        return m_planner.get();
    }

    // Plans leave 5 % of HBM free: the estimate assumes typical fragmentation, a cluster may have more.
    static constexpr double k_memory_margin = 0.05;
    static constexpr double k_planned_gain = 0.02;      // a target worth a detour: 2 % faster, predicted
    static constexpr double k_flag_first_gain = 0.2;    // a flag that goes before a plan: 20 % faster, predicted
    static constexpr double k_explore_gain = 0.005;     // once the moves are spent: half a percent
    static constexpr double k_lesson_flag_first = 0.1;  // a lesson's flag that gained 10 % goes before its layout
    std::unique_ptr<ConfigSpace> m_space;
    std::unique_ptr<LayoutPlanner> m_planner;
    std::unique_ptr<LessonGuide> m_guide;
    bool m_no_space = false;

    const SearchRules& m_rules;
    std::vector<Lesson> m_lessons;
};

}  // namespace

constexpr std::string_view k_statuses[] = {"ok", "oom", "nccl-timeout", "nccl-error", "time-limit", "node-failure",
                                           "preempted", "crash", "diverged", "hang", "too-short", "unknown"};

std::map<std::string, double> measurement_facts(const Measurement& measured) {
    std::map<std::string, double> facts = measured.facts;
    facts["status_" + flag_name(measured.status)] = 1;
    for (const auto status : k_statuses) facts.try_emplace("status_" + flag_name(std::string(status)), 0);
    if (!measured.bottleneck.empty() && measured.bottleneck != "unknown") facts["is_" + flag_name(measured.bottleneck)] = 1;
    for (const char* bottleneck : {"memory_bound", "comm_bound", "bubble_bound", "cpu_bound", "dataloader_bound", "compute_bound"})
        facts.try_emplace(std::string("is_") + bottleneck, 0);
    if (measured.noise) facts["noise"] = *measured.noise;
    return facts;
}

namespace {

/// The model shape and layout as the simulator reads them: a recipe that only names a catalogued model
/// (AutoModel) has no layers or heads among its quantities, and a guard over an unknown fact does not block.
std::map<std::string, double> shape_facts(const recipe::Document& recipe, const gate::Adapter& adapter,
                                          const cluster::Cluster& cluster) {
    try {
        const auto in = sim::from_recipe(recipe, adapter, cluster);
        const auto& m = in.model;
        return {{"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads},   {"kv_heads", m.kv_heads},
                {"ffn", m.ffn},       {"vocab", m.vocab},   {"experts", m.experts}, {"vpp", in.layout.vpp},
                {"etp", in.layout.etp}, {"fsdp_sharded", in.layout.sharding == sim::Sharding::fsdp ? 1.0 : 0.0}};
    } catch (const InputError&) {
        return {};
    }
}

}  // namespace

gate::Expression::Lookup facts_lookup(const recipe::Document& recipe, const gate::Adapter& adapter,
                                      const cluster::Cluster& cluster, const Measurement* measured,
                                      const std::map<std::string, double>& extra) {
    auto facts = measured ? measurement_facts(*measured) : std::map<std::string, double>{};
    for (const auto& [name, value] : extra) facts.insert_or_assign(name, value);
    return [facts = std::move(facts), shape = shape_facts(recipe, adapter, cluster), &recipe, &adapter,
            &cluster](const std::string& name) -> std::optional<double> {
        if (const auto it = facts.find(name); it != facts.end()) return it->second;
        if (const auto value = adapter.quantity(recipe, name, cluster)) return value;
        if (const auto it = shape.find(name); it != shape.end()) return it->second;
        return std::nullopt;
    };
}

std::unique_ptr<Policy> make_rules_policy(const SearchRules& rules, std::vector<Lesson> lessons) {
    return std::make_unique<RulesPolicy>(rules, std::move(lessons));
}

}  // namespace attune::policy


