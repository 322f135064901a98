#include <attune/bench/bench.hpp>

#include <attune/campaign/budget.hpp>
#include <attune/campaign/campaign.hpp>
#include <attune/campaign/factories.hpp>
#include <attune/core/error.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/recipe/document.hpp>
#include <attune/sim/from_recipe.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <numeric>

namespace attune::bench {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The world's noise-free throughput of a configuration; 0 when it is inconsistent or does not fit.
double true_throughput(const campaign::Context& ctx, const policy::Edits& edits, const sim::World& world) {
    try {
        const auto in =
            sim::from_recipe(ctx.original.with_edits(policy::edit_list(edits)), *ctx.adapter, ctx.cluster);
        const auto e = world.measure(in.hardware, in.model, in.layout, 0, 0, false);
        return e.valid && e.fits ? e.tokens_per_s_per_gpu : 0.0;
    } catch (const InputError&) {
        return 0.0;
    }
}

std::string safe(std::string text) {
    for (char& c : text)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
    return text;
}

constexpr double k_near_oracle = 0.95;  // "reached the oracle": the bench's GPU-hours and stopped-short measures

/// The oracle's best of each (suite entry, world seed): the same for every policy and campaign seed,
/// so it is searched once (its search is most of a short campaign's time).
using Oracles = std::map<std::pair<const SuiteEntry*, std::uint64_t>, double>;

Run run_one(const Request& request, const SuiteEntry& entry, const std::string& policy_name,
            std::uint64_t seed, std::uint64_t world_seed, Oracles& oracles) {
    campaign::Settings settings;
    settings.recipe = entry.recipe;
    settings.cluster_file = entry.cluster;
    settings.model_config = entry.model_config;
    settings.budget_gpu_s = budget_gpu_s(request, entry);
    settings.trial_steps = request.trial_steps;
    settings.policy = policy_name;
    settings.seed = seed;
    settings.world_seed = world_seed;
    settings.preflight_verdicts = campaign::policy_uses_preflight(policy_name) || request.random_preflight;
    settings.max_levers = campaign::policy_max_levers(policy_name);
    settings.blind = request.blind;
    settings.lessons_dir = request.lessons_dir;
    settings.llm = request.policy_options.llm;
    settings.llm_url = request.policy_options.llm_url;
    settings.no_skills = request.policy_options.no_skills;
    const fs::path dir =
        request.work_dir / safe(fmt::format("{}-{}-s{}-w{}", entry.name, policy_name, seed, world_seed));
    auto opened = campaign::create(dir, settings);
    const auto& ctx = opened.context;
    auto options = request.policy_options;
    options.name = policy_name, options.seed = seed;
    auto policy = campaign::make_policy(options, ctx);
    auto backend = campaign::make_backend(ctx);
    const std::atomic<bool> interrupted{false};
    const auto record = campaign::run(ctx, opened.journal, *policy, *backend, {}, interrupted);

    const sim::World world(world_seed);
    Run r;
    r.recipe = entry.name, r.policy = policy_name, r.seed = seed, r.world_seed = world_seed;
    const auto [oracle, first] = oracles.try_emplace({&entry, world_seed}, 0.0);
    if (first) {
        const policy::ConfigSpace space(ctx.original, *ctx.adapter, ctx.cluster, *ctx.rules, ctx.gate_policy);
        oracle->second = policy::run_gated_oracle(space, world).best_tokens_per_s_per_gpu;
    }
    r.oracle_tokens_per_s_per_gpu = oracle->second;
    r.baseline_tokens_per_s_per_gpu = true_throughput(ctx, {}, world);
    r.true_tokens_per_s_per_gpu = true_throughput(ctx, record.best().view.edits, world);
    double spent = 0, incumbent = 0;
    for (const auto& trial : record.trials) {
        spent += trial.gpu_seconds;
        r.launches += trial.attempts;
        if (trial.view.measured) {
            const bool ok = trial.view.measured->status == "ok";
            r.failed_launches += ok ? trial.attempts - 1 : trial.attempts;
            if (trial.view.kind == "baseline" && ok)
                incumbent = true_throughput(ctx, trial.view.edits, world);
            if (trial.view.kind == "candidate" && trial.decision == "accept")
                incumbent = true_throughput(ctx, trial.view.edits, world);
        }
        if (trial.stage == campaign::Stage::refused) ++r.refusals;
        if (trial.view.outcome == "predicted-oom" || trial.view.outcome == "infeasible")
            ++r.predicted_failures;
        if (trial.gpu_seconds > 0) r.curve.emplace_back(spent / 3600, incumbent);
    }
    r.gpu_hours_spent = record.spent_gpu_s / 3600;
    r.budget_gpu_hours = settings.budget_gpu_s / 3600;
    // Against the oracle, not the campaign's own final best, which would flatter a policy that ends low.
    for (const auto& [hours, tokens] : r.curve)
        if (r.oracle_tokens_per_s_per_gpu > 0 && tokens >= k_near_oracle * r.oracle_tokens_per_s_per_gpu) {
            r.gpu_hours_to_95 = hours;
            break;
        }
    const double mean_trial_gpu_s = r.launches > 0 ? record.spent_gpu_s / r.launches : 0;
    r.stopped_short = r.true_tokens_per_s_per_gpu < k_near_oracle * r.oracle_tokens_per_s_per_gpu &&
                      record.left_gpu_s() >= 2 * mean_trial_gpu_s;
    return r;
}

double mean(const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
}

double stdev(const std::vector<double>& v) {
    if (v.size() < 2) return 0.0;
    const double m = mean(v);
    double s = 0;
    for (const double x : v) s += (x - m) * (x - m);
    return std::sqrt(s / double(v.size() - 1));
}

json number_or_null(const std::vector<double>& v) { return v.empty() ? json(nullptr) : json(mean(v)); }

/// The incumbent's true throughput at `hours` spent (0 before the baseline ran).
double at(const Run& r, double hours) {
    double value = 0;
    for (const auto& [h, tokens] : r.curve) {
        if (h > hours) break;
        value = tokens;
    }
    return value;
}

std::uint64_t world_seed_of(const fs::path& manifest, const YAML::Node& node) {
    try {
        return node.as<std::uint64_t>();
    } catch (const YAML::Exception&) {
        throw InputError(fmt::format("{}:{}: world_seed: expected a non-negative integer", manifest.string(), node.Mark().line + 1));
    }
}

double budget_of(const fs::path& manifest, const YAML::Node& node) {
    try {
        return campaign::parse_budget(node.as<std::string>());
    } catch (const InputError& e) {
        throw InputError(fmt::format("{}:{}: budget: {}", manifest.string(), node.Mark().line + 1, e.what()));
    }
}

}  // namespace

