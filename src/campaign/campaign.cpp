#include <attune/campaign/campaign.hpp>
#include <attune/campaign/trial_io.hpp>
#include <attune/core/error.hpp>
#include <attune/gate/gated_trial.hpp>
#include <attune/policy/rules_policy.hpp>
#include <attune/util/files.hpp>
#include <attune/util/hash.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>

namespace attune::campaign {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double k_startup_allowance_s = 300;   // a time limit must cover start-up, which the estimate omits
constexpr double k_time_limit_margin = 1.5;     // and a world up to 50% slower than the nominal estimate
constexpr double k_unestimated_time_limit_s = 3600;  // without an estimate, a measurement or the cluster's own
constexpr double k_unestimated_margin = 3.0;          // a trial up to 3x longer than the best one took
constexpr double k_unestimated_floor_margin = 1.5;    // near the budget's end, down to 1.5x the best trial's time
constexpr double k_min_unestimated_limit_s = 600;     // before a trial has run: start-up and a few steps
constexpr int k_max_proposals_without_launch = 50;
constexpr int k_early_stop_min_steps = 10;      // timed steps before a stable trial may stop early
constexpr int k_min_trial_steps = 15;           // a trial shortened to fit the budget still times 10 steady steps
// The `move` of a confirm run: the last one, after which the campaign ends, or one before a policy's
// repeats, after which it goes on.
constexpr const char* k_final_confirm = "confirm";
constexpr const char* k_confirm_before_repeats = "confirm-before-repeats";

std::uint64_t run_id(std::uint64_t seed, int trial, int attempt) {
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ULL + std::uint64_t(trial) * 1000003ULL + std::uint64_t(attempt);
    x ^= x >> 31;
    return x * 0xBF58476D1CE4E5B9ULL;
}

/// Relative mean departure of the candidate's losses from the reference over the first steps.
std::optional<double> loss_departure(const std::vector<double>& reference, const std::vector<double>& losses, int steps) {
    const std::size_t n = std::min({reference.size(), losses.size(), std::size_t(std::max(steps, 1))});
    if (n == 0) return std::nullopt;
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += std::fabs(losses[i] - reference[i]) / std::max(std::fabs(reference[i]), 1e-9);
    return sum / double(n);
}

class Loop {
public:
    Loop(const Context& context, Journal& journal, policy::Policy& policy, launch::Backend& backend,
         const Progress& progress, const std::atomic<bool>& interrupted)
        : m_ctx(context), m_journal(journal), m_policy(policy), m_backend(backend), m_progress(progress),
          m_interrupted(interrupted) {}

    CampaignRecord run() {
        // The journal is the truth; each event is folded into the record once, as it is appended
        // (folding the whole journal at every stage made a long campaign quadratic).
        CampaignRecord record = fold(m_journal.events());
        std::size_t folded = m_journal.events().size();
        for (;;) {
            fold_more(record, m_journal.events(), folded);
            folded = m_journal.events().size();
            if (record.end || m_interrupted.load()) return record;
            if (TrialRecord* open = open_trial(record)) advance(record, *open);
            else next(record);
        }
    }

private:
    static TrialRecord* open_trial(CampaignRecord& record) {
        return !record.trials.empty() && record.trials.back().open() ? &record.trials.back() : nullptr;
    }

    // ------------------------------------------------------------------ deciding what comes next
    void next(const CampaignRecord& record) {
        if (record.trials.empty()) return propose(record, "baseline", policy::Proposal{"", "baseline", {}, "the recipe as given", ""});
        const TrialRecord& last = record.trials.back();
        if (last.view.kind == "confirm" && last.view.move == k_final_confirm) return end(record, last.answers);
        if (worth_repeating(last)) return repeat(record, last);
        if (last.view.outcome == "over-budget") return finish(record, "the next trial's worst case does not fit in the budget left");
        if (proposals_without_launch(record) >= k_max_proposals_without_launch)
            return finish(record, fmt::format("{} proposals in a row were refused or predicted to fail", k_max_proposals_without_launch));
        const auto state = state_of(record);
        auto decision = m_policy.propose(state);
        for (auto& [type, fields] : m_policy.take_records()) m_journal.append(type, std::move(fields));
        if (auto* stop = std::get_if<policy::Stop>(&decision)) return finish(record, stop->reason);
        const auto& proposal = std::get<policy::Proposal>(decision);
        // A policy's repeats are judged against the incumbent, whose one run is the lucky one that
        // cleared the band: run it once more first, so that they meet the mean of its runs.
        if (proposal.repeat_of >= 0 && confirm_runs(record) == 0 && confirm_affordable(record))
            return confirm(record, k_confirm_before_repeats, "repeating the best before runs that are judged against it", "");
        propose(record, "candidate", proposal, false, proposal.repeat_of);
    }

