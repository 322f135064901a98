// The hardware catalogue: data/hardware.yaml (the models' is gate/models.yaml).

#include <attune/core/paths.hpp>
#include <attune/sim/model.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/strings.hpp>

#include <cmath>

namespace attune::sim {
namespace {

double positive(const util::DataFile& file, const YAML::Node& gpu, const char* key) {
    if (!gpu[key]) file.fail(gpu, std::string("a GPU needs '") + key + "'");
    const double value = file.number(gpu[key], key);
    if (!(value > 0)) file.fail(gpu[key], std::string("'") + key + "' must be above 0");
    return value;
}

}  // namespace

std::vector<Hardware> load_hardware(const std::filesystem::path& path) {
    const util::DataFile file(path);
    file.expect_fields(file.root(), {"gpus"});
    const auto gpus = file.root()["gpus"];
    if (!gpus || !gpus.IsSequence()) file.fail(file.root(), "'gpus' must be a list of GPUs");
    std::vector<Hardware> out;
    for (const auto& gpu : gpus) {
        file.expect_fields(gpu, {"name", "source", "bf16_tflops", "fp8_tflops", "hbm_gib", "hbm_tbps", "nvlink_gbps",
                                 "nvlink_domain", "network_gbps", "flash_attention_efficiency"});
        Hardware h;
        h.name = util::to_lower(file.string(gpu["name"], "name"));
        (void)file.string(gpu["source"], "source");  // provenance, for the reader of the file
        h.bf16_tflops = positive(file, gpu, "bf16_tflops");
        h.fp8_tflops = positive(file, gpu, "fp8_tflops");
        h.hbm_gib = positive(file, gpu, "hbm_gib");
        h.hbm_tbps = positive(file, gpu, "hbm_tbps");
        h.nvlink_gbps = positive(file, gpu, "nvlink_gbps");
        if (!gpu["nvlink_domain"]) file.fail(gpu, "a GPU needs 'nvlink_domain' (node, or the GPUs one domain joins)");
        if (file.string(gpu["nvlink_domain"], "nvlink_domain") != "node") {
            const double domain = file.number(gpu["nvlink_domain"], "nvlink_domain (node, or a number of GPUs)");
            if (domain < 2 || domain != std::floor(domain)) file.fail(gpu["nvlink_domain"], "'nvlink_domain' must be node or a whole number of GPUs");
            h.nvlink_domain = int(domain);
        }
        h.network_gbps = positive(file, gpu, "network_gbps");
        h.flash_attention_efficiency = positive(file, gpu, "flash_attention_efficiency");
        for (const auto& known : out)
            if (known.name == h.name) file.fail(gpu["name"], "GPU '" + h.name + "' is listed twice");
        out.push_back(std::move(h));
    }
    return out;
}

namespace {

const std::vector<Hardware>& catalogue() {
    static const std::vector<Hardware> gpus = load_hardware(data_dir() / "data" / "hardware.yaml");
    return gpus;
}

}  // namespace

std::optional<Hardware> find_hardware(std::string_view name) {
    const std::string lowered = util::to_lower(util::trim(name));
    for (const auto& hardware : catalogue())
        if (lowered == hardware.name) return hardware;
    for (const auto& hardware : catalogue())
        if (lowered.starts_with(hardware.name)) return hardware;
    return std::nullopt;
}

std::vector<std::string> hardware_names() {
    std::vector<std::string> names;
    for (const auto& hardware : catalogue()) names.push_back(hardware.name);
    return names;
}

std::string known_gpus_hint(std::string_view gpu) {
    const auto names = hardware_names();
    const auto suggestion = util::closest_match(gpu, names);
    return suggestion ? "did you mean '" + *suggestion + "'?" : "it knows " + util::join(names, ", ");
}

}  // namespace attune::sim
