#include <attune/core/error.hpp>
#include <attune/launch/slurm.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <sstream>

namespace attune::launch::slurm {

namespace {

bool directive_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::string_view("._,:=/@+%~-").find(c) != std::string_view::npos;
}

std::optional<std::time_t> parse_timestamp(std::string_view text) {
    std::tm tm{};
    const std::string s(text);
    const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr || *end != '\0') return std::nullopt;
    tm.tm_isdst = -1;
    return std::mktime(&tm);
}

}  // namespace

std::string shell_quote(std::string_view value, std::string_view what) {
    for (const char c : value)
        if (c == '\n' || c == '\r' || c == '\0')
            throw InputError(fmt::format("{}: a newline, carriage return or NUL cannot be passed to a job script safely", what));
    std::string out = "'";
    for (const char c : value) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

std::string directive_value(std::string_view value, std::string_view what) {
    for (const char c : value)
        if (!directive_char(c))
            throw InputError(fmt::format("{}: '{}' has a character an #SBATCH line cannot carry (allowed: letters, digits and ._,:=/@+%~-)",
                                         what, std::isprint(static_cast<unsigned char>(c)) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<unsigned char>(c))));
    if (value.empty()) throw InputError(fmt::format("{}: empty", what));
    return std::string(value);
}

std::string time_limit(double seconds) {
    long long total = std::max(60LL, static_cast<long long>(std::ceil(seconds)));
    const long long days = total / 86400;
    total %= 86400;
    const auto hms = fmt::format("{:02}:{:02}:{:02}", total / 3600, (total % 3600) / 60, total % 60);
    return days > 0 ? fmt::format("{}-{}", days, hms) : hms;
}

std::string job_name(std::string_view campaign, int trial, int attempt) {
    std::string name = fmt::format("attune-{}-t{}.{}", campaign, trial, attempt);
    for (char& c : name)
        if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '.' && c != '_' && c != '-') c = '_';
    return name;
}

std::map<std::string, std::string> recipe_environment(const recipe::Document& recipe, const std::vector<std::string>& sections) {
    std::map<std::string, std::string> env;
    for (const auto& section : sections) {
        const std::string prefix = section + ".";
        for (const auto& leaf : recipe.leaves())
            if (leaf.path.starts_with(prefix) && leaf.path.find_first_of(".[", prefix.size()) == std::string::npos &&
                !leaf.value.is_null())
                env[leaf.path.substr(prefix.size())] = leaf.value.to_string();
    }
    return env;
}

std::string render_script(const cluster::Cluster& cluster, const JobSpec& spec) {
    std::ostringstream s;
    s << "#!/bin/bash\n";
    s << "# Rendered by attune for one trial attempt; submitted with `sbatch --parsable` (docs/backends.md).\n";
    const auto directive = [&](std::string_view flag, std::string_view value, std::string_view what) {
        s << "#SBATCH --" << flag << "=" << directive_value(value, what) << "\n";
    };
    directive("job-name", spec.job_name, "job name");
    directive("nodes", std::to_string(spec.nodes), "nodes");
    directive("ntasks-per-node", "1", "tasks per node");
    if (spec.gpus_per_node > 0) {
        if (cluster.gpus_flag == "gres") directive("gres", fmt::format("gpu:{}", spec.gpus_per_node), "gres");
        else directive("gpus-per-node", std::to_string(spec.gpus_per_node), "gpus per node");
    }
    if (!cluster.partition.empty()) directive("partition", cluster.partition, "cluster partition");
    if (!cluster.account.empty()) directive("account", cluster.account, "cluster account");
    if (!cluster.qos.empty()) directive("qos", cluster.qos, "cluster qos");
    if (!cluster.reservation.empty()) directive("reservation", cluster.reservation, "cluster reservation");
    if (!cluster.constraint.empty()) directive("constraint", cluster.constraint, "cluster constraint");
    if (cluster.exclusive) s << "#SBATCH --exclusive\n";
    if (spec.time_limit_s > 0) directive("time", time_limit(spec.time_limit_s), "time limit");
    else if (!cluster.time_limit.empty()) directive("time", cluster.time_limit, "cluster time_limit");
    directive("output", spec.output.string(), "job output path (the campaign folder)");
    directive("error", spec.error.string(), "job error path (the campaign folder)");
    // attune decides what a node failure means (retry once, by skills/rules/search.yaml); a job
    // Slurm requeued by itself would run twice under one attempt.
    s << "#SBATCH --no-requeue\n";
    s << "\nset -u\n";
    std::map<std::string, std::string> env = cluster.env;
    for (const auto& [name, value] : spec.env) env[name] = value;
    for (const auto& [name, value] : env) {
        if (!util::valid_variable_name(name))
            throw InputError(fmt::format("environment variable '{}': not a valid name ([A-Za-z_][A-Za-z0-9_]*)", name));
        s << "export " << name << "=" << shell_quote(value, "environment variable " + name) << "\n";
    }
    s << "\nexec srun";
    if (!cluster.container_image.empty()) s << " --container-image=" << shell_quote(cluster.container_image, "cluster container_image");
    if (!cluster.container_mounts.empty()) s << " --container-mounts=" << shell_quote(cluster.container_mounts, "cluster container_mounts");
    for (const auto& word : spec.command) s << " " << shell_quote(word, "training command");
    s << "\n";
    return s.str();
}

