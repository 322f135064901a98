#include <attune/core/error.hpp>
#include <attune/diagnose/diagnosis.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace attune::diagnose {
namespace {

RunMetrics ok_run(double tflops, double peak_gib) {
    RunMetrics metrics;
    metrics.status = Status::ok;
    metrics.steady.tflops_per_gpu = tflops;
    metrics.steady.noise = 0.01;
    metrics.peak_memory_gib = peak_gib;
    return metrics;
}

RuleSet shipped_rules() {
    return load_rules(std::filesystem::path(ATTUNE_SOURCE_DIR) / "skills" / "diagnosis.yaml");
}

TEST(DiagnoseRules, OomIsMemoryBound) {
    RunMetrics metrics;
    metrics.status = Status::oom;
    EXPECT_EQ(diagnose(metrics, {}, shipped_rules()).bottleneck, "memory-bound");
}

TEST(DiagnoseRules, TensorParallelAcrossNodesIsCommunicationBound) {
    Layout layout;
    layout.tp = 16;
    layout.gpus_per_node = 8;
    const auto diagnosis = diagnose(ok_run(300, 40), layout, shipped_rules());
    EXPECT_EQ(diagnosis.bottleneck, "communication-bound");
    EXPECT_EQ(diagnosis.rule, "tensor-parallel-across-nodes");
}

TEST(DiagnoseRules, LargePipelineBubbleIsNamed) {
    Layout layout;
    layout.pp = 8;
    layout.num_microbatches = 8;
    EXPECT_EQ(diagnose(ok_run(300, 40), layout, shipped_rules()).bottleneck, "pipeline-bubble");
}

TEST(DiagnoseRules, HighMfuIsComputeBoundWithMemoryHeadroom) {
    Layout layout;
    layout.peak_tflops = 989;
    layout.gpu_memory_gib = 80;
    layout.recompute = "full";
    const auto diagnosis = diagnose(ok_run(480, 40), layout, shipped_rules());
    EXPECT_EQ(diagnosis.bottleneck, "compute-bound");
    EXPECT_EQ(diagnosis.headroom.size(), 2u);
    EXPECT_NEAR(diagnosis.facts.at("memory_fraction"), 0.5, 1e-9);
}

TEST(DiagnoseRules, MissingFactsNameNoBottleneck) {
    EXPECT_EQ(diagnose(ok_run(300, 40), {}, shipped_rules()).bottleneck, "unknown");
}

TEST(DiagnoseRules, MalformedConditionIsAnInputError) {
    const auto path = std::filesystem::temp_directory_path() / "attune-diag-bad-rules.yaml";
    std::ofstream(path) << "rules:\n  - name: broken\n    bottleneck: x\n    when: [\"mfu is high\"]\n";
    EXPECT_THROW(load_rules(path), InputError);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace attune::diagnose