double budget_gpu_s(const Request& request, const SuiteEntry& entry) { return entry.budget_gpu_s.value_or(request.budget_gpu_s); }

std::vector<SuiteEntry> load_suite(const fs::path& dir) {
    if (!fs::is_directory(dir))
        throw InputError(fmt::format("--suite {}: not a folder of recipes", dir.string()));
    std::vector<SuiteEntry> suite;
    const fs::path manifest = dir / "suite.yaml";
    if (fs::exists(manifest)) {
        YAML::Node root;
        try {
            root = YAML::LoadFile(manifest.string());
        } catch (const YAML::Exception& e) {
            throw InputError(fmt::format("{}:{}: {}", manifest.string(), e.mark.line + 1, e.msg));
        }
        if (!root.IsSequence())
            throw InputError(
                fmt::format("{}: expected a list of {{recipe: FILE, cluster: FILE}}", manifest.string()));
        for (const auto& item : root) {
            if (!item.IsMap() || !item["recipe"])
                throw InputError(fmt::format("{}:{}: expected {{recipe: FILE, cluster: FILE}}",
                                             manifest.string(), item.Mark().line + 1));
            for (const auto& field : item)
                if (const auto key = field.first.as<std::string>();
                    key != "recipe" && key != "cluster" && key != "name" && key != "model_config" && key != "world_seed" &&
                    key != "budget")
                    throw InputError(fmt::format("{}:{}: unknown key '{}'; expected recipe, cluster, name, model_config, world_seed or budget",
                                                 manifest.string(), field.first.Mark().line + 1, key));
            SuiteEntry e;
            e.recipe = dir / item["recipe"].as<std::string>();
            if (item["cluster"]) e.cluster = dir / item["cluster"].as<std::string>();
            if (item["model_config"]) e.model_config = dir / item["model_config"].as<std::string>();
            if (item["world_seed"]) e.world_seed = world_seed_of(manifest, item["world_seed"]);
            if (item["budget"]) e.budget_gpu_s = budget_of(manifest, item["budget"]);
            e.name = item["name"] ? item["name"].as<std::string>()
                                  : e.recipe.filename().string() +
                                        (e.cluster ? " @ " + e.cluster->stem().string() : "");
            if (!fs::exists(e.recipe))
                throw InputError(
                    fmt::format("{}: recipe {} not found", manifest.string(), e.recipe.string()));
            suite.push_back(std::move(e));
        }
    } else {
        for (const auto& file : fs::directory_iterator(dir))
            if (file.is_regular_file() && recipe::is_recipe_file(file.path()))
                suite.push_back({file.path().filename().string(), file.path(), std::nullopt, std::nullopt, std::nullopt, std::nullopt});
        std::sort(suite.begin(), suite.end(),
                  [](const SuiteEntry& a, const SuiteEntry& b) { return a.name < b.name; });
    }
    if (suite.empty())
        throw InputError(
            fmt::format("--suite {}: no recipes (*.yaml, *.yml, *.json, *.toml, *.sh, or suite.yaml listing them)", dir.string()));
    return suite;
}

