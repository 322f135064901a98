#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
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
    std::string container_image;             ///< pyxis/enroot --container-image
    std::string container_mounts;            ///< pyxis/enroot --container-mounts
    std::string gpus_flag = "gpus-per-node"; ///< gpus-per-node | gres
    std::vector<std::string> launcher;       ///< the training command's argv prefix (before the recipe path)
    std::map<std::string, std::string> env;  ///< environment every trial gets
};

/// The GPU types attune knows.
const std::vector<std::string>& known_gpus();

/// The built-in default: 8 nodes x 8 H100 SXM.
Cluster default_cluster();

/// Loads a cluster file. Throws InputError with `path:line: what was expected` on bad input.
Cluster load_cluster(const std::filesystem::path& path);

}  // namespace attune::cluster
