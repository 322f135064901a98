#include <attune/policy/surrogate.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace attune::policy {

namespace {

double matern52(const std::vector<double>& a, const std::vector<double>& b, double length) {
    double d2 = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
    const double r = std::sqrt(5.0 * d2) / length;
    return (1 + r + r * r / 3) * std::exp(-r);
}

Eigen::MatrixXd kernel_matrix(const std::vector<std::vector<double>>& x, double length, double noise) {
    const auto n = Eigen::Index(x.size());
    Eigen::MatrixXd k(n, n);
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j <= i; ++j)
            k(i, j) = k(j, i) = matern52(x[std::size_t(i)], x[std::size_t(j)], length);
    k.diagonal().array() += noise;
    return k;
}

}  // namespace

void GaussianProcess::fit(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                          bool standardise) {
    if (x.empty() || x.size() != y.size())
        throw std::invalid_argument("GaussianProcess::fit: needs as many targets as points, at least one");
    const auto n = Eigen::Index(x.size());
    Eigen::VectorXd t = Eigen::Map<const Eigen::VectorXd>(y.data(), n);
    m_mean = t.mean(), m_scale = 1;
    if (standardise) {
        const double var = (t.array() - m_mean).square().sum() / double(n);
        m_scale = var > 1e-24 ? std::sqrt(var) : 1.0;
    }
    t = (t.array() - m_mean) / m_scale;
    // Type-II maximum likelihood over a small grid: robust, and cheap for the few dozen trials a campaign
    // has.
    double best = -std::numeric_limits<double>::infinity();
    for (const double length : {0.1, 0.2, 0.35, 0.6, 1.0, 2.0})
        for (const double noise : {1e-4, 1e-2, 1e-1}) {
            Eigen::LLT<Eigen::MatrixXd> llt(kernel_matrix(x, length, noise));
            if (llt.info() != Eigen::Success) continue;
            const Eigen::VectorXd alpha = llt.solve(t);
            const double log_det = 2 * llt.matrixL().toDenseMatrix().diagonal().array().log().sum();
            const double likelihood = -0.5 * t.dot(alpha) - 0.5 * log_det;
            if (likelihood > best) best = likelihood, m_length = length, m_noise = noise;
        }
    Eigen::LLT<Eigen::MatrixXd> llt(kernel_matrix(x, m_length, m_noise));
    const Eigen::VectorXd alpha = llt.solve(t);
    const Eigen::MatrixXd l = llt.matrixL();
    m_x = x;
    m_alpha.assign(alpha.data(), alpha.data() + n);
    m_chol.resize(std::size_t(n * n));
    Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(m_chol.data(), n, n) =
        l;
}

GaussianProcess::Prediction GaussianProcess::predict(const std::vector<double>& x) const {
    const auto n = Eigen::Index(m_x.size());
    if (n == 0) return {m_mean, m_scale};
    Eigen::VectorXd k(n);
    for (Eigen::Index i = 0; i < n; ++i) k(i) = matern52(m_x[std::size_t(i)], x, m_length);
    const double mean = k.dot(Eigen::Map<const Eigen::VectorXd>(m_alpha.data(), n));
    const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> l(
        m_chol.data(), n, n);
    const Eigen::VectorXd v = l.triangularView<Eigen::Lower>().solve(k);
    const double var = std::max(1.0 - v.squaredNorm(), 1e-12);
    return {m_mean + m_scale * mean, m_scale * std::sqrt(var)};
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

double expected_improvement(double mean, double stdev, double best, double xi) {
    const double gain = mean - best - xi;
    if (stdev <= 1e-12) return std::max(gain, 0.0);
    const double z = gain / stdev;
    const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi);
    return gain * normal_cdf(z) + stdev * pdf;
}

std::vector<double> acquisition(const std::vector<Observation>& observed,
                                const std::vector<std::vector<double>>& candidates) {
    std::vector<double> scores;
    if (candidates.empty()) return scores;
    std::vector<std::vector<double>> ok_x, all_x;
    std::vector<double> ok_y, feasible;
    for (const auto& o : observed) {
        all_x.push_back(o.x);
        feasible.push_back(o.y ? 1.0 : -1.0);
        if (o.y) ok_x.push_back(o.x), ok_y.push_back(*o.y);
    }
    const bool any_failure = std::find(feasible.begin(), feasible.end(), -1.0) != feasible.end();
    GaussianProcess objective, constraint;
    if (!ok_x.empty()) {
        // Failures also enter the objective at the worst value seen (SMAC's crash cost): an
        // isotropic constraint model alone learns a boundary only locally, and the objective's
        // trend would keep pulling the search across it.
        std::vector<std::vector<double>> x = ok_x;
        std::vector<double> y = ok_y;
        const double worst = *std::min_element(ok_y.begin(), ok_y.end());
        for (const auto& o : observed)
            if (!o.y) x.push_back(o.x), y.push_back(worst);
        objective.fit(x, y);
    }
    if (any_failure) constraint.fit(all_x, feasible, /*standardise=*/false);
    const double incumbent = ok_y.empty() ? 0.0 : *std::max_element(ok_y.begin(), ok_y.end());
    // EI's margin in the targets' own units: 1% of their spread keeps it scale-free.
    double spread = 0;
    if (ok_y.size() > 1)
        spread = *std::max_element(ok_y.begin(), ok_y.end()) - *std::min_element(ok_y.begin(), ok_y.end());
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        double ei = 1.0;
        if (!ok_x.empty()) {
            const auto p = objective.predict(candidates[i]);
            ei = expected_improvement(p.mean, p.stdev, incumbent, 0.01 * spread);
        }
        double p_feasible = 1.0;
        if (any_failure) {
            const auto c = constraint.predict(candidates[i]);
            p_feasible = normal_cdf(c.mean / std::max(c.stdev, 1e-9));
        }
        scores.push_back(ei * p_feasible);
    }
    return scores;
}

std::optional<std::size_t> best_candidate(const std::vector<Observation>& observed,
                                          const std::vector<std::vector<double>>& candidates, double* score) {
    const auto scores = acquisition(observed, candidates);
    if (scores.empty()) return std::nullopt;
    const auto it = std::max_element(scores.begin(), scores.end());
    if (score) *score = *it;
    return std::size_t(it - scores.begin());
}

}  // namespace attune::policy
