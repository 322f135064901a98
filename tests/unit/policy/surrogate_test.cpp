// The bayes policy's surrogate: the Gaussian process, expected improvement, and the whole
// constrained search on test functions whose optima are known.
#include <attune/policy/surrogate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <set>

namespace attune::policy {
namespace {

using Grid = std::vector<std::vector<double>>;

Grid grid_2d(int n) {
    Grid points;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) points.push_back({double(i) / (n - 1), double(j) / (n - 1)});
    return points;
}

/// Branin on [-5, 10] x [0, 15]; global minimum 0.397887 at three points.
double branin(const std::vector<double>& u) {
    const double x1 = -5 + 15 * u[0], x2 = 15 * u[1];
    const double b = 5.1 / (4 * std::numbers::pi * std::numbers::pi), c = 5 / std::numbers::pi,
                 t = 1 / (8 * std::numbers::pi);
    return std::pow(x2 - b * x1 * x1 + c * x1 - 6, 2) + 10 * (1 - t) * std::cos(x1) + 10;
}

/// Runs `initial` random points then `iterations` proposals of the surrogate over `grid`,
/// maximising `f` (nullopt: the point fails). Returns the best value found.
double search(const Grid& grid, const std::function<std::optional<double>(const std::vector<double>&)>& f,
              int initial, int iterations, std::uint64_t seed, int* failures = nullptr) {
    std::mt19937_64 rng(seed);
    std::vector<Observation> observed;
    std::set<std::size_t> used;
    double best = -1e300;
    const auto evaluate = [&](std::size_t i) {
        used.insert(i);
        const auto y = f(grid[i]);
        if (y)
            best = std::max(best, *y);
        else if (failures)
            ++*failures;
        observed.push_back({grid[i], y});
    };
    while (int(used.size()) < initial) {
        const auto i = std::uniform_int_distribution<std::size_t>(0, grid.size() - 1)(rng);
        if (!used.contains(i)) evaluate(i);
    }
    for (int k = 0; k < iterations; ++k) {
        Grid candidates;
        std::vector<std::size_t> index;
        for (std::size_t i = 0; i < grid.size(); ++i)
            if (!used.contains(i)) candidates.push_back(grid[i]), index.push_back(i);
        const auto pick = best_candidate(observed, candidates);
        EXPECT_TRUE(pick.has_value());
        evaluate(index[*pick]);
    }
    return best;
}

TEST(GaussianProcess, InterpolatesItsPointsAndIsUnsureFarFromThem) {
    GaussianProcess gp;
    const Grid x{{0.0}, {0.25}, {0.5}};
    const std::vector<double> y{1.0, 3.0, 2.0};
    gp.fit(x, y);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(gp.predict(x[i]).mean, y[i], 0.15);
    EXPECT_LT(gp.predict({0.25}).stdev, gp.predict({1.0}).stdev);
}

TEST(ExpectedImprovement, MatchesTheClosedFormAndVanishesWithoutUncertainty) {
    EXPECT_NEAR(expected_improvement(0, 1, 0, 0), 1 / std::sqrt(2 * std::numbers::pi), 1e-12);
    EXPECT_NEAR(expected_improvement(2, 0, 1, 0), 1.0, 1e-12);
    EXPECT_EQ(expected_improvement(0.5, 0, 1, 0), 0.0);
    EXPECT_GT(expected_improvement(0, 2, 0, 0), expected_improvement(0, 1, 0, 0));
}

TEST(BayesSurrogate, FindsTheMaximumOfAOneDimensionalFunction) {
    Grid grid;
    for (int i = 0; i <= 100; ++i) grid.push_back({i / 100.0});
    const auto f = [](const std::vector<double>& x) -> std::optional<double> {
        return -std::pow(x[0] - 0.37, 2) + 0.1 * std::sin(20 * x[0]);
    };
    double true_best = -1e300;
    for (const auto& x : grid) true_best = std::max(true_best, *f(x));
    EXPECT_NEAR(search(grid, f, 3, 12, 7), true_best, 1e-9);
}

TEST(BayesSurrogate, ComesCloseToBraninsGlobalMinimumInFewEvaluations) {
    const Grid grid = grid_2d(41);  // 1681 points
    const auto f = [](const std::vector<double>& x) -> std::optional<double> { return -branin(x); };
    double grid_minimum = 1e300;
    for (const auto& x : grid) grid_minimum = std::min(grid_minimum, branin(x));
    EXPECT_NEAR(grid_minimum, 0.397887, 0.1);
    for (const std::uint64_t seed : {1, 2, 3}) {
        const double best = -search(grid, f, 5, 30, seed);
        // 35 of 1681 points; random search with as many averages about 2.
        EXPECT_LT(best, grid_minimum + 0.1) << "seed " << seed;
    }
}

TEST(BayesSurrogate, LearnsAFailureRegionAndStillFindsTheFeasibleOptimum) {
    const Grid grid = grid_2d(21);
    // Faster towards x0 = 1, but everything past x0 = 0.6 fails (an OOM boundary): the optimum is on it.
    const auto f = [](const std::vector<double>& x) -> std::optional<double> {
        if (x[0] > 0.6) return std::nullopt;
        return x[0] - 0.3 * std::pow(x[1] - 0.5, 2);
    };
    int failures = 0;
    const double best = search(grid, f, 5, 25, 11, &failures);
    EXPECT_NEAR(best, 0.6, 0.01);
    EXPECT_LE(failures, 6)
        << "random search would fail on 38% of its points; the constraint model steers away";
}

}  // namespace
}  // namespace attune::policy
