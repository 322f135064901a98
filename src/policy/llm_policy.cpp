#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/verdict.hpp>
#include <attune/policy/llm_policy.hpp>
#include <attune/util/files.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace attune::policy {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::size_t k_max_skill_bytes = 96 << 10;  // keeps the prompt within common context windows

std::vector<llm::ToolSpec> tools() {
    const json string{{"type", "string"}};
    return {
        {"read_log", "Lines of a trial's logs: those containing `pattern` (all when omitted), the last `tail` (default 40).",
         {{"type", "object"},
          {"properties", {{"trial", {{"type", "integer"}}}, {"pattern", string}, {"tail", {{"type", "integer"}}}}},
          {"required", {"trial"}}}},
        {"estimate", "The nominal estimate (memory per GPU, fits, step time, tokens/s/GPU) of the incumbent with these edits applied.",
         {{"type", "object"},
          {"properties", {{"edits", {{"type", "object"}, {"description", "key path -> value"}}}}},
          {"required", {"edits"}}}},
        {"propose_change", "Propose the next trial: edits to ONE lever (and its companion keys) on top of the incumbent.",
         {{"type", "object"},
          {"properties", {{"edits", {{"type", "object"}, {"description", "key path -> value"}}}, {"rationale", string}}},
          {"required", {"edits", "rationale"}}}},
        {"stop", "End the campaign: nothing left worth a trial.",
         {{"type", "object"}, {"properties", {{"reason", string}}}, {"required", {"reason"}}}},
    };
}

std::string system_prompt(const std::string& skills) {
    std::string text =
        "You tune the throughput (tokens per second per GPU) of an LLM-training recipe on a GPU cluster, within a "
        "GPU-hour budget. Rules of the game:\n"
        "- Each step you propose ONE lever change (one canonical lever and its companion keys) on top of the "
        "incumbent, the best configuration measured so far, with the propose_change tool; or call stop.\n"
        "- A correctness gate outside you judges every proposal against the original recipe and refuses any change "
        "to what is trained (global batch, sequence length, learning rate, data, numerics, MoE token dropping). Its "
        "verdict is final; a refusal comes back as the tool result, with the reason.\n"
        "- A preflight estimate refuses proposals predicted not to fit in memory. Use the estimate tool to check "
        "candidates first, and read_log to read a trial's logs.\n"
        "- Every trial costs GPU-hours; a configuration already measured is never run again. Fix failures first, "
        "then spend memory headroom on speed.\n"
        "Values are written as YAML scalars would be (numbers, true/false, null, strings).\n";
    if (!skills.empty()) text += "\n# Skill set\n\n" + skills;
    return text;
}

/// The levers a recipe shows: every performance key it sets, with its value and domain.
json levers_of(const CampaignState& state, const recipe::Document& incumbent) {
    json out = json::object();
    for (const auto& leaf : incumbent.leaves()) {
        const gate::KeyRule* rule = state.adapter->classify(leaf.path);
        if (rule == nullptr || rule->key_class != gate::KeyClass::performance || rule->trial_only) continue;
        out[leaf.path] = {{"lever", rule->lever}, {"value", leaf.value.to_json()}, {"domain", rule->domain.describe()}};
    }
    return out;
}

json history_of(const CampaignState& state) {
    json out = json::array();
    for (const auto& t : state.history) {
        json row{{"trial", t.n}, {"kind", t.kind}, {"lever", t.lever}, {"outcome", t.outcome}, {"accepted", t.accepted},
                 {"edits", edits_to_json(t.edits)}};
        if (t.measured && t.measured->tokens_per_s_per_gpu) row["tokens_per_s_per_gpu"] = *t.measured->tokens_per_s_per_gpu;
        if (t.measured) row["bottleneck"] = t.measured->bottleneck;
        out.push_back(std::move(row));
    }
    return out;
}

