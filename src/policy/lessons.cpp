#include <attune/core/error.hpp>
#include <attune/policy/lessons.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace attune::policy {

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> k_recompute_levels = {"none", "selective", "full"};

int positive_int(const util::DataFile& file, const YAML::Node& node, const std::string& what) {
    const double value = file.number(node, what);
    if (value < 0 || std::floor(value) != value) file.fail(node, "'" + what + "' must be a whole number, 0 or more");
    return int(value);
}

LessonLayout read_layout(const util::DataFile& file, const YAML::Node& node) {
    file.expect_fields(node, {"tp", "nvlink_reach", "pp", "vpp", "layers", "cp", "ep", "experts", "micro_batch", "recompute"});
    LessonLayout layout;
    const auto read = [&](const char* key, int& into, int least) {
        if (!node[key]) file.fail(node, fmt::format("layout: '{}' is missing", key));
        into = positive_int(file, node[key], key);
        if (into < least) file.fail(node[key], fmt::format("'{}' must be at least {}", key, least));
    };
    read("tp", layout.tp, 1);
    read("nvlink_reach", layout.nvlink_reach, 1);
    read("pp", layout.pp, 1);
    read("vpp", layout.vpp, 1);
    read("layers", layout.layers, 1);
    read("cp", layout.cp, 1);
    read("ep", layout.ep, 1);
    read("experts", layout.experts, 0);
    read("micro_batch", layout.micro_batch, 1);
    if (!node["recompute"]) file.fail(node, "layout: 'recompute' is missing");
    layout.recompute = k_recompute_levels[file.one_of(node["recompute"], "recompute", k_recompute_levels)];
    return layout;
}

/// The `{lever, key, value, gain}` of an item of `list` (the caller has checked its fields).
LessonFlag read_flag(const util::DataFile& file, const YAML::Node& item, const char* list) {
    for (const char* key : {"lever", "key", "value"})
        if (!item[key]) file.fail(item, fmt::format("{}: '{}' is missing", list, key));
    if (!item["value"].IsScalar()) file.fail(item["value"], "'value' must be a scalar");
    return {file.string(item["lever"], "lever"), file.string(item["key"], "key"), recipe::Value::from_plain(item["value"].Scalar()),
            item["gain"] ? file.number(item["gain"], "gain") : 0.0};
}

std::vector<LessonFlag> read_flags(const util::DataFile& file, const YAML::Node& node) {
    if (!node.IsSequence()) file.fail(node, "'flags' must be a list of {lever, key, value, gain}");
    std::vector<LessonFlag> flags;
    for (const auto& item : node) {
        file.expect_fields(item, {"lever", "key", "value", "gain"});
        flags.push_back(read_flag(file, item, "flags"));
    }
    return flags;
}

std::vector<LessonMiss> read_hurt(const util::DataFile& file, const YAML::Node& node) {
    if (!node.IsSequence()) file.fail(node, "'hurt' must be a list of {lever, key, value, gain, why}");
    std::vector<LessonMiss> hurt;
    for (const auto& item : node) {
        file.expect_fields(item, {"lever", "key", "value", "gain", "why"});
        auto move = read_flag(file, item, "hurt");
        if (!item["why"]) file.fail(item, "hurt: 'why' is missing");
        hurt.push_back({std::move(move), k_miss_reasons[file.one_of(item["why"], "why", k_miss_reasons)]});
    }
    return hurt;
}

/// The YAML between the leading `---` line and the next one.
std::string front_matter_text(const fs::path& file, const std::string& text) {
    if (!text.starts_with("---\n")) throw InputError(file.string() + ":1: a lessons file starts with a '---' front matter block");
    const auto end = text.find("\n---", 3);
    if (end == std::string::npos) throw InputError(file.string() + ":1: the front matter block has no closing '---'");
    return text.substr(4, end - 3);
}

