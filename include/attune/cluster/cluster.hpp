#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attune::cluster {

/// Where and how trials run: the GPU type, the machine shape, and what the Slurm backend submits.
/// Mirrors a cluster file (examples/clusters/*.yaml); every field is documented in docs/clusters.md.
struct Cluster {
    std::string name = "default";            ///< shown in reports
    std::string gpu = "h100";                ///< h100 | h200 | b200
    int nodes = 8;                           ///< nodes available to one job
    int gpus_per_node = 8;
    std::optional<double> network_gbps_per_gpu;  ///< inter-node bandwidth per GPU, Gbit/s; the GPU's default when absent
    // Slurm submission (ignored by the sim and local backends).
    std::string partition;
    std::string account;
    std::string qos;
    std::string reservation;
    std::string constraint;
    bool exclusive = true;
    std::string time_limit;                  ///< a trial's default time limit, Slurm format ("00:30:00")
    std::optional<double> time_limit_s;      ///< the same in seconds; unset when the file gives none
    std::string container_image;             ///< pyxis/enroot --container-image
    std::string container_mounts;            ///< pyxis/enroot --container-mounts
    std::string gpus_flag = "gpus-per-node"; ///< gpus-per-node | gres
    /// The training command's argv: a template with {recipe}, {steps} and {overrides} (see
    /// launch_word_problem), or a prefix to which the family's launch arguments are appended.
    std::vector<std::string> launcher;
    std::map<std::string, std::string> env;  ///< environment every trial gets
};

/// The placeholders of a launch template: `{recipe}` (the trial recipe's absolute path) and
/// `{steps}` (the optimisation steps the trial runs) inside any word, `{overrides}` (one
/// `key=value` word per key the trial changes from the original) as a word of its own. Empty when
/// `word` uses them so, else what is wrong with it.
std::string launch_word_problem(std::string_view word);
/// Whether a word holds any placeholder.
bool has_placeholder(std::string_view word);

/// Seconds of a Slurm time (`MM`, `MM:SS`, `HH:MM:SS`, `D-HH`, `D-HH:MM`, `D-HH:MM:SS`); nullopt when
/// it is not one (`UNLIMITED`, garbage).
std::optional<double> slurm_time_seconds(std::string_view text);

/// The built-in default: 8 nodes x 8 H100 SXM.
Cluster default_cluster();

/// Loads a cluster file. Throws InputError with `path:line: what was expected` on bad input.
Cluster load_cluster(const std::filesystem::path& path);

}  // namespace attune::cluster
