// The built-in hardware catalogue (the models' is gate/models.yaml). Facts: NVIDIA's H100, H200 and
// B200 datasheets (dense peaks: half the datasheets' sparse figures), the DGX B200 spec and AWS's EC2
// accelerated-computing instance specifications.

#include <attune/sim/model.hpp>
#include <attune/util/strings.hpp>

#include <array>
#include <string>

namespace attune::sim {
namespace {

// Usable HBM: nvidia-smi totals (H100 81559 MiB, H200 143771 MiB; AWS p6-b200 179 GiB).
// h100_500w: Meta's Grand Teton H100 (pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md):
// the same GH100 die with 96 GB HBM2e at 2.4 TB/s and a 500 W cap. Under the cap, dense GEMMs hold about 1.6 GHz instead of
// the 700 W part's 1.98 GHz boost (the 350 W H100 PCIe is rated 756 TF BF16 at a similar clock with
// fewer SMs), so its sustained peaks are taken as 1.6/1.98 of the SXM part's.
// Fused attention (forward + backward, causal) on Hopper: the cuDNN / FlashAttention-2 kernels that
// Megatron, NeMo and PyTorch SDPA run approach about 350 TF/s on H100 (the backward pass, at about 30 %
// of peak, dominates); FlashAttention-3's warp-specialised kernels are faster but not what these stacks
// ran. Blackwell's cuDNN attention (tcgen05, tensor memory) keeps a larger share of a larger peak.
constexpr std::array k_hardware{
    Hardware{"h100", 989.4, 1978.9, 79.6, 3.35, 900, 50, 0.36},
    Hardware{"h100_500w", 800, 1600, 94.0, 2.4, 900, 50, 0.36},
    Hardware{"h200", 989.4, 1978.9, 140.4, 4.8, 900, 50, 0.36},
    Hardware{"b200", 2250, 4500, 179, 8.0, 1800, 50, 0.42},
};

}  // namespace

std::optional<Hardware> find_hardware(std::string_view name) {
    const std::string lowered = util::to_lower(util::trim(name));
    for (const auto& hardware : k_hardware) {
        if (lowered == hardware.name) return hardware;
    }
    for (const auto& hardware : k_hardware) {
        if (lowered.starts_with(std::string(hardware.name))) return hardware;
    }
    return std::nullopt;
}

}  // namespace attune::sim