std::string user_turn(const CampaignState& state, const recipe::Document& incumbent) {
    json s{{"cluster", {{"gpu", state.cluster->gpu}, {"nodes", state.cluster->nodes}, {"gpus_per_node", state.cluster->gpus_per_node}}},
           {"framework", state.adapter->name()},
           {"incumbent_trial", state.incumbent},
           {"incumbent_edits", edits_to_json(state.incumbent_edits)},
           {"levers", levers_of(state, incumbent)},
           {"history", history_of(state)},
           {"budget_left_gpu_hours", state.budget_left_gpu_s / 3600},
           {"next_trial_cost_gpu_hours", state.trial_cost_gpu_s / 3600}};
    if (state.incumbent_measured) {
        const auto& m = *state.incumbent_measured;
        s["latest_diagnosis"] = {{"status", m.status}, {"bottleneck", m.bottleneck}, {"explanation", m.explanation}};
        if (m.tokens_per_s_per_gpu) s["latest_diagnosis"]["tokens_per_s_per_gpu"] = *m.tokens_per_s_per_gpu;
        if (m.peak_memory_gib) s["latest_diagnosis"]["peak_memory_gib"] = *m.peak_memory_gib;
    }
    return "Campaign state:\n" + s.dump(1) + "\nPropose the next change, or stop.";
}

/// Whether writing `value` at `path` changes nothing the framework runs with: the incumbent already
/// holds it (after interpolation), or leaves the key out and the value is what the framework then
/// uses (the adapter's quantity default for the key's lever).
bool holds_already(const CampaignState& state, const recipe::Document& incumbent, const std::string& path,
                   const recipe::Value& value) {
    if (const auto* current = incumbent.find(path)) return current->same_as(value, recipe::Value::Numeric::coerce);
    if (value.is_null()) return true;
    const gate::KeyRule* rule = state.adapter->classify(path);
    if (rule == nullptr || rule->lever.empty()) return false;
    const auto paths = state.adapter->quantity_paths(rule->lever);
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) return false;
    const auto framework_default = state.adapter->quantity(incumbent, rule->lever, *state.cluster);
    const auto wanted = number_of(value);
    return framework_default && wanted && *framework_default == *wanted;
}

/// Reads the model's `edits` argument against the adapter: known keys, values in their
/// domains, one lever; keys proposed at the value the incumbent runs with are dropped. Returns the
/// error to answer, or empty with `edits` filled.
std::string parse_edits(const CampaignState& state, const json& arguments, Edits& edits, std::string& lever) {
    if (!arguments.contains("edits") || !arguments["edits"].is_object() || arguments["edits"].empty())
        return "`edits` must be a non-empty object of key path -> value";
    std::set<std::string> levers;
    const recipe::Document incumbent = state.original->with_edits(edit_list(state.incumbent_edits));
    for (const auto& [path, raw] : arguments["edits"].items()) {
        if (path.size() > 256) return "a key path longer than 256 characters";
        const gate::KeyRule* rule = state.adapter->classify(path);
        if (rule == nullptr) return fmt::format("'{}' is not a key this framework ({}) knows", path, state.adapter->name());
        if (raw.is_object() || raw.is_array() || (raw.is_string() && raw.get<std::string>().size() > 256))
            return fmt::format("'{}': expected a single scalar value", path);
        const recipe::Value value = raw.is_string() ? recipe::Value::from_plain(raw.get<std::string>()) : recipe::Value::from_json(raw);
        if (const auto why = rule->domain.violation(value); !why.empty()) return fmt::format("'{}': {}", path, why);
        if (holds_already(state, incumbent, path, value)) continue;  // a key written as it is: no part of the move
        edits.insert_or_assign(path, value);
        levers.insert(rule->lever);
    }
    if (edits.empty())
        return "no move: the incumbent already runs with every value proposed, so a trial would measure the same "
               "configuration again; propose a change";
    // Companion keys move with their lever and do not count as a second one.
    std::set<std::string> main = levers;
    for (const auto& [path, value] : edits)
        if (const auto* rule = state.adapter->classify(path); rule && levers.size() > 1)
            for (const auto& of : rule->companion_of)
                if (levers.contains(of)) main.erase(rule->lever);
    if (main.size() != 1) return fmt::format("changes {} levers ({}); propose exactly one per step", main.size(), fmt::join(main, ", "));
    lever = *main.begin();
    return {};
}