std::vector<Run> run(const Request& request, const std::function<void(const Run&)>& progress) {
    for (const auto& name : request.policies) {
        auto options = request.policy_options;
        options.name = name;
        campaign::check_policy(options);
    }
    fs::create_directories(request.work_dir);  // only once the policies are known to work
    std::vector<Run> runs;
    Oracles oracles;
    for (const auto& entry : request.suite)
        for (const auto& policy : request.policies)
            for (int seed = 1; seed <= request.seeds; ++seed)
                for (const auto world_seed : entry.world_seed ? std::vector{*entry.world_seed} : request.world_seeds) {
                    runs.push_back(run_one(request, entry, policy, std::uint64_t(seed), world_seed, oracles));
                    if (progress) progress(runs.back());
                }
    return runs;
}

json to_json(const Request& request, const std::vector<Run>& runs) {
    json recipes = json::array();
    struct Totals {
        std::vector<double> fractions, hours;
        int failed = 0, refusals = 0, won = 0, at_95 = 0, short_stops = 0;
        double min_fraction = 1e9;
    };
    std::map<std::string, Totals> totals;
    for (const auto& entry : request.suite) {
        std::vector<double> baselines, oracles;
        json policies = json::object();
        std::string winner;
        double winning = -1;
        for (const auto& name : request.policies) {
            std::vector<double> tokens, fractions, hours, spent;
            int failed = 0, refusals = 0, predicted = 0, launches = 0, short_stops = 0;
            for (const auto& r : runs) {
                if (r.recipe != entry.name || r.policy != name) continue;
                tokens.push_back(r.true_tokens_per_s_per_gpu);
                fractions.push_back(r.oracle_tokens_per_s_per_gpu > 0
                                        ? r.true_tokens_per_s_per_gpu / r.oracle_tokens_per_s_per_gpu
                                        : 0.0);
                // A campaign that never got there counts its whole budget: a floor on what it needed.
                hours.push_back(r.gpu_hours_to_95.value_or(r.budget_gpu_hours));
                short_stops += r.stopped_short ? 1 : 0;
                spent.push_back(r.gpu_hours_spent);
                failed += r.failed_launches, refusals += r.refusals, predicted += r.predicted_failures,
                    launches += r.launches;
                if (name == request.policies.front())
                    baselines.push_back(r.baseline_tokens_per_s_per_gpu),
                        oracles.push_back(r.oracle_tokens_per_s_per_gpu);
            }
            policies[name] = {{"mean_tokens_per_s_per_gpu", mean(tokens)},
                              {"stdev", stdev(tokens)},
                              {"fraction_of_oracle", mean(fractions)},
                              {"gpu_hours_to_95_of_oracle", number_or_null(hours)},
                              {"stopped_short", short_stops},
                              {"failed_launches", failed},
                              {"refusals", refusals},
                              {"predicted_failures", predicted},
                              {"launches", launches},
                              {"gpu_hours_spent", mean(spent)},
                              {"runs", tokens.size()}};
            auto& t = totals[name];
            t.fractions.push_back(mean(fractions));
            t.min_fraction = std::min(t.min_fraction, mean(fractions));
            if (!hours.empty()) t.hours.push_back(mean(hours));
            t.failed += failed, t.refusals += refusals, t.short_stops += short_stops;
            if (mean(fractions) >= 0.95) ++t.at_95;
            if (mean(tokens) > winning) winning = mean(tokens), winner = name;
        }
        if (!winner.empty()) ++totals[winner].won;
        recipes.push_back({{"recipe", entry.name},
                           {"cluster", entry.cluster ? entry.cluster->filename().string()
                                                     : std::string("default (8x8 H100)")},
                           {"baseline_tokens_per_s_per_gpu", mean(baselines)},
                           {"oracle_tokens_per_s_per_gpu", mean(oracles)},
                           {"budget_gpu_hours", budget_gpu_s(request, entry) / 3600},
                           {"policies", policies}});
    }
    json summary = json::object();
    for (const auto& name : request.policies) {
        const auto& t = totals[name];
        summary[name] = {{"mean_fraction_of_oracle", mean(t.fractions)},
                         {"min_fraction_of_oracle", t.fractions.empty() ? 0.0 : t.min_fraction},
                         {"mean_gpu_hours_to_95_of_oracle", number_or_null(t.hours)},
                         {"stopped_short", t.short_stops},
                         {"failed_launches", t.failed},
                         {"refusals", t.refusals},
                         {"recipes_best", t.won},
                         {"recipes_at_95_of_oracle", t.at_95}};
    }
    return {{"budget_gpu_hours", request.budget_gpu_s / 3600},
            {"policies", request.policies},
            {"seeds", request.seeds},
            {"world_seeds", request.world_seeds},
            {"blind", request.blind},
            {"lessons", request.lessons_dir ? json(request.lessons_dir->string()) : json(nullptr)},
            {"recipes", recipes},
            {"summary", summary}};
}

