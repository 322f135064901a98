#pragma once
// The discrete lever space the baseline policies (random, bayes, grid) search: the recipe's
// performance levers that the simulator models (the same space `attune sim oracle` enumerates),
// with every point turned into edits that set each lever of the space, so that a proposal is a
// whole configuration whatever the incumbent changed.

#include <attune/gate/policy.hpp>
#include <attune/policy/policy.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/sim/oracle.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace attune::policy {

/// The levers of the space, in the order a grid enumerates them.
enum class Field {
    tp,
    pp,
    vpp,
    cp,
    ep,
    mbs,
    recompute,
    cuda_graphs,
    tp_comm_overlap,
    overlap_grad_reduce,
    overlap_param_gather,
    distributed_optimizer,  ///< optimizer state sharded over data-parallel ranks (0/1; a family with an on/off key)
    dispatcher,        ///< MoE token dispatch (sim::Dispatcher as int)
    moe_grouped_gemm   ///< local experts as one grouped GEMM (0/1)
};

/// The canonical lever name of a field (`micro_batch_size` for mbs).
std::string_view lever_name(Field field);

/// The fields that make a layout (the planner's and the lessons'); the others are flags.
inline constexpr Field k_layout_fields[] = {Field::tp, Field::pp, Field::vpp, Field::cp, Field::ep, Field::mbs, Field::recompute};

/// Whether `field` is one of k_layout_fields.
bool is_layout_field(Field field);

/// One lever and the values it may take (ints: sizes, 0/1 for flags, sim::Recompute as int).
struct Dimension {
    Field field = Field::tp;
    std::string path;          ///< the key path the lever is written at
    std::vector<int> options;  ///< at least two
};

/// A configuration: one option index per dimension.
using Point = std::vector<std::size_t>;

class ConfigSpace {
public:
    /// The space around `original`. Throws InputError when the simulator cannot model the recipe.
    /// A lever the gate refuses to move at all for this recipe (the micro batch of a MoE recipe whose
    /// balancing loss is per micro batch) is left out. `rules` and `gate_policy` are the campaign's
    /// (a user's --gate-policy shapes the space); all four must outlive the space.
    ConfigSpace(const recipe::Document& original, const gate::Adapter& adapter, const cluster::Cluster& cluster,
                const gate::Rules& rules, const gate::Policy& gate_policy);

    [[nodiscard]] const std::vector<Dimension>& dimensions() const { return m_dims; }
    /// The number of points (the product of the option counts).
    [[nodiscard]] double size() const;

    /// The simulator layout of a point (the original's for levers outside the space).
    [[nodiscard]] sim::Layout layout(const Point& point) const;
    /// The nominal estimate of a point (pure, microseconds).
    [[nodiscard]] sim::Estimate estimate(const Point& point) const;
    /// Structurally valid: the world shape, divisibility (heads and kv heads by tp, layers by pp x vpp,
    /// gbs by mbs x dp, experts by ep, sequence by 2 x cp) hold. Says nothing about memory.
    [[nodiscard]] bool consistent(const Point& point) const;
    /// Consistent, and the gate (the campaign's rules and policy, any number of levers) allows the
    /// edits against the original: the invariants the simulator does not check (padded vocabulary,
    /// feature dependencies, HyperPod's per-rank batch). About a millisecond; cached per point.
    [[nodiscard]] bool admissible(const Point& point) const;

    /// Edits that set every lever of the space (and the companions: sequence parallel with tp,
    /// the full-recompute method and layer count).
    [[nodiscard]] Edits edits(const Point& point) const;
    /// Whether a simulator layout is a recipe the gate allows against the original and the framework builds:
    /// the levers outside the space as the original has them, the others (any value, not only the space's
    /// options) written with their companions, the pipeline split the original's or an even one. Cached per
    /// layout.
    [[nodiscard]] bool admits(const sim::Layout& layout) const;
    /// The edits that turn the original into `layout` (with companions), leaving out what it already has.
    [[nodiscard]] Edits changes(const sim::Layout& layout) const;
    /// True when the recipe leaves expert tensor parallelism to follow tp.
    [[nodiscard]] bool etp_follows_tp() const { return m_etp_follows_tp; }
    /// True when a layout may pair tp with a smaller expert tp, written out (sim::etp_following_tp).
    [[nodiscard]] bool etp_below_tp() const { return m_etp_path.has_value(); }
    /// The adapter the space was read through.
    [[nodiscard]] const gate::Adapter& adapter() const { return *m_adapter; }
    /// The simulator's inputs read from the original.
    [[nodiscard]] const sim::SimInputs& inputs() const { return m_inputs; }