class LlmPolicy final : public Policy {
public:
    LlmPolicy(std::unique_ptr<llm::Client> client, std::unique_ptr<Policy> fallback, LlmPolicyOptions options,
              std::vector<Lesson> lessons)
        : m_client(std::move(client)), m_fallback(std::move(fallback)), m_options(options), m_lessons(std::move(lessons)) {}

    std::string name() const override { return "llm"; }

    Decision propose(const CampaignState& state) override {
        try {
            if (auto decision = converse(state)) return *decision;
            return fall_back(state, "the model gave no usable proposal within the step's caps");
        } catch (const llm::LlmError& e) {
            journal_exchanges();
            return fall_back(state, std::string("LLM call failed (") + llm::to_string(e.kind()) + "): " + e.what());
        }
    }

    std::vector<std::pair<std::string, json>> take_records() override { return std::exchange(m_records, {}); }

private:
    std::optional<Decision> converse(const CampaignState& state) {
        const recipe::Document incumbent = state.original->with_edits(edit_list(state.incumbent_edits));
        if (m_system.empty())
            m_system = system_prompt(m_options.skills ? skill_context(data_dir() / "skills", m_lessons) : "");
        std::vector<llm::Message> messages{llm::Message::system(m_system), llm::Message::user(user_turn(state, incumbent))};
        int refusals = 0;
        for (int round = 0; round < m_options.max_rounds_per_step; ++round) {
            const llm::Reply reply = m_client->chat(messages, tools());
            journal_exchanges();
            messages.push_back(llm::Message::assistant(reply.text, reply.tool_calls));
            if (reply.tool_calls.empty()) {
                messages.push_back(llm::Message::user("Answer with a tool call: propose_change, estimate, read_log or stop."));
                continue;
            }
            for (const auto& call : reply.tool_calls) {
                auto [answer, ok, decision] = handle(state, call);
                if (decision) return decision;
                if (!ok && call.name == "propose_change" && ++refusals >= m_options.max_refusals_per_step) {
                    record_refusal(call, answer);
                    return std::nullopt;
                }
                if (!ok) record_refusal(call, answer);
                messages.push_back(llm::Message::tool_result(call, answer, ok ? llm::ToolOutcome::ok : llm::ToolOutcome::failed));
            }
        }
        return std::nullopt;
    }

    struct Handled {
        std::string answer;
        bool ok = true;
        std::optional<Decision> decision;
    };

    Handled handle(const CampaignState& state, const llm::ToolCall& call) {
        if (!call.usable()) return {call.error, false, std::nullopt};
        const json& args = call.arguments;
        if (call.name == "stop") return {"", true, Stop{"the model stopped: " + args.value("reason", std::string("(no reason)"))}};
        if (call.name == "read_log") {
            if (!args.contains("trial") || !args["trial"].is_number_integer()) return {"`trial` must be an integer", false, std::nullopt};
            const std::string pattern = args.contains("pattern") && args["pattern"].is_string() ? args["pattern"].get<std::string>() : "";
            const int tail = args.contains("tail") && args["tail"].is_number_integer() ? args["tail"].get<int>() : 40;
            return {state.read_log ? state.read_log(args["trial"].get<int>(), pattern, tail) : "no logs", true, std::nullopt};
        }
        Edits edits;
        std::string lever;
        if (const auto error = parse_edits(state, args, edits, lever); !error.empty()) return {error, false, std::nullopt};
        const Edits whole = merged(state.incumbent_edits, edits);
        const Preflight p = state.estimate ? state.estimate(whole) : Preflight{};
        const json estimate{{"fits", p.fits}, {"valid", p.valid}, {"problem", p.problem}, {"memory_gib", p.memory_gib},
                            {"capacity_gib", p.capacity_gib}, {"step_time_s", p.step_time_s},
                            {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}};
        if (call.name == "estimate") return {estimate.dump(), true, std::nullopt};
        if (call.name != "propose_change") return {"unknown tool " + call.name, false, std::nullopt};
        if (const auto refusal = gate_refusal(state, whole); !refusal.empty()) return {"the gate refuses it: " + refusal, false, std::nullopt};
        if (p.estimated && (!p.valid || !p.fits)) return {"preflight predicts it fails: " + estimate.dump(), false, std::nullopt};
        for (const auto& t : state.history)
            if (t.edits == whole) return {fmt::format("trial {} already measured this configuration", t.n), false, std::nullopt};
        const std::string rationale = args.value("rationale", std::string());
        return {"", true, Proposal{lever, "llm", edits, rationale.substr(0, 2000), state.incumbent_measured ? state.incumbent_measured->bottleneck : ""}};
    }