/// The recipe's cluster, and its budget where it is not the bench's.
std::string cluster_cell(const json& doc, const json& recipe) {
    const double budget = recipe["budget_gpu_hours"].get<double>();
    if (budget == doc["budget_gpu_hours"].get<double>()) return recipe["cluster"].get<std::string>();
    return fmt::format("{}, {:g} GPU-h", recipe["cluster"].get<std::string>(), budget);
}

std::string markdown(const json& doc) {
    std::string out =
        "| recipe | cluster | baseline tok/s/GPU | oracle | policy | mean tok/s/GPU | stdev | of oracle | "
        "GPU-h to 95% of oracle | stopped short | failed launches | refusals |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    const auto hours = [](const json& v) {
        return v.is_null() ? std::string("-") : fmt::format("{:.1f}", v.get<double>());
    };
    for (const auto& r : doc["recipes"]) {
        bool first = true;
        for (const auto& name : doc["policies"]) {
            const auto& p = r["policies"][name.get<std::string>()];
            out += fmt::format(
                "| {} | {} | {} | {} | {} | {:.0f} | {:.0f} | {:.2f} | {} | {} | {} | {} |\n",
                first ? r["recipe"].get<std::string>() : "", first ? cluster_cell(doc, r) : "",
                first ? fmt::format("{:.0f}", r["baseline_tokens_per_s_per_gpu"].get<double>()) : "",
                first ? fmt::format("{:.0f}", r["oracle_tokens_per_s_per_gpu"].get<double>()) : "",
                name.get<std::string>(), p["mean_tokens_per_s_per_gpu"].get<double>(),
                p["stdev"].get<double>(), p["fraction_of_oracle"].get<double>(), hours(p["gpu_hours_to_95_of_oracle"]),
                p["stopped_short"].get<int>(), p["failed_launches"].get<int>(), p["refusals"].get<int>());
            first = false;
        }
    }
    out +=
        "\n| policy | mean of oracle | worst recipe | GPU-h to 95% of oracle | stopped short | failed launches | "
        "refusals | best on recipes | recipes at 95% of oracle |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& name : doc["policies"]) {
        const auto& s = doc["summary"][name.get<std::string>()];
        out += fmt::format("| {} | {:.2f} | {:.2f} | {} | {} | {} | {} | {} | {} |\n", name.get<std::string>(),
                           s["mean_fraction_of_oracle"].get<double>(),
                           s["min_fraction_of_oracle"].get<double>(), hours(s["mean_gpu_hours_to_95_of_oracle"]),
                           s["stopped_short"].get<int>(), s["failed_launches"].get<int>(), s["refusals"].get<int>(),
                           s["recipes_best"].get<int>(), s["recipes_at_95_of_oracle"].get<int>());
    }
    return out;
}

