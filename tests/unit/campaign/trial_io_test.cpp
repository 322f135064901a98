// The layout the diagnosis rules read for a trial, as the campaign and `attune diagnose` build it.
#include <attune/campaign/trial_io.hpp>
#include <attune/gate/adapter.hpp>

#include <gtest/gtest.h>

namespace attune::campaign {
namespace {

sim::SimInputs inputs_of(const std::string& example) {
    const auto loaded = gate::load_recipe(std::string(ATTUNE_SOURCE_DIR) + "/examples/recipes/" + example, gate::default_rules());
    return sim::from_recipe(loaded.document, *loaded.adapter, cluster::default_cluster());
}

TEST(DiagnosisLayout, NamesEveryRecomputeKindTheSimulatorKnows) {
    auto in = inputs_of("nemo-llama3-8b-h100.yaml");
    const std::pair<sim::Recompute, const char*> kinds[] = {{sim::Recompute::none, "none"},
                                                            {sim::Recompute::selective, "selective"},
                                                            {sim::Recompute::full, "full"},
                                                            {sim::Recompute::saved_ops, "selective"}};
    for (const auto& [kind, name] : kinds) {
        in.layout.recompute = kind;
        EXPECT_EQ(diagnosis_layout(in).recompute, name) << static_cast<int>(kind);
    }
}

TEST(DiagnosisLayout, MfuIsAgainstThePeakOfThePrecisionTheGemmsRunIn) {
    auto in = inputs_of("nemo-llama3-8b-h100.yaml");
    in.layout.precision = sim::Precision::bf16;
    EXPECT_DOUBLE_EQ(diagnosis_layout(in).peak_tflops.value_or(0), in.hardware.bf16_tflops);
    in.layout.precision = sim::Precision::fp8;
    EXPECT_DOUBLE_EQ(diagnosis_layout(in).peak_tflops.value_or(0), in.hardware.fp8_tflops);
}

}  // namespace
}  // namespace attune::campaign
