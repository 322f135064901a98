#include <attune/cluster/cluster.hpp>
#include <attune/core/error.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <functional>

namespace attune::cluster {

namespace {

struct FileContext {
    std::string path;
    [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
        throw InputError(path + ":" + std::to_string(node.Mark().line + 1) + ": " + what);
    }
};

std::string read_string(const FileContext& file, const YAML::Node& node, const std::string& key) {
    if (!node.IsScalar()) file.fail(node, "'" + key + "' must be a string");
    return node.Scalar();
}

int read_positive_int(const FileContext& file, const YAML::Node& node, const std::string& key) {
    const auto number = node.IsScalar() ? util::parse_number(node.Scalar()) : std::nullopt;
    if (!number || *number < 1 || *number != static_cast<int>(*number) || *number > 100000)
        file.fail(node, "'" + key + "' must be a whole number from 1 to 100000");
    return static_cast<int>(*number);
}

bool read_bool(const FileContext& file, const YAML::Node& node, const std::string& key) {
    const auto text = node.IsScalar() ? util::to_lower(node.Scalar()) : std::string();
    if (text == "true" || text == "yes") return true;
    if (text == "false" || text == "no") return false;
    file.fail(node, "'" + key + "' must be true or false");
}

using FieldReader = std::function<void(Cluster&, const FileContext&, const YAML::Node&, const std::string&)>;

const std::map<std::string, FieldReader>& field_readers() {
    static const std::map<std::string, FieldReader> readers = {
        {"name", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.name = read_string(f, n, k); }},
        {"gpu", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             // Any GPU a real cluster has: the simulator and the estimate need one of data/hardware.yaml,
             // the local and Slurm backends run without (docs/clusters.md).
             c.gpu = util::to_lower(util::trim(read_string(f, n, k)));
             if (c.gpu.empty() || c.gpu.find_first_of(" \t\n") != std::string::npos)
                 f.fail(n, "gpu '" + c.gpu + "': expected one word, such as h100");
         }},
        {"nodes", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.nodes = read_positive_int(f, n, k); }},
        {"gpus_per_node", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.gpus_per_node = read_positive_int(f, n, k); }},
        {"network_gbps_per_gpu", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             const auto number = n.IsScalar() ? util::parse_number(n.Scalar()) : std::nullopt;
             if (!number || *number <= 0) f.fail(n, "'" + k + "' must be a positive number of Gbit/s");
             c.network_gbps_per_gpu = *number;
         }},
        {"partition", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.partition = read_string(f, n, k); }},
        {"account", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.account = read_string(f, n, k); }},
        {"qos", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.qos = read_string(f, n, k); }},
        {"reservation", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.reservation = read_string(f, n, k); }},
        {"constraint", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.constraint = read_string(f, n, k); }},
        {"exclusive", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.exclusive = read_bool(f, n, k); }},
        {"time_limit", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             c.time_limit = read_string(f, n, k);
             c.time_limit_s = slurm_time_seconds(c.time_limit);
             if (c.time_limit == "UNLIMITED" || c.time_limit == "INFINITE") c.time_limit_s.reset();
             else if (!c.time_limit_s || *c.time_limit_s <= 0)
                 f.fail(n, "'time_limit' must be a Slurm time limit: minutes, MM:SS, HH:MM:SS, D-HH[:MM[:SS]] or UNLIMITED");
         }},
        {"container_image", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.container_image = read_string(f, n, k); }},
        {"container_mounts", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) { c.container_mounts = read_string(f, n, k); }},
        {"gpus_flag", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             c.gpus_flag = read_string(f, n, k);
             if (c.gpus_flag != "gpus-per-node" && c.gpus_flag != "gres")
                 f.fail(n, "'gpus_flag' must be gpus-per-node or gres");
         }},
        {"launcher", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             if (!n.IsSequence()) f.fail(n, "'" + k + "' must be a list of arguments");
             for (const auto& item : n) {
                 c.launcher.push_back(read_string(f, item, k));
                 if (const auto problem = launch_word_problem(c.launcher.back()); !problem.empty()) f.fail(item, problem);
             }
         }},
        {"env", [](Cluster& c, const FileContext& f, const YAML::Node& n, const std::string& k) {
             if (!n.IsMap()) f.fail(n, "'" + k + "' must be a mapping of NAME: value");
             for (const auto& item : n) c.env[item.first.Scalar()] = read_string(f, item.second, item.first.Scalar());
         }},
    };
    return readers;
}

}  // namespace

