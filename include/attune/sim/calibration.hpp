#pragma once
// Calibration against published measurements (data/calibration/published.csv).

#include <attune/sim/model.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace attune::sim {

/// One published measurement turned into simulator inputs, with its estimate.
struct CalibrationRow {
    int line = 0;                   ///< line in published.csv
    std::string label;              ///< model, GPU, #GPUs, precision as published
    bool modelled = false;          ///< false when the row's model or layout cannot be built (counted as a miss)
    std::string why_not;            ///< the reason when not modelled
    double published_tokens = 0;    ///< tokens/s/GPU (derived from TFLOP/s with the source's convention when absent)
    double error = 0;               ///< estimated tokens/s/GPU / published − 1
    double published_mem_gib = 0;   ///< peak memory when the source gives one, else 0
    double mem_error = 0;           ///< estimated memory / published peak − 1, where a peak is published
    bool known_oom = false;         ///< the source reports this row's layout without CP out of memory
    bool predicted_oom = false;     ///< and the model finds that layout (at cp 1, full recompute) does not fit
    ModelShape model;               ///< the model the row trained (its catalogue entry, or the shape in its name)
    Layout layout;                  ///< what the row was estimated as (after any layout search)
    Estimate estimate;
    std::string framework;          ///< the `framework` column, as published
    std::string model_key;          ///< the catalogue entry the row's model is, by its column or its name (empty: a shape in its name)
    std::string gpu;                ///< the part measured, as data/hardware.yaml names it
    int seq_len = 0;                ///< tokens per sample
};

/// Share within ±20 % and median absolute error over a set of rows (misses count as 100 %).
struct Accuracy {
    std::size_t rows = 0;
    double within_20 = 0;
    double median_abs_error = 0;
};

/// The share within ±20 % and the median of absolute errors.
Accuracy accuracy_of(std::vector<double> abs_errors);

/// Summary over all rows (tokens/s/GPU), and over the rows that publish a peak memory (GiB per GPU).
struct CalibrationSummary {
    std::vector<CalibrationRow> rows;
    Accuracy speed;
    Accuracy memory;
    std::size_t known_oom = 0, predicted_oom = 0;   ///< rows with a known OOM, and of them those the model predicts
};

/// Reads published.csv, builds each row's ModelShape and Layout, estimates it. Throws InputError on a malformed file.
CalibrationSummary run_calibration(const std::filesystem::path& published_csv);

/// A family's rows rendered as its own recipe (data/calibration/recipes.yaml) and estimated as `attune
/// sim estimate` reads that recipe, beside the same rows estimated from their layouts.
struct RecipeCalibration {
    std::string framework;                        ///< the rows' framework, as data/calibration/recipes.yaml matches it
    std::string family;                           ///< the adapter that reads them
    std::vector<std::pair<int, double>> errors;   ///< (line in published.csv, error through the recipe)
    Accuracy direct, through_recipe;              ///< over the same rows
    std::vector<std::string> problems;            ///< rows that did not render or read: line and why
};

/// Renders the modelled rows of every family the templates file names. Throws InputError when the
/// file is malformed (file:line), or names an adapter the rules lack.
std::vector<RecipeCalibration> calibrate_through_recipes(const CalibrationSummary& summary,
                                                         const std::filesystem::path& templates_yaml);
std::string format_recipe_calibration(const std::vector<RecipeCalibration>& families);
/// Every row rendered as a recipe, over all families: the figure a user's `sim estimate` path reaches.
Accuracy recipe_calibration_overall(const std::vector<RecipeCalibration>& families);

/// The table as text, one row per line, then the summary.
std::string format_calibration(const CalibrationSummary& summary);

/// One row at length: its layout, memory and where its step time goes (to see why it misses).
std::string explain_calibration_row(const CalibrationRow& row);

}  // namespace attune::sim