    /// A candidate that measured faster than the incumbent, but inside the noise band: one more run
    /// halves the variance of the mean, so gains of half a percent can be told from noise.
    static bool worth_repeating(const TrialRecord& t) {
        return t.view.kind == "candidate" && t.repeat_of < 0 && t.decision == "revert" && t.gain && *t.gain > 0 &&
               t.view.measured && t.view.measured->status == "ok";
    }

    void repeat(const CampaignRecord& record, const TrialRecord& first) {
        policy::Proposal again{first.view.lever, first.view.move, first.view.edits,
                               fmt::format("trial {} measured {:+.1f}%, inside the noise band: measuring it again",
                                           first.view.n, 100 * *first.gain),
                               first.answers, first.view.stepping_stone, first.view.plan_gain};
        again.lesson = first.view.lesson;
        propose(record, "candidate", again, false, first.view.n);
    }

    static int proposals_without_launch(const CampaignRecord& record) {
        int count = 0;
        for (auto it = record.trials.rbegin(); it != record.trials.rend() && !it->view.measured; ++it) ++count;
        return count;
    }

    /// An accepted configuration (or the baseline) measured faster than the incumbent beyond the noise
    /// band: a planned detour through slower layouts that did not pay.
    std::optional<int> faster_than_incumbent(const CampaignRecord& record) const {
        const auto speed = [](const TrialRecord& t) -> std::optional<double> {
            const auto& m = t.view.measured;
            return m && m->status == "ok" ? m->tokens_per_s_per_gpu : std::nullopt;
        };
        const TrialRecord& incumbent = record.best();
        const auto now = speed(incumbent);
        if (!now) return std::nullopt;
        std::optional<int> fastest;
        double best = *now;
        for (const auto& t : record.trials) {
            const auto s = speed(t);
            if (!s || !(t.view.accepted || t.view.kind == "baseline") || *s <= best) continue;
            if (*s > *now * (1 + noise_band(*t.view.measured, *incumbent.view.measured))) fastest = t.view.n, best = *s;
        }
        return fastest;
    }

    /// The policy stopped (or the budget did): go back to a faster configuration a detour left behind
    /// (the policy then goes on from there), else confirm the best once when affordable, then end.
    void finish(const CampaignRecord& record, const std::string& reason) {
        if (const auto faster = faster_than_incumbent(record)) {
            m_journal.append("incumbent-restored",
                             {{"trial", *faster}, {"from", record.incumbent},
                              {"reason", fmt::format("trial {} measured faster than the incumbent, trial {}, when the "
                                                     "search stopped ({})", *faster, record.incumbent, reason)}});
            return;
        }
        // The stop reason rides in `answers` so that the campaign-end event can give it.
        if (record.incumbent != 0 && confirm_runs(record) == 0 && confirm_affordable(record))
            return confirm(record, k_final_confirm, "repeating the best once to confirm it", reason);
        end(record, reason);
    }

    void confirm(const CampaignRecord& record, const char* move, const std::string& rationale, const std::string& answers) {
        const TrialRecord& best = record.best();
        propose(record, "confirm", policy::Proposal{best.view.lever, move, best.view.edits, rationale, answers}, /*absolute=*/true);
    }

    static bool confirms_incumbent(const CampaignRecord& record, const TrialRecord& t) {
        return t.view.kind == "confirm" && t.view.edits == record.best().view.edits;
    }

    /// Confirm runs of the incumbent's configuration so far, whatever they measured.
    static int confirm_runs(const CampaignRecord& record) {
        return static_cast<int>(std::count_if(record.trials.begin(), record.trials.end(),
                                              [&](const TrialRecord& t) { return confirms_incumbent(record, t); }));
    }

    /// What a candidate is judged against: the mean speed of the incumbent's runs (its own and the
    /// confirm runs of its configuration that ran).
    static double reference_speed(const CampaignRecord& record) {
        double sum = 0;
        int runs = 0;
        for (const auto& t : record.trials) {
            const auto& m = t.view.measured;
            if ((t.view.n != record.incumbent && !confirms_incumbent(record, t)) || !m || m->status != "ok" ||
                !m->tokens_per_s_per_gpu)
                continue;
            sum += *m->tokens_per_s_per_gpu;
            ++runs;
        }
        return sum / runs;
    }

    bool confirm_affordable(const CampaignRecord& record) const {
        const double cost = trial_cost(record, record.best().view.edits);
        const std::map<std::string, double> facts{{"budget_left_gpuh", record.left_gpu_s() / 3600},
                                                  {"trial_cost_gpuh", cost / 3600}};
        return m_ctx.search->acceptance.confirm_best.holds(facts) && worst_case(record, record.best().view.edits) <= record.left_gpu_s();
    }