    static std::string gate_refusal(const CampaignState& state, const Edits& whole) {
        if (state.rules == nullptr || state.gate_policy == nullptr) return {};
        try {
            const recipe::Document candidate = state.original->with_edits(edit_list(whole));
            const gate::Verdict verdict = gate::check(*state.original, candidate, *state.adapter, *state.rules,
                                                      *state.gate_policy, *state.cluster, {});
            for (const auto& change : verdict.changes)
                if (!change.allowed) return change.key + ": " + change.reason;
            for (const auto& inv : verdict.invariants)
                if (!inv.ok) return "invariant " + inv.name + ": " + inv.why;
            return {};
        } catch (const InputError& e) {
            return std::string("the edits cannot be written: ") + e.what();
        }
    }

    Decision fall_back(const CampaignState& state, const std::string& why) {
        m_records.emplace_back("llm-fallback", json{{"reason", why}, {"to", m_fallback->name()}});
        return m_fallback->propose(state);
    }

    void record_refusal(const llm::ToolCall& call, const std::string& why) {
        m_records.emplace_back("llm-refused", json{{"tool", call.name}, {"arguments", call.raw_arguments.substr(0, 4000)}, {"reason", why}});
    }

    void journal_exchanges() {
        for (const auto& exchange : m_client->take_exchanges()) m_records.emplace_back("llm-exchange", llm::to_json(exchange));
    }

    std::unique_ptr<llm::Client> m_client;
    std::unique_ptr<Policy> m_fallback;
    LlmPolicyOptions m_options;
    std::vector<Lesson> m_lessons;
    std::string m_system;
    std::vector<std::pair<std::string, json>> m_records;
};

}  // namespace

std::string skill_context(const fs::path& skills_dir, const std::vector<Lesson>& lessons) {
    std::string out;
    const auto add = [&](const fs::path& file) {
        if (out.size() >= k_max_skill_bytes || !fs::exists(file)) return;
        out += "## " + file.filename().string() + "\n\n" + util::read_text_file(file) + "\n";
    };
    add(skills_dir / "search-rules.md");
    std::vector<fs::path> playbooks;
    if (fs::exists(skills_dir / "playbooks"))
        for (const auto& entry : fs::directory_iterator(skills_dir / "playbooks")) playbooks.push_back(entry.path());
    std::sort(playbooks.begin(), playbooks.end());
    for (const auto& file : playbooks) add(file);
    for (const auto& lesson : lessons) add(lesson.file);
    return out.size() > k_max_skill_bytes ? out.substr(0, k_max_skill_bytes) : out;
}

std::unique_ptr<Policy> make_llm_policy(std::unique_ptr<llm::Client> client, std::unique_ptr<Policy> fallback,
                                        const LlmPolicyOptions& options, std::vector<Lesson> lessons) {
    return std::make_unique<LlmPolicy>(std::move(client), std::move(fallback), options, std::move(lessons));
}

}  // namespace attune::policy
