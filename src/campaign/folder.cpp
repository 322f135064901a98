#include <attune/campaign/campaign.hpp>
#include <attune/campaign/trial_io.hpp>
#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/sim/model.hpp>
#include <attune/util/files.hpp>
#include <attune/util/hash.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>

namespace attune::campaign {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* k_original = "recipes/original.yaml";  // journals that do not name their copy
constexpr const char* k_cluster = "cluster.yaml";
constexpr const char* k_gate_policy = "gate-policy.yaml";
constexpr const char* k_model_config = "model-config.json";
constexpr const char* k_lessons = "lessons";

void make_folder(const fs::path& dir) {
    std::error_code error;
    fs::create_directories(dir / "recipes", error);
    if (error) throw InputError(fmt::format("{}: cannot create the campaign folder: {}", dir.string(), error.message()));
    fs::create_directories(dir / "trials", error);
    if (error) throw InputError(fmt::format("{}: cannot create the campaign folder: {}", dir.string(), error.message()));
}

void copy_in(const fs::path& from, const fs::path& to) { util::write_file_atomically(to, util::read_text_file(from)); }

/// The configs the recipe composes (a launch command's base, its Hydra defaults), copied where a copy of
/// the recipe in `folder` finds them, so that --resume, replay and `gate check` on the best recipe read
/// the same keys. A config named by an absolute path, or one that would land outside `folder`, is read
/// where it is.
void copy_base_configs(const recipe::Document& recipe, const fs::path& folder) {
    for (const auto& base : recipe.base_configs()) {
        if (fs::path(base.named).is_absolute()) continue;
        const fs::path to = (folder / base.named).lexically_normal();
        const auto inside = to.lexically_relative(folder.lexically_normal());
        if (inside.empty() || *inside.begin() == "..") continue;
        fs::create_directories(to.parent_path());
        copy_in(base.file, to);
    }
}

json cluster_json(const cluster::Cluster& c) {
    json out{{"name", c.name}, {"gpu", c.gpu}, {"nodes", c.nodes}, {"gpus_per_node", c.gpus_per_node}};
    if (c.network_gbps_per_gpu) out["network_gbps_per_gpu"] = *c.network_gbps_per_gpu;
    return out;
}

Context context_of(const fs::path& dir, const fs::path& recipe, const std::string& framework,
                   const std::optional<fs::path>& cluster_file, const std::optional<fs::path>& gate_policy,
                   const std::optional<fs::path>& model_config) {
    const gate::Rules& rules = gate::default_rules();
    auto loaded = gate::load_recipe(recipe, rules, framework, model_config);
    return Context{.dir = dir,
                   .original = std::move(loaded.document),
                   .adapter = loaded.adapter,
                   .rules = &rules,
                   .gate_policy = gate::load_policy(data_dir(), gate_policy),
                   .cluster = cluster_file ? cluster::load_cluster(*cluster_file) : cluster::default_cluster(),
                   .search = &policy::default_search_rules(),
                   .trial_steps = k_default_trial_steps,
                   .seed = 1,
                   .world_seed = 0,
                   .backend = "sim",
                   .policy = "rules",
                   .llm = {},
                   .llm_url = {},
                   .no_skills = false,
                   .max_queue_wait_s = 0,
                   .preflight_verdicts = true,
                   .max_levers = std::nullopt,
                   .blind = false,
                   .lessons = {},
                   .fixed_startup_s = std::nullopt};
}

// The embedded simulated cluster runs only what its model can build: a recipe with no model shape or
// an inconsistent layout is the user's to fix before a campaign starts (a recipe that does not fit
// memory is not: fixing an OOM is a campaign's job).
void require_simulable(const fs::path& recipe, const Context& context) {
    const auto p = preflight_of(context.original, *context.adapter, context.cluster);
    if (!p.estimated || !p.valid)
        throw InputError(fmt::format("{}: the simulated cluster cannot run this recipe: {}", recipe.string(), p.problem));
}

/// The lessons of `lessons` that match the recipe, best first, copied into the campaign's lessons/ folder
/// and read from there from now on (campaign-start `lessons` lists the copies).
std::vector<policy::Lesson> copy_matching(std::vector<policy::Lesson> lessons, const Context& context,
                                          const fs::path& campaign) {
    const auto query = policy::lesson_query(context.original, *context.adapter, context.cluster);
    auto matched = policy::matching_lessons(std::move(lessons), query);
    if (!matched.empty()) fs::create_directories(campaign / k_lessons);
    for (auto& lesson : matched) {
        const fs::path copy = campaign / k_lessons / lesson.file.filename();
        copy_in(lesson.file, copy);
        lesson.file = copy;
    }
    return matched;
}

/// The lessons a campaign read, from its own copies, in the order it matched them.
std::vector<policy::Lesson> lessons_of(const fs::path& dir, const json& start) {
    std::vector<policy::Lesson> out;
    for (const auto& file : start.value("lessons", json::array())) out.push_back(policy::load_lesson(dir / file.get<std::string>()));
    return out;
}

}  // namespace