Lesson read_lesson(const util::DataFile& file) {
    const YAML::Node& root = file.root();
    file.expect_fields(root, {"lessons", "model_family", "model", "params_b", "moe", "gpu", "gpus", "framework", "seq_len",
                              "source", "confidence", "layout", "order", "flags", "hurt", "memory_bias", "trials", "gain"});
    if (!root["lessons"] || file.number(root["lessons"], "lessons") != 2)
        file.fail(root, "'lessons: 2' (the format version, skills/lessons/README.md) is missing or another version");
    for (const char* key : {"model_family", "gpu", "framework", "source", "confidence"})
        if (!root[key]) file.fail(root, fmt::format("'{}' is missing", key));
    Lesson lesson;
    lesson.model_family = util::to_lower(file.string(root["model_family"], "model_family"));
    if (root["model"]) lesson.model = file.string(root["model"], "model");
    if (root["params_b"]) lesson.params_b = file.number(root["params_b"], "params_b");
    if (root["moe"]) lesson.moe = file.boolean(root["moe"], "moe");
    lesson.gpu = util::to_lower(file.string(root["gpu"], "gpu"));
    if (root["gpus"]) lesson.gpus = positive_int(file, root["gpus"], "gpus");
    lesson.framework = file.string(root["framework"], "framework");
    if (root["seq_len"]) lesson.seq_len = positive_int(file, root["seq_len"], "seq_len");
    lesson.source = file.string(root["source"], "source");
    lesson.confidence = std::vector<std::string>{"measured", "published"}[file.one_of(root["confidence"], "confidence",
                                                                                      {"measured", "published"})];
    if (root["layout"]) lesson.layout = read_layout(file, root["layout"]);
    if (root["order"]) {
        if (!root["order"].IsSequence()) file.fail(root["order"], "'order' must be a list of layout levers");
        for (const auto& lever : root["order"]) lesson.order.push_back(layout_levers()[file.one_of(lever, "order: lever", layout_levers())]);
    }
    if (root["flags"]) lesson.flags = read_flags(file, root["flags"]);
    if (root["hurt"]) lesson.hurt = read_hurt(file, root["hurt"]);
    if (root["memory_bias"]) lesson.memory_bias = file.number(root["memory_bias"], "memory_bias");
    if (root["trials"]) lesson.trials = positive_int(file, root["trials"], "trials");
    if (root["gain"]) lesson.gain = file.number(root["gain"], "gain");
    if (lesson.layout && lesson.layout->cp > 1 && lesson.seq_len == 0)
        file.fail(root["layout"], "a layout with cp > 1 needs the lesson's 'seq_len' (cp is read against the sequence)");
    return lesson;
}

/// Dense or MoE, and within 4x of the size.
bool same_shape_class(const Lesson& lesson, const LessonQuery& query) {
    return lesson.moe == query.moe && lesson.params_b > 0 && query.params_b > 0 &&
           std::abs(std::log2(lesson.params_b / query.params_b)) <= 2;
}

double log2_ratio(double a, double b) { return a > 0 && b > 0 ? std::abs(std::log2(a / b)) : 0; }

int recompute_level(sim::Recompute r) { return r == sim::Recompute::none ? 0 : r == sim::Recompute::full ? 2 : 1; }

}  // namespace

Lesson load_lesson(const fs::path& file) {
    const std::string text = util::read_text_file(file, 1u << 20);
    const util::DataFile data(file, front_matter_text(file, text), 2);
    Lesson lesson = read_lesson(data);
    lesson.file = file;
    lesson.name = file.stem().string();
    return lesson;
}

std::vector<Lesson> load_lessons(const fs::path& dir) {
    std::error_code error;
    if (!fs::is_directory(dir, error)) throw InputError(fmt::format("--lessons {}: not a folder of lessons files", dir.string()));
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".md" && entry.path().filename() != "README.md") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::vector<Lesson> out;
    for (const auto& file : files) out.push_back(load_lesson(file));
    return out;
}

std::string family_of(const std::string& model_name) {
    const auto slash = model_name.rfind('/');  // `meta-llama/` names the publisher, not the model
    const std::string name = util::to_lower(model_name.substr(slash == std::string::npos ? 0 : slash + 1));
    const auto digit = [&](std::size_t i) { return i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); };
    for (const std::string family : {"llama", "mixtral", "mistral", "qwen", "deepseek", "gemma", "nemotron", "glm", "gpt", "minimax"}) {
        const auto at = name.find(family);
        if (at == std::string::npos) continue;
        std::size_t start = at + family.size();
        if (start < name.size() && (name[start] == '-' || name[start] == '_') && digit(start + 1)) ++start;
        std::size_t end = start;
        while (digit(end)) ++end;
        // A version, not a size: `Llama-3.1-70B` is llama3, `Mixtral-8x7B` is mixtral.
        const bool version = end > start && (end == name.size() || !std::isalpha(static_cast<unsigned char>(name[end])));
        return family + (version ? name.substr(start, end - start) : "");
    }
    return "unknown";
}

LessonQuery lesson_query(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster) {
    LessonQuery query;
    query.family = family_of(adapter.model_name(recipe).value_or(recipe.origin()));
    query.gpu = util::to_lower(cluster.gpu);
    query.framework = adapter.name();
    try {
        const auto in = sim::from_recipe(recipe, adapter, cluster);
        query.moe = in.model.experts > 0;
        query.params_b = sim::total_params(in.model) / 1e9;
        query.gpus = in.layout.nodes * in.layout.gpus_per_node;
    } catch (const InputError&) {
        // No model shape: the family alone matches.
    }
    return query;
}