std::string plot_svg(const Request& request, const std::vector<Run>& runs) {
    constexpr int width = 720, height = 420, left = 70, right = 150, top = 30, bottom = 50;
    constexpr int samples = 120;
    constexpr const char* colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    double budget_h = request.budget_gpu_s / 3600;
    for (const auto& entry : request.suite) budget_h = std::max(budget_h, budget_gpu_s(request, entry) / 3600);
    const double plot_w = width - left - right, plot_h = height - top - bottom;
    const auto x_of = [&](double hours) { return left + plot_w * hours / budget_h; };
    const auto y_of = [&](double fraction) {
        return top + plot_h * (1 - std::clamp(fraction, 0.0, 1.2) / 1.2);
    };
    std::string svg = fmt::format(
        R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{0}" height="{1}" viewBox="0 0 {0} {1}">)svg",
        width, height);
    svg += fmt::format(R"svg(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#888"/>)svg",
                       left, top, plot_w, plot_h);
    for (const double f : {0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2}) {
        svg += fmt::format(R"svg(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>)svg", left,
                           y_of(f), left + plot_w, y_of(f));
        svg += fmt::format(R"svg(<text x="{}" y="{:.1f}" font-size="11" text-anchor="end">{:.1f}</text>)svg",
                           left - 6, y_of(f) + 4, f);
    }
    for (int i = 0; i <= 4; ++i)
        svg +=
            fmt::format(R"svg(<text x="{:.1f}" y="{}" font-size="11" text-anchor="middle">{:.0f}</text>)svg",
                        x_of(budget_h * i / 4), top + plot_h + 16, budget_h * i / 4);
    svg += fmt::format(
        R"svg(<text x="{:.1f}" y="{}" font-size="12" text-anchor="middle">GPU-hours spent</text>)svg",
        left + plot_w / 2, height - 10);
    svg += fmt::format(
        R"svg(<text x="16" y="{0:.1f}" font-size="12" transform="rotate(-90 16 {0:.1f})" text-anchor="middle">best so far / oracle (true, mean)</text>)svg",
        top + plot_h / 2);
    for (std::size_t p = 0; p < request.policies.size(); ++p) {
        const auto& name = request.policies[p];
        std::string points;
        for (int i = 0; i <= samples; ++i) {
            const double hours = budget_h * i / samples;
            std::vector<double> fractions;
            for (const auto& r : runs)
                if (r.policy == name && r.oracle_tokens_per_s_per_gpu > 0)
                    fractions.push_back(at(r, hours) / r.oracle_tokens_per_s_per_gpu);
            points += fmt::format("{:.1f},{:.1f} ", x_of(hours), y_of(mean(fractions)));
        }
        const char* colour = colours[p % std::size(colours)];
        svg += fmt::format(R"svg(<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>)svg",
                           colour, points);
        svg += fmt::format(
            R"svg(<line x1="{0}" y1="{1}" x2="{2}" y2="{1}" stroke="{3}" stroke-width="2"/><text x="{4}" y="{5}" font-size="12">{6}</text>)svg",
            left + plot_w + 12, top + 14 + 18 * int(p), left + plot_w + 36, colour, left + plot_w + 42,
            top + 18 + 18 * int(p), name);
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace attune::bench