std::optional<int> max_levers_of(const json& start) {
    if (start.contains("max_levers") && start["max_levers"].is_number_integer()) return start["max_levers"].get<int>();
    return std::nullopt;
}

std::optional<double> fixed_startup_of(const json& start) {
    // Journals from before the key were charged the simulated cluster's start-up on every backend.
    if (!start.contains("fixed_startup_s")) return launch::k_sim_startup_s;
    if (start["fixed_startup_s"].is_number()) return start["fixed_startup_s"].get<double>();
    return std::nullopt;
}

Opened create(const fs::path& dir, const Settings& settings) {
    if (settings.budget_gpu_s <= 0) throw InputError("--budget: expected a positive GPU-time such as 200gpuh");
    if (settings.trial_steps && *settings.trial_steps < 3)
        throw InputError(fmt::format("--trial-steps {}: expected at least 3 (warm-up, then timed steps)", *settings.trial_steps));
    Context context = context_of(dir, settings.recipe, settings.framework, settings.cluster_file, settings.gate_policy,
                                 settings.model_config);
    if (settings.backend == "sim") require_simulable(settings.recipe, context);
    else if (!sim::find_hardware(context.cluster.gpu))
        spdlog::warn("cluster {}: attune has no specs for GPU '{}' ({}): no estimate, preflight or MFU; the rules policy "
                     "works from the trials' diagnosis and its rules' order alone",
                     context.cluster.name, context.cluster.gpu, sim::known_gpus_hint(context.cluster.gpu));
    if (fs::exists(dir / "journal.jsonl"))
        throw InputError(fmt::format("{}: this folder already holds a campaign; add --resume to continue it, or choose another --campaign",
                                     dir.string()));
    // Read before anything is written: a malformed lessons file writes nothing.
    auto lessons = settings.lessons_dir ? policy::load_lessons(*settings.lessons_dir) : std::vector<policy::Lesson>{};
    make_folder(dir);
    auto lock = std::make_unique<CampaignLock>(dir);
    // The copy keeps the recipe's format, which its extension names.
    const std::string original = "recipes/original" + recipe::extension_of(context.original.format());
    copy_in(settings.recipe, dir / original);
    copy_base_configs(context.original, dir / "recipes");
    copy_base_configs(context.original, dir);  // beside best.<ext>, so that it reads where it is written
    if (settings.cluster_file) copy_in(*settings.cluster_file, dir / k_cluster);
    if (settings.gate_policy) copy_in(*settings.gate_policy, dir / k_gate_policy);
    if (settings.model_config) {
        // The campaign reads its own copy from now on, so that --resume and replay see the same model.
        const fs::path config = fs::is_directory(*settings.model_config) ? *settings.model_config / "config.json" : *settings.model_config;
        copy_in(config, dir / k_model_config);
        context.original = context.original.with_model_config(dir / k_model_config);
    }
    context.trial_steps = settings.trial_steps.value_or(k_default_trial_steps);
    context.seed = settings.seed;
    context.world_seed = settings.world_seed;
    context.backend = settings.backend;
    context.policy = settings.policy;
    context.llm = settings.llm;
    context.llm_url = settings.llm_url;
    context.no_skills = settings.no_skills;
    context.max_queue_wait_s = settings.max_queue_wait_s;
    context.preflight_verdicts = settings.preflight_verdicts;
    context.max_levers = settings.max_levers;
    context.blind = settings.blind;
    context.fixed_startup_s = settings.replayed_fixed_startup_s ? settings.replayed_fixed_startup_s
                                                                : launch::fixed_startup_s(settings.backend);
    context.lessons = copy_matching(std::move(lessons), context, dir);
    json copies = json::array();
    for (const auto& lesson : context.lessons) copies.push_back(lesson.file.lexically_relative(dir).string());
    Journal journal = Journal::open(dir);
    journal.append("campaign-start",
                   {{"recipe", settings.recipe.string()},
                    {"recipe_file", original},
                    {"recipe_sha256", util::sha256_hex(context.original.text())},
                    {"framework", context.adapter->name()},
                    {"cluster", cluster_json(context.cluster)},
                    {"cluster_file", settings.cluster_file ? json(k_cluster) : json(nullptr)},
                    {"gate_policy_file", settings.gate_policy ? json(k_gate_policy) : json(nullptr)},
                    {"model_config_file", settings.model_config ? json(k_model_config) : json(nullptr)},
                    {"backend", settings.backend},
                    {"policy", settings.policy},
                    {"llm", settings.llm},
                    {"llm_url", settings.llm_url},
                    {"no_skills", settings.no_skills},
                    {"budget_gpu_seconds", settings.budget_gpu_s},
                    {"trial_steps", context.trial_steps},
                    {"seed", settings.seed},
                    {"world_seed", settings.world_seed},
                    {"max_queue_wait_s", settings.max_queue_wait_s},
                    {"preflight_verdicts", settings.preflight_verdicts},
                    {"max_levers", settings.max_levers ? json(*settings.max_levers) : json(nullptr)},
                    {"blind", settings.blind},
                    {"lessons_dir", settings.lessons_dir ? json(settings.lessons_dir->string()) : json(nullptr)},
                    {"lessons", copies},
                    {"fixed_startup_s", context.fixed_startup_s ? json(*context.fixed_startup_s) : json(nullptr)},
                    {"rules_hash", context.rules->hash()},
                    {"search_rules", fs::path(context.search->source).lexically_relative(data_dir()).string()},
                    {"attune_version", ATTUNE_VERSION}});
    return {std::move(context), std::move(journal), std::move(lock)};
}