    void propose(const CampaignRecord& record, const std::string& kind, const policy::Proposal& proposal,
                 bool absolute = false, int repeat_of = -1) {
        const int n = record.trials.empty() ? 0 : record.trials.back().view.n + 1;
        const policy::Edits base = kind == "baseline" || absolute ? policy::Edits{} : record.best().view.edits;
        const policy::Edits edits = policy::merged(base, proposal.edits);
        json changes = json::array();
        const recipe::Document incumbent = document_of(base);
        for (const auto& [path, value] : proposal.edits) {
            const recipe::Value* from = incumbent.find(path);
            changes.push_back({{"key", path}, {"from", from ? from->to_json() : json(nullptr)}, {"to", value.to_json()}});
        }
        json event{{"trial", n},
                   {"kind", kind},
                   {"policy", kind == "candidate" ? m_policy.name() : "campaign"},
                   {"lever", proposal.lever},
                   {"move", proposal.move},
                   {"edits", policy::edits_to_json(edits)},
                   {"changes", absolute ? json::array() : changes},
                   {"incumbent", kind == "baseline" ? -1 : record.incumbent},
                   {"rationale", proposal.rationale},
                   {"answers", proposal.answers}};
        if (proposal.stepping_stone) event["stepping_stone"] = true, event["plan_gain"] = proposal.plan_gain;
        if (repeat_of >= 0) event["repeat_of"] = repeat_of;
        if (!proposal.lesson.empty()) event["lesson"] = proposal.lesson;
        m_journal.append("trial-proposed", std::move(event));
    }

    policy::CampaignState state_of(const CampaignRecord& record) const {
        policy::CampaignState state;
        state.original = &m_ctx.original;
        state.adapter = m_ctx.adapter;
        state.cluster = &m_ctx.cluster;
        state.incumbent = record.incumbent;
        state.incumbent_edits = record.best().view.edits;
        state.incumbent_measured = record.best().view.measured ? &*record.best().view.measured : nullptr;
        for (const auto& trial : record.trials) state.history.push_back(trial.view);
        state.budget_left_gpu_s = record.left_gpu_s();
        state.trial_cost_gpu_s = trial_cost(record, state.incumbent_edits);
        state.estimate = [this](const policy::Edits& edits) { return estimate(edits); };
        state.read_log = [this, &record](int n, const std::string& pattern, int tail) { return log_lines(record, n, pattern, tail); };
        state.rules = m_ctx.rules;
        state.gate_policy = &m_ctx.gate_policy;
        return state;
    }

    /// What a policy may read of a trial's logs: matching lines, the last `tail`, at most 16 KiB.
    std::string log_lines(const CampaignRecord& record, int n, const std::string& pattern, int tail) const {
        const TrialRecord* trial = record.trial(n);
        if (trial == nullptr || trial->logs.empty()) return fmt::format("trial {} has no logs", n);
        std::vector<std::string> lines;
        for (const auto& log : trial->logs) {
            std::ifstream in(m_ctx.dir / log);
            for (std::string line; std::getline(in, line);)
                if (pattern.empty() || line.find(pattern) != std::string::npos) lines.push_back(line);
        }
        const std::size_t keep = std::min(lines.size(), std::size_t(std::clamp(tail, 1, 400)));
        std::string out;
        for (std::size_t i = lines.size() - keep; i < lines.size(); ++i) out += lines[i] + "\n";
        constexpr std::size_t k_max_log_bytes = 16 << 10;
        return out.size() > k_max_log_bytes ? out.substr(out.size() - k_max_log_bytes) : out;
    }

    // ------------------------------------------------------------------ one trial, stage by stage
    void advance(const CampaignRecord& record, TrialRecord& trial) {
        switch (trial.stage) {
            case Stage::proposed: return gate(trial);
            case Stage::gated: return preflight(record, trial);
            case Stage::preflighted: return launch(trial, std::max(1, trial.attempts));  // again after a cancelled attempt
            case Stage::launched: return measure(record, trial);
            case Stage::measured: return after_measure(record, trial);
            default: return;
        }
    }

    recipe::Document document_of(const policy::Edits& edits) const { return m_ctx.original.with_edits(policy::edit_list(edits)); }

    /// The candidate plus the trial-only keys that make it a short run (its step count). Keys that
    /// read a trial-only key through an interpolation (HyperPod's lr_decay_iters reads max_steps)
    /// are pinned to the candidate's value, so the trial trains the same schedule, only shorter.
    recipe::Document trial_document(const policy::Edits& edits, int steps) const {
        policy::Edits trial_edits = edits;
        for (const auto& rule : m_ctx.adapter->key_rules())
            if (rule.trial_only && rule.lever == "train_steps" && m_ctx.original.find(rule.pattern) != nullptr &&
                m_ctx.original.find(rule.pattern)->as_number())
                trial_edits.insert_or_assign(m_ctx.original.placed(rule.pattern), recipe::Value::number(steps));
        const recipe::Document candidate = document_of(edits);
        const recipe::Document trial = document_of(trial_edits);
        policy::Edits pins;
        for (const auto& leaf : trial.leaves()) {
            if (trial_edits.contains(leaf.path)) continue;
            const recipe::Value* before = candidate.find(leaf.path);
            if (before != nullptr && !before->same_as(leaf.value)) pins.emplace(leaf.path, *before);
        }
        return pins.empty() ? trial : document_of(policy::merged(trial_edits, pins));
    }