std::string normalize_state(std::string_view state) {
    state = util::trim(state);
    const auto end = state.find_first_of(" +");
    return std::string(state.substr(0, end));
}

bool is_final(std::string_view state) {
    static const std::array<std::string_view, 10> finals = {"COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                                                            "OUT_OF_MEMORY", "CANCELLED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT"};
    return std::find(finals.begin(), finals.end(), normalize_state(state)) != finals.end();
}

std::string status_of_state(std::string_view raw) {
    const std::string state = normalize_state(raw);
    if (state == "COMPLETED") return "";
    if (state == "TIMEOUT" || state == "DEADLINE") return "time-limit";
    if (state == "NODE_FAIL" || state == "BOOT_FAIL") return "node-failure";
    if (state == "PREEMPTED") return "preempted";
    if (state == "OUT_OF_MEMORY") return "oom";
    if (state == "CANCELLED") return "hang";  // someone stopped it: read as a hung job, as diagnose reads CANCELLED AT
    return "crash";
}

std::optional<int> gpus_in_tres(std::string_view tres) {
    for (const auto& item : util::split(tres, ',')) {
        if (!item.starts_with("gres/gpu")) continue;
        const auto eq = item.find('=');
        if (eq == std::string::npos) continue;
        const std::string_view kind(item.data() + 8, eq - 8);  // "" or ":h100"
        if (!kind.empty() && kind.front() != ':') continue;
        if (const auto n = util::parse_number(std::string_view(item).substr(eq + 1))) return static_cast<int>(*n);
    }
    return std::nullopt;
}

std::optional<Accounting> parse_sacct(std::string_view output, std::string_view job_id) {
    std::istringstream lines{std::string(output)};
    std::string line;
    while (std::getline(lines, line)) {
        const auto fields = util::split(line, '|');
        if (fields.size() < 5 || util::trim(fields[0]) != job_id) continue;
        Accounting a;
        a.state = normalize_state(fields[1]);
        a.exit_code = std::string(util::trim(fields[2]));
        a.elapsed_s = util::parse_number(util::trim(fields[3])).value_or(0);
        a.gpus = gpus_in_tres(util::trim(fields[4]));
        if (fields.size() >= 7) {
            const auto submit = parse_timestamp(util::trim(fields[5]));
            const auto start = parse_timestamp(util::trim(fields[6]));
            if (submit && start && *start >= *submit) a.queue_wait_s = double(*start - *submit);
        }
        return a;
    }
    return std::nullopt;
}

std::map<std::string, std::string> parse_scontrol(std::string_view output) {
    std::map<std::string, std::string> out;
    std::istringstream words{std::string(output)};
    std::string word;
    while (words >> word) {
        const auto eq = word.find('=');
        if (eq != std::string::npos && eq > 0) out.emplace(word.substr(0, eq), word.substr(eq + 1));
    }
    return out;
}

}  // namespace attune::launch::slurm