Opened reopen(const fs::path& dir, bool lock) {
    if (!fs::exists(dir / "journal.jsonl"))
        throw InputError(fmt::format("{}: no campaign here (no journal.jsonl); start one with attune tune RECIPE --campaign DIR",
                                     dir.string()));
    auto held = lock ? std::make_unique<CampaignLock>(dir) : nullptr;
    Journal journal = Journal::open(dir);
    const CampaignRecord record = fold(journal.events());
    const json& start = record.start;
    const auto file = [&](const char* key) -> std::optional<fs::path> {
        if (!start.contains(key) || !start[key].is_string()) return std::nullopt;
        return dir / start[key].get<std::string>();
    };
    const fs::path original = dir / start.value("recipe_file", k_original);
    Context context = context_of(dir, original, start.value("framework", ""), file("cluster_file"), file("gate_policy_file"),
                                 file("model_config_file"));
    if (util::sha256_hex(context.original.text()) != start.value("recipe_sha256", ""))
        throw InputError(fmt::format("{}: the recipe copy differs from the one the campaign started with", original.string()));
    context.trial_steps = start.value("trial_steps", k_default_trial_steps);
    context.seed = start.value("seed", std::uint64_t{1});
    context.world_seed = start.value("world_seed", std::uint64_t{0});
    context.backend = start.value("backend", "sim");
    context.policy = start.value("policy", "rules");
    context.llm = start.value("llm", "");
    context.llm_url = start.value("llm_url", "");
    context.no_skills = start.value("no_skills", false);
    context.max_queue_wait_s = start.value("max_queue_wait_s", 0.0);
    context.preflight_verdicts = start.value("preflight_verdicts", true);
    context.max_levers = max_levers_of(start);
    context.blind = start.value("blind", false);
    context.fixed_startup_s = fixed_startup_of(start);
    context.lessons = lessons_of(dir, start);
    return {std::move(context), std::move(journal), std::move(held)};
}

}  // namespace attune::campaign