    std::pair<gate::Verdict, std::optional<gate::GatedTrial>> admit(const TrialRecord& trial) const {
        gate::CheckOptions options;
        options.purpose = gate::Purpose::trial_run;
        if (trial.view.kind == "candidate") options.max_levers = m_ctx.max_levers;
        return gate::admit(m_ctx.original, trial_document(trial.view.edits, trial.steps > 0 ? trial.steps : steps()),
                           *m_ctx.adapter, *m_ctx.rules,
                           m_ctx.gate_policy, m_ctx.cluster, options);
    }

    void gate(const TrialRecord& trial) {
        const int n = trial.view.n;
        try {
            const auto [verdict, admitted] = admit(trial);
            json refused = json::array();
            std::string reason;
            for (const auto& change : verdict.changes)
                if (!change.allowed) {
                    refused.push_back(change.key);
                    if (reason.empty()) reason = change.key + ": " + change.reason;
                }
            for (const auto& inv : verdict.invariants)
                if (!inv.ok) {
                    refused.push_back("invariant:" + inv.name);
                    if (reason.empty()) reason = "invariant " + inv.name + ": " + inv.why;
                }
            m_journal.append("gate-verdict", {{"trial", n},
                                              {"allowed", verdict.allowed},
                                              {"refused", refused},
                                              {"reason", reason},
                                              {"levers", verdict.levers},
                                              {"verdict", verdict.to_json()}});
        } catch (const InputError& e) {
            m_journal.append("gate-verdict", {{"trial", n}, {"allowed", false}, {"refused", json::array()},
                                              {"reason", std::string("the edits cannot be written: ") + e.what()}});
        }
    }

    int steps() const { return m_ctx.trial_steps; }

    policy::Preflight estimate(const policy::Edits& edits) const {
        if (m_ctx.blind) {
            policy::Preflight p;
            p.problem = "--blind: the campaign runs without the simulator's estimates";
            return p;
        }
        try {
            return preflight_of(document_of(edits), *m_ctx.adapter, m_ctx.cluster);
        } catch (const InputError& e) {
            policy::Preflight p;
            p.problem = e.what();
            return p;
        }
    }

    double time_limit(const CampaignRecord& record, const policy::Preflight& p, int steps) const {
        if (!p.estimated || !p.valid) return unestimated_time_limit(record);
        return k_startup_allowance_s + k_time_limit_margin * steps * p.step_time_s;
    }
    double time_limit(const CampaignRecord& record, const policy::Preflight& p) const { return time_limit(record, p, steps()); }

    /// Without an estimate (a GPU attune has no specs for, --blind): room for a trial three times longer
    /// than the best one took, else the cluster's own time limit, else an hour.
    double unestimated_time_limit(const CampaignRecord& record) const {
        if (const auto wall_s = best_trial_wall_s(record)) return k_unestimated_margin * *wall_s;
        return m_ctx.cluster.time_limit_s.value_or(k_unestimated_time_limit_s);
    }

    /// The shortest an unestimated limit is cut to near the end of a budget: half again as long as
    /// the best trial took, else start-up and a few steps of an unknown speed.
    double unestimated_floor_s(const CampaignRecord& record) const {
        if (const auto wall_s = best_trial_wall_s(record)) return k_unestimated_floor_margin * *wall_s;
        return k_min_unestimated_limit_s;
    }

    /// How long the best trial ran (one attempt, start-up included), if it ran to completion.
    std::optional<double> best_trial_wall_s(const CampaignRecord& record) const {
        if (record.trials.empty()) return std::nullopt;
        const auto& best = record.best();
        const auto& measured = best.view.measured;
        if (!measured || measured->status != "ok" || best.gpu_seconds <= 0 || best.attempts < 1) return std::nullopt;
        return best.gpu_seconds / best.attempts / gpus(best.view.edits);
    }

    /// The most steps (up to the campaign's) whose worst case fits in `left_gpu_s`; 0 when even a
    /// shortest trial does not. Near the end of a budget a shorter trial still measures a move.
    int affordable_steps(const policy::Preflight& p, int gpus, double left_gpu_s) const {
        if (!p.estimated || !p.valid || p.step_time_s <= 0) return 0;
        const double seconds = left_gpu_s / gpus - k_startup_allowance_s;
        const int steps = std::min(m_ctx.trial_steps, int(seconds / (k_time_limit_margin * p.step_time_s)));
        return steps >= std::min(k_min_trial_steps, m_ctx.trial_steps) ? steps : 0;
    }

