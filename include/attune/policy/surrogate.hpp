#pragma once
// The surrogate behind the `bayes` policy: Gaussian-process regression on features in [0, 1]
// (Matern 5/2 kernel, length-scale and noise picked by marginal likelihood from a small grid),
// expected improvement, and failures modelled as a constraint (a second GP on +1/-1 whose
// probability of feasibility multiplies the expected improvement, as in Gardner et al. 2014).
// Linear algebra on Eigen; nothing here knows about recipes.

#include <cstddef>
#include <optional>
#include <vector>

namespace attune::policy {

/// Gaussian-process regression. `fit` standardises the targets; `predict` answers in their units.
class GaussianProcess {
public:
    struct Prediction {
        double mean = 0;
        double stdev = 0;
    };

    /// Fits to points `x` (each of the same dimension) and targets `y`; the prior mean is the
    /// targets' mean, and with `standardise` the prior scale their spread (else 1: the constraint
    /// model, whose prior is then the observed rate of feasibility). Needs at least one point.
    void fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
             bool standardise = true);
    [[nodiscard]] Prediction predict(const std::vector<double>& x) const;
    [[nodiscard]] double length_scale() const { return m_length; }
    [[nodiscard]] double noise() const { return m_noise; }

private:
    std::vector<std::vector<double>> m_x;
    std::vector<double> m_alpha;  ///< K^-1 (y - mean) / scale
    std::vector<double> m_chol;   ///< lower Cholesky factor of K, row-major n x n
    double m_mean = 0, m_scale = 1, m_length = 0.3, m_noise = 1e-3;
};

/// Expected improvement over `best` of a normal prediction (maximisation), with margin `xi`.
double expected_improvement(double mean, double stdev, double best, double xi = 0.01);

/// The standard normal CDF.
double normal_cdf(double z);

/// One evaluated point: its features and its value, or nullopt when it failed (OOM, crash, refused).
struct Observation {
    std::vector<double> x;
    std::optional<double> y;
};

/// Expected improvement times probability of feasibility of each candidate, given the observations
/// (values are maximised). Without a success, the probability of feasibility alone.
std::vector<double> acquisition(const std::vector<Observation>& observed,
                                const std::vector<std::vector<double>>& candidates);

/// The candidate with the largest expected improvement times probability of feasibility, given the
/// observations (values are maximised). Nullopt when `candidates` is empty. `score` receives that
/// product when given.
std::optional<std::size_t> best_candidate(const std::vector<Observation>& observed,
                                          const std::vector<std::vector<double>>& candidates,
                                          double* score = nullptr);

}  // namespace attune::policy
