#pragma once
// Lessons (skills/lessons/README.md): what one campaign, or one published layout, taught about a
// model family on a GPU, with a front matter a program reads. The rules policy proposes first the
// moves a matching lesson points to; `attune lessons` writes them from a finished campaign.

#include <attune/policy/config_space.hpp>
#include <attune/recipe/value.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace attune::policy {

/// A final layout in terms that transfer between sibling recipes: tp against the GPUs in NVLink
/// reach, pp and vpp against the layers, cp against the sequence, ep against the experts.
struct LessonLayout {
    int tp = 1;
    int nvlink_reach = 8;  ///< GPUs in NVLink reach of each other where it was measured
    int pp = 1;
    int vpp = 1;
    int layers = 0;
    int cp = 1;
    int ep = 1;
    int experts = 0;
    int micro_batch = 1;
    std::string recompute = "none";  ///< none | selective | full
};

/// A flag or fusion that helped: `key` (its path's last part) of `lever` set to `value`.
struct LessonFlag {
    std::string lever;
    std::string key;
    recipe::Value value;
    double gain = 0;  ///< what it measured over the incumbent of its time, minus 1
};

/// Why a flag move was not kept.
inline const std::vector<std::string> k_miss_reasons{"reverted", "out-of-memory", "failed"};

/// A flag move the campaign measured and did not keep: reverted (`move.gain` is what it measured), or
/// its run failed.
struct LessonMiss {
    LessonFlag move;
    std::string why;  ///< one of k_miss_reasons
};

struct Lesson {
    std::filesystem::path file;
    std::string name;  ///< the file's stem: what the journal and the report call it
    std::string model_family;
    std::string model;
    double params_b = 0;
    bool moe = false;
    std::string gpu;  ///< as cluster files name it (h100, h200, b200)
    int gpus = 0;
    std::string framework;
    int seq_len = 0;
    std::string source;
    std::string confidence;  ///< measured (a campaign's trials) | published
    std::optional<LessonLayout> layout;
    /// The layout levers in the order the campaign first moved them (its path through layouts that fit).
    std::vector<std::string> order;
    std::vector<LessonFlag> flags;  ///< in the order they were accepted
    /// Flag moves it measured and did not keep, in trial order: the rules propose them after every other move.
    std::vector<LessonMiss> hurt;
    /// The largest measured peak memory over the estimate on that cluster (campaigns only).
    std::optional<double> memory_bias;
    int trials = 0;   ///< the campaign's trials (0: a published layout)
    double gain = 0;  ///< the campaign's best over its baseline, minus 1
};

/// Reads a lessons file's front matter; every key is read or refused (InputError, `file:line`).
Lesson load_lesson(const std::filesystem::path& file);

/// Every lessons file (`*.md` but README.md) in `dir`, by name. Throws InputError when `dir` is not a folder.
std::vector<Lesson> load_lessons(const std::filesystem::path& dir);

/// `llama3` from `meta-llama/Meta-Llama-3-8B`: the first known family name in a model's name, with
/// the version digits that follow it; `unknown` when none.
std::string family_of(const std::string& model_name);

/// What a recipe is matched on.
struct LessonQuery {
    std::string family;
    bool moe = false;
    double params_b = 0;
    std::string gpu;
    int gpus = 0;
    std::string framework;
};

/// The query of a recipe: its model's family and size, the cluster's GPU, the family's adapter.
LessonQuery lesson_query(const recipe::Document& recipe, const gate::Adapter& adapter, const cluster::Cluster& cluster);

/// The lessons that apply to `query`, best first: the same model family, or the same shape class
/// (dense or MoE, within 4x of the size); then the same GPU, the same framework, measured before
/// published, the nearest number of GPUs.
std::vector<Lesson> matching_lessons(std::vector<Lesson> lessons, const LessonQuery& query);

/// The lesson's front matter as `attune lessons` writes it, `---` lines included.
std::string front_matter(const Lesson& lesson);

/// How far a point's layout is from the lesson's, in the terms that transfer (log2 steps; a level of
/// recompute counts two).
double lesson_distance(const LessonLayout& lesson, int lesson_seq_len, const ConfigSpace& space, const Point& point);

/// The layout levers a lesson's `order` may name: the lever names of k_layout_fields.
const std::vector<std::string>& layout_levers();

/// The lesson's layout read back at a point of `space` (tp, pp, ... as the point has them).
LessonLayout layout_at(const ConfigSpace& space, const Point& point, int nvlink_reach);

}  // namespace attune::policy