    int gpus(const policy::Edits& edits) const { return gpus_of(document_of(edits), *m_ctx.adapter, m_ctx.cluster); }
    double worst_case(const CampaignRecord& record, const policy::Edits& edits) const {
        return time_limit(record, estimate(edits)) * gpus(edits);
    }

    /// What a trial is expected to cost: start-up plus the steps at the nominal speed; without an
    /// estimate, as long as the best trial ran, else its worst case.
    double trial_cost(const CampaignRecord& record, const policy::Edits& edits) const {
        const auto p = estimate(edits);
        if (p.estimated && p.valid) return (startup_s(record) + steps() * p.step_time_s) * gpus(edits);
        if (const auto wall_s = best_trial_wall_s(record)) return *wall_s * gpus(edits);
        return worst_case(record, edits);
    }

    /// What a trial pays beyond its steps: the backend's fixed start-up, else the median of what
    /// this campaign's single-attempt ok trials paid beyond their steady steps (start-up and
    /// warm-up), and the time limit's allowance before one has finished.
    double startup_s(const CampaignRecord& record) const {
        if (m_ctx.fixed_startup_s) return *m_ctx.fixed_startup_s;
        std::vector<double> paid;
        for (const auto& trial : record.trials) {
            const auto& m = trial.view.measured;
            if (trial.attempts != 1 || !m || m->status != "ok" || !m->step_time_s || trial.gpu_seconds <= 0) continue;
            paid.push_back(std::max(0.0, trial.gpu_seconds / gpus(trial.view.edits) - trial.steps * *m->step_time_s));
        }
        if (paid.empty()) return k_startup_allowance_s;
        std::nth_element(paid.begin(), paid.begin() + std::ptrdiff_t(paid.size() / 2), paid.end());
        return paid[paid.size() / 2];
    }

    void preflight(const CampaignRecord& record, const TrialRecord& trial) {
        const auto p = estimate(trial.view.edits);
        const int n_gpus = gpus(trial.view.edits);
        int trial_steps = steps();
        if (time_limit(record, p) * n_gpus > record.left_gpu_s())
            if (const int fit = affordable_steps(p, n_gpus, record.left_gpu_s())) trial_steps = fit;
        double limit = time_limit(record, p, trial_steps);
        // Unestimated, the limit is a guess: one that would overrun the budget is cut to what is left.
        if (!p.estimated || !p.valid) limit = std::min(limit, std::max(unestimated_floor_s(record), record.left_gpu_s() / n_gpus));
        const double worst = limit * n_gpus;
        std::string verdict = "ok";
        std::string reason;
        // The user's own recipe always runs once; a policy without a preflight launches what it proposes.
        const bool judged = trial.view.kind == "candidate" && m_ctx.preflight_verdicts;
        if (judged && p.estimated && !p.valid) verdict = "infeasible", reason = p.problem;
        else if (judged && p.estimated && !p.fits)
            verdict = "predicted-oom", reason = fmt::format("estimated {:.1f} GiB of {:.1f} GiB per GPU", p.memory_gib, p.capacity_gib);
        else if (worst > record.left_gpu_s())
            verdict = "over-budget", reason = fmt::format("worst case {:.1f} GPU-h, {:.1f} GPU-h left", worst / 3600, record.left_gpu_s() / 3600);
        m_journal.append("preflight", {{"trial", trial.view.n},
                                       {"verdict", verdict},
                                       {"reason", reason},
                                       {"estimate", to_json(p)},
                                       {"steps", trial_steps},
                                       {"time_limit_s", limit},
                                       {"worst_case_gpu_seconds", worst}});
    }

    launch::TrialPlan plan_of(const TrialRecord& trial, int attempt) const {
        launch::TrialPlan plan;
        plan.trial = trial.view.n;
        plan.attempt = attempt;
        plan.steps = trial.steps;
        plan.time_limit_s = trial.time_limit_s;
        plan.dir = m_ctx.dir / "trials" / std::to_string(trial.view.n);
        plan.recipe_file = m_ctx.dir / "recipes" /
                           fmt::format("trial-{:03}{}", trial.view.n, recipe::extension_of(m_ctx.original.format()));
        plan.run_id = run_id(m_ctx.seed, trial.view.n, attempt);
        plan.early_stop_min_steps = std::min(k_early_stop_min_steps, trial.steps);
        return plan;
    }

