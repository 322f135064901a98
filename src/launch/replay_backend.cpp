#include <attune/launch/backend.hpp>
#include <attune/util/files.hpp>

#include <fmt/format.h>

namespace attune::launch {

namespace {

class ReplayBackend final : public Backend {
public:
    explicit ReplayBackend(std::map<std::pair<int, int>, Outcome> recorded) : m_recorded(std::move(recorded)) {}

    std::string name() const override { return "replay"; }

    Submission submit(const gate::GatedTrial&, const TrialPlan& plan) override {
        return {fmt::format("replay-{}.{}", plan.trial, plan.attempt)};
    }

    Outcome wait(const gate::GatedTrial&, const TrialPlan& plan, const Submission&) override {
        const auto it = m_recorded.find({plan.trial, plan.attempt});
        if (it == m_recorded.end()) {
            const auto log = plan.dir / fmt::format("attempt-{}.log", plan.attempt);
            util::write_file_atomically(log, fmt::format("attune replay: the recorded campaign never ran trial {} attempt {}\n",
                                                         plan.trial, plan.attempt));
            return {.logs = {log}, .exit_code = 1, .state = "FAILED", .elapsed_s = 0, .gpus = 0, .gpu_seconds = 0,
                    .charged_from = "not recorded"};
        }
        Outcome outcome = it->second;
        for (auto& log : outcome.logs) {
            const auto copy = plan.dir / log.filename();
            util::write_file_atomically(copy, util::read_text_file(log, 1u << 30));
            log = copy;
        }
        return outcome;
    }

    void cancel(const Submission&) override {}

private:
    std::map<std::pair<int, int>, Outcome> m_recorded;
};

}  // namespace

std::unique_ptr<Backend> make_replay_backend(std::map<std::pair<int, int>, Outcome> recorded) {
    return std::make_unique<ReplayBackend>(std::move(recorded));
}

}  // namespace attune::launch
