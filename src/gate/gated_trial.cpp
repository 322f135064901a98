#include <attune/gate/gated_trial.hpp>

namespace attune::gate {

std::pair<Verdict, std::optional<GatedTrial>> admit(const recipe::Document& original, recipe::Document trial,
                                                    const Adapter& adapter, const Rules& rules, const Policy& policy,
                                                    const cluster::Cluster& cluster, const CheckOptions& options) {
    Verdict verdict = check(original, trial, adapter, rules, policy, cluster, options);
    if (!verdict.allowed) return {std::move(verdict), std::nullopt};
    GatedTrial admitted{std::move(trial), adapter, verdict};
    return {std::move(verdict), std::optional<GatedTrial>{std::move(admitted)}};
}

}  // namespace attune::gate
