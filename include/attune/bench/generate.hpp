#pragma once
// `attune bench --generate N --seed S`: a suite drawn at random, so that the search is judged on
// recipes nobody tuned it on (docs/benchmarks.md, "A generated suite"). Each row is the catalogue's
// dense or MoE model on H100, H200 or B200 nodes (1 to 32), written from a family's template
// (data/generate/) through the adapter's own keys, from one of three starting points, with a hidden
// world of its own.

#include <attune/bench/bench.hpp>
#include <attune/gate/adapter.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace attune::bench {

/// Where a generated row's layout comes from.
enum class StartKind {
    vendor,  ///< the best layout of a sibling world on this hardware (tuned, but not in this world)
    ported,  ///< the best layout for another GPU or node count, run here as written
    draft,   ///< naive: tp inside the node, the fewest stages that fit, full recompute, no overlaps
};

/// Writes `rows` recipes, their clusters (`clusters/`) and `suite.yaml` (with each row's
/// `world_seed`) into `dir`, drawn from `seed`: the same seed writes the same suite. Every recipe
/// loads, checks against itself with no change, and fits its cluster in the nominal estimate.
/// Throws InputError when a template or the catalogue cannot give a row.
std::vector<SuiteEntry> generate_suite(int rows, std::uint64_t seed, const std::filesystem::path& dir);

/// A recipe template of data/generate/, loaded through the gate. Every key must be one its family's
/// adapter classifies (a key nothing reads would be written into every row unnoticed); throws
/// InputError with `file:line` otherwise.
gate::LoadedRecipe load_template(const std::filesystem::path& file);

/// The kind's name in a row's name (`vendor`, `ported`, `draft`).
std::string kind_name(StartKind kind);

}  // namespace attune::bench