    void launch(const TrialRecord& trial, int attempt) {
        auto [verdict, admitted] = admit(trial);
        if (!admitted) throw RuntimeFailure(fmt::format("trial {}: the gate no longer admits it (rules changed under a running campaign?)", trial.view.n));
        const auto plan = plan_of(trial, attempt);
        fs::create_directories(plan.dir);
        util::write_file_atomically(plan.recipe_file, admitted->recipe().text());
        const auto job = m_backend.submit(*admitted, plan);
        m_journal.append("launched", {{"trial", trial.view.n},
                                      {"attempt", attempt},
                                      {"job_id", job.job_id},
                                      {"backend", m_backend.name()},
                                      {"recipe", fs::relative(plan.recipe_file, m_ctx.dir).string()},
                                      {"steps", plan.steps},
                                      {"time_limit_s", plan.time_limit_s},
                                      {"run_id", plan.run_id}});
    }

    void measure(const CampaignRecord& record, const TrialRecord& trial) {
        auto [verdict, admitted] = admit(trial);
        if (!admitted) throw RuntimeFailure(fmt::format("trial {}: the gate no longer admits it", trial.view.n));
        auto plan = plan_of(trial, trial.attempts);
        plan.interrupted = &m_interrupted;
        const auto outcome = m_backend.wait(*admitted, plan, launch::Submission{trial.job_id});
        if (outcome.interrupted) {
            // The user stopped the campaign mid-trial: the backend cancelled the job. Its cost is
            // charged; the attempt is not measured, so --resume launches it again.
            const double cost = std::min(outcome.gpu_seconds, std::max(0.0, record.left_gpu_s()));
            m_journal.append("cancelled", {{"trial", trial.view.n},
                                           {"attempt", trial.attempts},
                                           {"job_id", trial.job_id},
                                           {"reason", "interrupted"},
                                           {"state", outcome.state},
                                           {"elapsed_s", outcome.elapsed_s},
                                           {"queue_wait_s", outcome.queue_wait_s},
                                           {"gpus", outcome.gpus},
                                           {"gpu_seconds", cost},
                                           {"charged_from", outcome.charged_from}});
            return;
        }
        const auto reading = read_trial(outcome.logs, document_of(trial.view.edits), *m_ctx.adapter, m_ctx.cluster);
        // Never charge more than is left: the time limit bounds a trial, so this only trims rounding.
        const double charged = std::min(outcome.gpu_seconds, std::max(0.0, record.left_gpu_s()));
        json logs = json::array();
        for (const auto& log : outcome.logs) logs.push_back(fs::relative(log, m_ctx.dir).string());
        m_journal.append("metrics", {{"trial", trial.view.n},
                                     {"attempt", trial.attempts},
                                     {"measured", to_json(reading.measured)},
                                     {"state", outcome.state},
                                     {"exit_code", outcome.exit_code},
                                     {"elapsed_s", outcome.elapsed_s},
                                     {"gpus", outcome.gpus},
                                     {"gpu_seconds", charged},
                                     {"charged_from", outcome.charged_from},
                                     {"queue_wait_s", outcome.queue_wait_s},
                                     {"losses", reading.losses},
                                     {"evidence", reading.evidence},
                                     {"logs", logs}});
        m_journal.append("budget", {{"spent_gpu_seconds", record.spent_gpu_s + charged},
                                    {"left_gpu_seconds", record.left_gpu_s() - charged}});
    }

    void after_measure(const CampaignRecord& record, const TrialRecord& trial) {
        const auto& m = *trial.view.measured;
        if (m.status != "ok") {
            const auto facts = policy::measurement_facts(m);
            for (const auto& rule : m_ctx.search->on_failure) {
                const auto holds = rule.when.evaluate([&](const std::string& name) -> std::optional<double> {
                    const auto it = facts.find(name);
                    return it == facts.end() ? std::optional<double>{0.0} : std::optional{it->second};
                });
                if (!holds || *holds == 0) continue;
                if (rule.retry_once && trial.attempts == 1 && trial.time_limit_s * gpus(trial.view.edits) <= record.left_gpu_s())
                    return launch(trial, 2);
                break;
            }
        }
        decide(record, trial);
    }

    void decide(const CampaignRecord& record, const TrialRecord& trial) {
        const auto [decision, reason, gain] = judge(record, trial);
        json event{{"trial", trial.view.n}, {"decision", decision}, {"reason", reason}};
        if (gain) event["gain"] = *gain;
        m_journal.append("decision", event);
        if (!m_progress) return;  // the loop folds the new event itself; only the callback needs it now
        const CampaignRecord after = fold(m_journal.events());
        m_progress(after, *after.trial(trial.view.n));
    }

    struct Judgement {
        std::string decision;
        std::string reason;
        std::optional<double> gain;
    };