Cluster default_cluster() { return Cluster{}; }

Cluster load_cluster(const std::filesystem::path& path) {
    const FileContext file{path.string()};
    const std::string text = util::read_text_file(path, 1u << 20);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        throw InputError(file.path + ":" + std::to_string(e.mark.line + 1) + ": malformed YAML: " + e.msg);
    }
    if (!root.IsMap()) throw InputError(file.path + ":1: expected a mapping of cluster fields (gpu, nodes, gpus_per_node, ...)");
    Cluster cluster;
    cluster.name = path.stem().string();
    const auto& readers = field_readers();
    for (const auto& item : root) {
        const std::string key = item.first.Scalar();
        const auto reader = readers.find(key);
        if (reader == readers.end()) {
            std::vector<std::string> names;
            for (const auto& [name, unused] : readers) names.push_back(name);
            const auto suggestion = util::closest_match(key, names);
            file.fail(item.first, "unknown field '" + key + "'" +
                                      (suggestion ? "; did you mean '" + *suggestion + "'?" : ""));
        }
        reader->second(cluster, file, item.second, key);
    }
    return cluster;
}

namespace {

constexpr std::array<std::string_view, 3> k_placeholders{"{recipe}", "{steps}", "{overrides}"};

}  // namespace

std::optional<double> slurm_time_seconds(std::string_view text) {
    text = util::trim(text);
    if (text.empty()) return std::nullopt;
    double days = 0;
    if (const auto dash = text.find('-'); dash != std::string_view::npos) {
        const auto d = util::parse_number(text.substr(0, dash));
        if (!d || *d < 0) return std::nullopt;
        days = *d;
        text = text.substr(dash + 1);
        // D-HH, D-HH:MM, D-HH:MM:SS
        const auto parts = util::split(text, ':');
        if (parts.empty() || parts.size() > 3) return std::nullopt;
        std::array<double, 3> hms{0, 0, 0};
        for (std::size_t i = 0; i < parts.size(); ++i) {
            const auto v = util::parse_number(parts[i]);
            if (!v || *v < 0) return std::nullopt;
            hms[i] = *v;
        }
        return days * 86400 + hms[0] * 3600 + hms[1] * 60 + hms[2];
    }
    const auto parts = util::split(text, ':');
    std::vector<double> values;
    for (const auto& part : parts) {
        const auto v = util::parse_number(part);
        if (!v || *v < 0) return std::nullopt;
        values.push_back(*v);
    }
    if (values.size() == 1) return values[0] * 60;                      // MM
    if (values.size() == 2) return values[0] * 60 + values[1];          // MM:SS
    if (values.size() == 3) return values[0] * 3600 + values[1] * 60 + values[2];
    return std::nullopt;
}

std::string launch_word_problem(std::string_view word) {
    for (std::size_t open = word.find('{'); open != std::string_view::npos; open = word.find('{', open + 1)) {
        const auto close = word.find('}', open);
        if (close == std::string_view::npos) return "'" + std::string(word) + "': a '{' with no '}'; expected {recipe}, {steps} or {overrides}";
        const auto name = word.substr(open, close - open + 1);
        if (name == "{overrides}" && word != name)
            return "'" + std::string(word) + "': {overrides} stands for several words, so it must be a word of its own";
        if (std::find(k_placeholders.begin(), k_placeholders.end(), name) == k_placeholders.end())
            return "'" + std::string(word) + "': unknown placeholder " + std::string(name) + "; expected {recipe}, {steps} or {overrides}";
    }
    return {};
}

bool has_placeholder(std::string_view word) {
    return std::any_of(k_placeholders.begin(), k_placeholders.end(),
                       [&](std::string_view name) { return word.find(name) != std::string_view::npos; });
}

}  // namespace attune::cluster
