#include <attune/diagnose/parse.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/sim/world.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <unistd.h>

namespace attune::sim {
namespace {

struct Case {
    Hardware hw = *find_hardware("h100");
    ModelShape model = [] {
        auto m = model::Catalogue::shipped().find("llama3_8b")->shape;
        m.seq_len = 8192;
        return m;
    }();
    Layout layout = [] {
        Layout l;
        l.tp = 2, l.gbs = 64, l.sequence_parallel = true;
        return l;
    }();
};

TEST(SimWorld, SameSeedGivesTheSameMeasurementAndNoiseStaysSmall) {
    const Case c;
    const World a{7}, b{7};
    const auto x = a.measure(c.hw, c.model, c.layout, 1, 5);
    EXPECT_DOUBLE_EQ(x.step_time_s, b.measure(c.hw, c.model, c.layout, 1, 5).step_time_s);
    const auto quiet = a.measure(c.hw, c.model, c.layout, 1, 5, false);
    EXPECT_NEAR(x.step_time_s / quiet.step_time_s, 1.0, 0.031);
}

TEST(SimWorld, WorldsDifferFromTheNominalModel) {
    const Case c;
    const double nominal = estimate(c.hw, c.model, c.layout).step_time_s;
    EXPECT_NE(World{1}.measure(c.hw, c.model, c.layout, 0, 0, false).step_time_s, nominal);
}

TEST(SimTrain, PrintsMegatronIterationLinesAndSucceeds) {
    Case c;
    std::ostringstream out;
    TrainRun run;
    run.steps = 3;
    EXPECT_EQ(train(World{}, c.hw, c.model, c.layout, Objective{}, run, out).exit_code, 0);
    const std::regex line{R"( \[[-0-9: ]+\] iteration +3/ +3 \| consumed samples: +192 \| elapsed time per iteration \(ms\): [0-9.]+ \| throughput per GPU \(TFLOP/s/GPU\): [0-9.]+ \| learning rate: [0-9.E+-]+ \| global batch size: +64 \| lm loss: [0-9.E+-]+ \|)"};
    EXPECT_TRUE(std::regex_search(out.str(), line)) << out.str();
}

TEST(SimTrain, PrintsTorchtitansMetricsLinesThatDiagnoseReadsAsTorchtitan) {
    Case c;
    c.layout.sharding = Sharding::fsdp, c.layout.megatron_core = false;
    std::ostringstream out;
    TrainRun run;
    run.steps = 4;
    run.dialect = Dialect::torchtitan;
    EXPECT_EQ(train(World{}, c.hw, c.model, c.layout, Objective{}, run, out).exit_code, 0);
    const std::regex line{R"(\[rank0\]:\[titan\] [-0-9: ,]+ - root - INFO - step:  4  loss: +[0-9.]+  grad_norm: +[0-9.]+  memory: [0-9.]+GiB\([0-9.]+%\)  tps: [0-9]+  tflops: [0-9.]+  mfu: [0-9.]+%)"};
    EXPECT_TRUE(std::regex_search(out.str(), line)) << out.str();
    const auto path = std::filesystem::temp_directory_path() / ("attune-titan-" + std::to_string(::getpid()) + ".log");
    std::ofstream(path) << out.str();
    const auto metrics = diagnose::parse_logs({path}, std::nullopt);
    std::filesystem::remove(path);
    EXPECT_EQ(metrics.dialect, "torchtitan");
    EXPECT_EQ(metrics.last_step, 4);
    EXPECT_EQ(metrics.status, diagnose::Status::ok);
}

TEST(SimTrain, ARecipeThatDoesNotFitPrintsPyTorchsOomAndFails) {
    Case c;
    c.layout.tp = 1, c.layout.mbs = 8, c.layout.gbs = 64, c.layout.sequence_parallel = false;
    c.layout.sharding = Sharding::none;
    std::ostringstream out;
    EXPECT_EQ(train(World{}, c.hw, c.model, c.layout, Objective{}, TrainRun{}, out).exit_code, 1);
    EXPECT_NE(out.str().find("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"), std::string::npos);
}

// The first run id whose run of `steps` steps meets `fault`.
std::uint64_t run_meeting(const World& world, Fault fault, int steps) {
    for (std::uint64_t run = 0;; ++run)
        for (int step = 1; step <= steps; ++step) {
            const auto drawn = world.fault(run, std::uint64_t(step));
            if (drawn == fault) return run;
            if (drawn != Fault::none) break;
        }
}

// What `attune diagnose` reads in the log of a simulated run.
diagnose::Status status_of_log(const std::string& log) {
    const auto path = std::filesystem::temp_directory_path() / ("attune-sim-fault-" + std::to_string(::getpid()) + ".log");
    std::ofstream(path) << log;
    const auto status = diagnose::parse_logs({path}, std::nullopt).status;
    std::filesystem::remove(path);
    return status;
}

TEST(SimTrain, ASimulatedFaultReadsAsWhatItIs) {
    const Case c;
    const World world;
    for (const auto& [fault, status] : {std::pair{Fault::node_failure, diagnose::Status::node_failure},
                                        std::pair{Fault::nccl_timeout, diagnose::Status::nccl_timeout}}) {
        TrainRun run;
        run.steps = 20;
        run.run_id = run_meeting(world, fault, run.steps);
        std::ostringstream out;
        EXPECT_EQ(train(world, c.hw, c.model, c.layout, Objective{}, run, out).exit_code, 1);
        EXPECT_EQ(status_of_log(out.str()), status) << out.str();
    }
}

TEST(SimTrain, SameObjectiveSameLossesAndALearningRateChangeShows) {
    const Case c;
    const Objective base;
    Objective hot = base;
    hot.lr = 3e-3;
    const double tokens = 5e8;
    EXPECT_NEAR(loss_at(c.model, c.layout, base, tokens, 0.3), loss_at(c.model, c.layout, base, tokens, 0.7), 0.02);
    EXPECT_GT(loss_at(c.model, c.layout, hot, tokens, 0.5) - loss_at(c.model, c.layout, base, tokens, 0.5), 0.05);
}

}  // namespace
}  // namespace attune::sim