    Judgement judge(const CampaignRecord& record, const TrialRecord& trial) const {
        const auto& m = *trial.view.measured;
        if (trial.view.kind == "baseline") return {"baseline", "the recipe as given: " + m.status, std::nullopt};
        const TrialRecord& best = record.best();
        const auto& inc = best.view.measured;
        if (m.status != "ok") {
            const std::string first = trial.evidence.empty() ? "" : " (" + trial.evidence.front() + ")";
            return {trial.view.kind == "confirm" ? "unconfirmed" : "revert", m.status + first, std::nullopt};
        }
        if (const auto drift = parity(record, trial))
            return {trial.view.kind == "confirm" ? "unconfirmed" : "revert", *drift, std::nullopt};
        if (!inc || inc->status != "ok" || !inc->tokens_per_s_per_gpu)
            return {"accept", "the first configuration that runs", std::nullopt};
        if (!m.tokens_per_s_per_gpu) return {"revert", "no throughput could be read from the logs", std::nullopt};
        const double min_gain = noise_band(m, *inc);
        if (trial.view.kind == "confirm") {
            const double gain = *m.tokens_per_s_per_gpu / *inc->tokens_per_s_per_gpu - 1;
            const bool held = gain >= -min_gain;
            return {held ? "confirmed" : "unconfirmed",
                    fmt::format("the repeat ran {:+.1f}% against the measured best (noise band {:.1f}%)", 100 * gain, 100 * min_gain),
                    gain};
        }
        const double reference = reference_speed(record);
        const double gain = *m.tokens_per_s_per_gpu / reference - 1;
        if (trial.repeat_of >= 0) return judge_repeat(record, trial, best, reference, gain, min_gain);
        if (gain > min_gain)
            return {"accept", fmt::format("{:+.1f}% beyond the noise band of {:.1f}%", 100 * gain, 100 * min_gain), gain};
        const auto facts = neutral_facts(record, trial, gain, min_gain);
        if (keeps_neutral(facts)) return {"accept", kept_reason(facts), gain};
        return {"revert", fmt::format("{:+.1f}% is within the noise band of {:.1f}% or slower", 100 * gain, 100 * min_gain), gain};
    }

    /// What skills/rules/search.yaml's keep_neutral reads of a candidate that measured `gain` over the incumbent.
    std::map<std::string, double> neutral_facts(const CampaignRecord& record, const TrialRecord& trial, double gain,
                                                double min_gain) const {
        const TrialRecord& best = record.best();
        const double before = best.view.measured->peak_memory_gib.value_or(0);
        const double freed = before - trial.view.measured->peak_memory_gib.value_or(before);
        std::map<std::string, double> facts{{"gain", gain},
                                            {"min_gain", min_gain},
                                            {"memory_freed_gib", freed},
                                            {"prerequisite", m_ctx.search->is_prerequisite(trial.view.lever) ? 1.0 : 0.0},
                                            {"stepping_stone", trial.view.stepping_stone ? 1.0 : 0.0},
                                            {"plan_gain", trial.view.plan_gain},
                                            {"budget_left_gpuh", record.left_gpu_s() / 3600},
                                            {"trial_cost_gpuh", trial_cost(record, best.view.edits) / 3600}};
        if (const auto predicted = policy::predicted_gain(trial.view, best.view)) facts["predicted_gain"] = *predicted;
        return facts;
    }

    /// A further run of a candidate: the mean of its runs' gains against a band narrowed by sqrt(runs).
    Judgement judge_repeat(const CampaignRecord& record, const TrialRecord& trial, const TrialRecord& best, double reference,
                           double gain, double min_gain) const {
        const auto gains = run_gains(record, trial.repeat_of, reference, gain);
        const double mean = std::accumulate(gains.begin(), gains.end(), 0.0) / double(gains.size());
        const double band = min_gain / std::sqrt(double(gains.size()));
        const std::string runs = gains.size() == 2 ? "two runs" : fmt::format("{} runs", gains.size());
        if (mean > band)
            return {"accept", fmt::format("{:+.1f}% over {}, beyond their noise band of {:.1f}%", 100 * mean, runs, 100 * band),
                    mean};
        const auto predicted = policy::predicted_gain(trial.view, best.view);
        const auto& rule = m_ctx.search->acceptance.accept_repeat;
        if (predicted && rule && rule->holds({{"gain", mean}, {"band", band}, {"predicted_gain", *predicted}}))
            return {"accept",
                    fmt::format("{:+.1f}% over {}, inside their noise band of {:.1f}% but as the estimate predicted ({:+.1f}%)",
                                100 * mean, runs, 100 * band, 100 * *predicted),
                    mean};
        // Kept on its mean as on its first run: a prerequisite no slower, a plan's step as predicted.
        if (const auto facts = neutral_facts(record, trial, mean, min_gain); keeps_neutral(facts))
            return {"accept", fmt::format("over {}, {}", runs, kept_reason(facts)), mean};
        return {"revert", fmt::format("{:+.1f}% over {}, within their noise band of {:.1f}%", 100 * mean, runs, 100 * band),
                mean};
    }