std::vector<Lesson> matching_lessons(std::vector<Lesson> lessons, const LessonQuery& query) {
    std::erase_if(lessons, [&](const Lesson& l) {
        return !(l.model_family == query.family && query.family != "unknown") && !same_shape_class(l, query);
    });
    const auto rank = [&](const Lesson& l) {
        return std::make_tuple(l.model_family != query.family, l.gpu != query.gpu, l.framework != query.framework,
                               l.confidence != "measured", log2_ratio(l.gpus, query.gpus), l.name);
    };
    std::sort(lessons.begin(), lessons.end(), [&](const Lesson& a, const Lesson& b) { return rank(a) < rank(b); });
    return lessons;
}

std::string front_matter(const Lesson& l) {
    std::string out = "---\nlessons: 2\n";
    out += fmt::format("model_family: {}\nmodel: \"{}\"\nparams_b: {:.1f}\nmoe: {}\n", l.model_family, l.model, l.params_b,
                       l.moe ? "true" : "false");
    out += fmt::format("gpu: {}\ngpus: {}\nframework: {}\nseq_len: {}\n", l.gpu, l.gpus, l.framework, l.seq_len);
    out += fmt::format("source: \"{}\"\nconfidence: {}\n", l.source, l.confidence);
    if (const auto& y = l.layout)
        out += fmt::format("layout: {{tp: {}, nvlink_reach: {}, pp: {}, vpp: {}, layers: {}, cp: {}, ep: {}, experts: {}, "
                           "micro_batch: {}, recompute: {}}}\n",
                           y->tp, y->nvlink_reach, y->pp, y->vpp, y->layers, y->cp, y->ep, y->experts, y->micro_batch,
                           y->recompute);
    if (!l.order.empty()) out += fmt::format("order: [{}]\n", fmt::join(l.order, ", "));
    if (!l.flags.empty()) out += "flags:\n";
    for (const auto& f : l.flags)
        out += fmt::format("  - {{lever: {}, key: {}, value: {}, gain: {:.3f}}}\n", f.lever, f.key, f.value.to_yaml(), f.gain);
    if (!l.hurt.empty()) out += "hurt:\n";
    for (const auto& [f, why] : l.hurt)
        out += fmt::format("  - {{lever: {}, key: {}, value: {}, gain: {:.3f}, why: {}}}\n", f.lever, f.key, f.value.to_yaml(),
                           f.gain, why);
    if (l.memory_bias) out += fmt::format("memory_bias: {:.3f}\n", *l.memory_bias);
    out += fmt::format("trials: {}\ngain: {:.3f}\n---\n", l.trials, l.gain);
    return out;
}

const std::vector<std::string>& layout_levers() {
    static const std::vector<std::string> levers = [] {
        std::vector<std::string> names;
        for (const Field f : k_layout_fields) names.emplace_back(lever_name(f));
        return names;
    }();
    return levers;
}

LessonLayout layout_at(const ConfigSpace& space, const Point& point, int nvlink_reach) {
    const auto& in = space.inputs();
    const auto value = [&](Field f, int fallback) { return option_of(space, point, f).value_or(fallback); };
    LessonLayout out;
    out.tp = value(Field::tp, in.layout.tp);
    out.nvlink_reach = nvlink_reach;
    out.pp = value(Field::pp, in.layout.pp);
    out.vpp = value(Field::vpp, in.layout.vpp);
    out.layers = in.model.layers;
    out.cp = value(Field::cp, in.layout.cp);
    out.ep = value(Field::ep, in.layout.ep);
    out.experts = in.model.experts;
    out.micro_batch = value(Field::mbs, in.layout.mbs);
    out.recompute = k_recompute_levels[recompute_level(sim::Recompute(value(Field::recompute, int(in.layout.recompute))))];
    return out;
}

double lesson_distance(const LessonLayout& lesson, int lesson_seq_len, const ConfigSpace& space, const Point& point) {
    const auto& in = space.inputs();
    const LessonLayout here = layout_at(space, point, sim::nvlink_reach(in.hardware, in.layout.gpus_per_node));
    double d = log2_ratio(double(here.tp) / here.nvlink_reach, double(lesson.tp) / lesson.nvlink_reach);
    d += log2_ratio(double(here.layers) / here.pp, double(lesson.layers) / lesson.pp);
    d += log2_ratio(here.vpp, lesson.vpp);
    d += lesson_seq_len > 0 ? log2_ratio(double(in.model.seq_len) / here.cp, double(lesson_seq_len) / lesson.cp)
                            : log2_ratio(here.cp, lesson.cp);
    if (here.experts > 0 && lesson.experts > 0) d += log2_ratio(double(here.experts) / here.ep, double(lesson.experts) / lesson.ep);
    d += log2_ratio(here.micro_batch, lesson.micro_batch);
    const auto level = [](const std::string& r) { return double(std::find(k_recompute_levels.begin(), k_recompute_levels.end(), r) - k_recompute_levels.begin()); };
    return d + 2 * std::abs(level(here.recompute) - level(lesson.recompute));
}

}  // namespace attune::policy
