#pragma once
// The only door to a backend: a trial recipe the gate has judged and allowed. Its constructor is
// private, so a policy (or anything else) cannot launch a recipe the gate did not see.

#include <attune/gate/verdict.hpp>

#include <string>
#include <utility>

namespace attune::gate {

class GatedTrial {
public:
    /// The recipe to run (the candidate plus the trial-only edits the gate allowed).
    [[nodiscard]] const recipe::Document& recipe() const { return m_recipe; }
    [[nodiscard]] const Adapter& adapter() const { return *m_adapter; }
    [[nodiscard]] const Verdict& verdict() const { return m_verdict; }

private:
    GatedTrial(recipe::Document recipe, const Adapter& adapter, Verdict verdict)
        : m_recipe(std::move(recipe)), m_adapter(&adapter), m_verdict(std::move(verdict)) {}
    friend std::pair<Verdict, std::optional<GatedTrial>> admit(const recipe::Document&, recipe::Document,
                                                                const Adapter&, const Rules&, const Policy&,
                                                                const cluster::Cluster&, const CheckOptions&);

    recipe::Document m_recipe;
    const Adapter* m_adapter;
    Verdict m_verdict;
};

/// Checks `trial` against the ORIGINAL recipe as a trial run; the GatedTrial exists only when the
/// verdict allows it.
std::pair<Verdict, std::optional<GatedTrial>> admit(const recipe::Document& original, recipe::Document trial,
                                                    const Adapter& adapter, const Rules& rules, const Policy& policy,
                                                    const cluster::Cluster& cluster, const CheckOptions& options);

}  // namespace attune::gate