    /// The gains over `reference` (the incumbent's reference speed) of a candidate's earlier runs (its
    /// first trial and the repeats of it that ran), then `latest`.
    static std::vector<double> run_gains(const CampaignRecord& record, int first, double reference, double latest) {
        std::vector<double> gains;
        for (const auto& t : record.trials) {
            if (t.view.n != first && t.repeat_of != first) continue;
            const auto& m = t.view.measured;
            if (t.decision.empty() || !m || m->status != "ok" || !m->tokens_per_s_per_gpu) continue;
            gains.push_back(*m->tokens_per_s_per_gpu / reference - 1);
        }
        gains.push_back(latest);
        return gains;
    }

    /// The smallest gain that is not noise between two measurements (skills/rules/search.yaml's min_gain).
    double noise_band(const policy::Measurement& a, const policy::Measurement& b) const {
        const double noise = std::max(a.noise.value_or(0), b.noise.value_or(0));
        return m_ctx.search->acceptance.min_gain
            .evaluate([&](const std::string& name) -> std::optional<double> {
                if (name == "noise") return noise;
                return std::nullopt;
            })
            .value_or(0.01);
    }

    static std::string kept_reason(const std::map<std::string, double>& f) {
        const double gain = f.at("gain"), min_gain = f.at("min_gain"), freed = f.at("memory_freed_gib");
        // Neither freed memory nor a prerequisite: the plan's clause kept it.
        if (f.at("stepping_stone") != 0 && f.contains("predicted_gain") &&
            ((freed < 4 && f.at("prerequisite") == 0) || gain <= -2 * min_gain))
            return fmt::format("{:+.1f}% is what the plan predicted ({:+.1f}%) on its way to a layout predicted {:+.1f}% faster",
                               100 * gain, 100 * f.at("predicted_gain"), 100 * f.at("plan_gain"));
        return fmt::format("{:+.1f}% is within {} noise band of {:.1f}% and {} for the next move", 100 * gain,
                           gain >= -min_gain ? "the" : "twice the", 100 * min_gain,
                           f.at("prerequisite") != 0 && freed < 1 ? std::string("is a prerequisite")
                                                                   : fmt::format("frees {:.1f} GiB per GPU", freed));
    }

    bool keeps_neutral(const std::map<std::string, double>& facts) const {
        const auto& rule = m_ctx.search->acceptance.keep_neutral;
        return rule && rule->holds(facts);
    }

    /// objective-drift when the losses depart from the baseline's beyond the gate policy's tolerance.
    std::optional<std::string> parity(const CampaignRecord& record, const TrialRecord& trial) const {
        const TrialRecord* baseline = record.baseline();
        if (baseline == nullptr) return std::nullopt;
        const auto departure = loss_departure(baseline->losses, trial.losses, m_ctx.gate_policy.loss_parity_steps);
        if (!departure || *departure <= m_ctx.gate_policy.loss_parity_tolerance) return std::nullopt;
        return fmt::format("objective-drift: losses depart {:.1f}% from the baseline's over the first steps (tolerance {:.1f}%)",
                           100 * *departure, 100 * m_ctx.gate_policy.loss_parity_tolerance);
    }

    void end(const CampaignRecord& record, const std::string& reason) {
        const fs::path best = write_best(m_ctx, record);
        const TrialRecord& b = record.best();
        const TrialRecord* base = record.baseline();
        json event{{"reason", reason},
                   {"best_trial", record.incumbent},
                   {"best_recipe", fs::relative(best, m_ctx.dir).string()},
                   {"spent_gpu_seconds", record.spent_gpu_s}};
        if (base && base->view.measured && base->view.measured->tokens_per_s_per_gpu && b.view.measured &&
            b.view.measured->tokens_per_s_per_gpu && base->view.measured->status == "ok")
            event["speedup"] = *b.view.measured->tokens_per_s_per_gpu / *base->view.measured->tokens_per_s_per_gpu;
        m_journal.append("campaign-end", event);
    }

    const Context& m_ctx;
    Journal& m_journal;
    policy::Policy& m_policy;
    launch::Backend& m_backend;
    const Progress& m_progress;
    const std::atomic<bool>& m_interrupted;
};

}  // namespace

CampaignRecord run(const Context& context, Journal& journal, policy::Policy& policy, launch::Backend& backend,
                   const Progress& progress, const std::atomic<bool>& interrupted) {
    return Loop{context, journal, policy, backend, progress, interrupted}.run();
}

fs::path write_best(const Context& context, const CampaignRecord& record) {
    const fs::path path = best_recipe_path(context.dir, record);
    util::write_file_atomically(path, context.original.with_edits(policy::edit_list(record.best().view.edits)).text());
    return path;
}

}  // namespace attune::campaign