    /// The point a configuration is at, or nullopt when a lever's value is outside the space.
    [[nodiscard]] std::optional<Point> point_of(const Edits& edits) const;
    /// The original recipe's point, when it lies in the space.
    [[nodiscard]] const std::optional<Point>& original_point() const { return m_original_point; }

    /// A uniformly drawn point (not necessarily consistent).
    [[nodiscard]] Point random_point(std::mt19937_64& rng) const;
    /// Each coordinate scaled into [0, 1] (option index / (count - 1)), for surrogate models.
    [[nodiscard]] std::vector<double> features(const Point& point) const;
    /// A short text naming the point, `tp=2 pp=1 ...`.
    [[nodiscard]] std::string describe(const Point& point) const;

private:
    /// Writes the point's micro batch in a family's own terms (a per-device key) and holds the global
    /// batch by the accumulation steps where the family's global batch is micro batch x accumulation x dp.
    void hold_batch(Edits& out, const std::vector<int>& values) const;

    /// The value of each dimension's lever at a point, or in a layout.
    [[nodiscard]] std::vector<int> values(const Point& point) const;
    [[nodiscard]] std::vector<int> values(const sim::Layout& layout) const;
    /// The simulator layout of each dimension's value (the original's for levers outside the space).
    [[nodiscard]] sim::Layout layout_of(const std::vector<int>& values) const;
    [[nodiscard]] Edits edits_for(const std::vector<int>& values) const;
    /// The dimension of a lever whose values are read back one by one (nullopt: not a lever here).
    [[nodiscard]] std::optional<Dimension> choice_dimension(Field field);
    /// Whether the gate allows the edits of these lever values (cached), and the uncached check.
    [[nodiscard]] bool gate_allows(const std::vector<int>& values) const;
    /// The layout's pipeline split is one the framework builds: the original's, or an even one.
    [[nodiscard]] bool splits(const sim::Layout& layout) const;
    [[nodiscard]] bool gate_check(const std::vector<int>& values) const;

    const recipe::Document* m_original;
    const gate::Adapter* m_adapter;
    const cluster::Cluster* m_cluster;
    sim::SimInputs m_inputs;
    std::vector<Dimension> m_dims;
    std::optional<Point> m_original_point;
    std::optional<std::string> m_sp_path, m_vocab_path;
    /// Where expert tp is written when a layout pairs tp with a smaller one (etp_following_tp).
    std::optional<std::string> m_etp_path;
    std::optional<double> m_vocab_multiple;
    /// A per-device-batch family's accumulation key (lever grad_accum) as the original writes it, and the
    /// original's global batch it holds; null where the family has none.
    const gate::KeyRule* m_accumulation = nullptr;
    std::optional<double> m_original_gbs;
    const gate::Rules* m_rules;
    const gate::Policy* m_gate_policy;
    mutable std::map<std::vector<int>, bool> m_admissible;  ///< by lever values
    /// For the levers whose key is an enumeration (dispatcher, expert GEMMs): what each value the
    /// simulator reads is written as.
    std::map<Field, std::map<int, recipe::Value>> m_written;
    bool m_vpp_null = false;        ///< the original leaves vpp null: write vpp 1 as null
    bool m_recompute_bool = false;  ///< the recompute lever is a flag (HyperPod, AutoModel)
    bool m_etp_follows_tp = true;   ///< the recipe leaves expert tp to default to tp
    bool m_uneven_stages = false;   ///< the framework splits layers over stages unevenly (AutoModel)
};

/// The oracle (`sim::run_oracle` over the adapter's lever domains) counting only what the gate allows:
/// the ceiling a tuner is compared against.
sim::OracleResult run_gated_oracle(const ConfigSpace& space, const sim::World& world);

/// The index of `field`'s dimension in `space`, or nullopt when the space does not have that lever.
std::optional<std::size_t> dimension_of(const ConfigSpace& space, Field field);

/// The option value of `field` at `point`, or nullopt when the space does not have that lever.
std::optional<int> option_of(const ConfigSpace& space, const Point& point, Field field);

}  // namespace attune::policy
