#include <attune/policy/config_space.hpp>

#include <attune/core/error.hpp>
#include <attune/gate/verdict.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace attune::policy {

namespace {

using recipe::Value;

constexpr Field k_fields[] = {Field::tp,
                              Field::pp,
                              Field::vpp,
                              Field::cp,
                              Field::ep,
                              Field::mbs,
                              Field::recompute,
                              Field::cuda_graphs,
                              Field::tp_comm_overlap,
                              Field::overlap_grad_reduce,
                              Field::overlap_param_gather,
                              Field::distributed_optimizer,
                              Field::dispatcher,
                              Field::moe_grouped_gemm};

bool exact(const std::string& pattern) {
    return recipe::is_key_path(pattern) && pattern.find('[') == std::string::npos;
}

int get(const sim::Layout& l, Field f) {
    switch (f) {
        case Field::tp:
            return l.tp;
        case Field::pp:
            return l.pp;
        case Field::vpp:
            return l.vpp;
        case Field::cp:
            return l.cp;
        case Field::ep:
            return l.ep;
        case Field::mbs:
            return l.mbs;
        case Field::recompute:
            return int(l.recompute);
        case Field::cuda_graphs:
            return l.cuda_graphs ? 1 : 0;
        case Field::tp_comm_overlap:
            return l.tp_comm_overlap ? 1 : 0;
        case Field::overlap_grad_reduce:
            return l.overlap_grad_reduce ? 1 : 0;
        case Field::overlap_param_gather:
            return l.overlap_param_gather ? 1 : 0;
        case Field::distributed_optimizer:
            return l.sharding == sim::Sharding::distributed_optimizer ? 1 : 0;
        case Field::dispatcher:
            return int(l.dispatcher);
        case Field::moe_grouped_gemm:
            return l.moe_grouped_gemm ? 1 : 0;
    }
    return 0;
}

void set(sim::Layout& l, Field f, int v) {
    switch (f) {
        case Field::tp:
            l.tp = v;
            break;
        case Field::pp:
            l.pp = v;
            break;
        case Field::vpp:
            l.vpp = v;
            break;
        case Field::cp:
            l.cp = v;
            break;
        case Field::ep:
            l.ep = v;
            break;
        case Field::mbs:
            l.mbs = v;
            break;
        case Field::recompute:
            l.recompute = sim::Recompute(v);
            break;
        case Field::cuda_graphs:
            l.cuda_graphs = v != 0;
            break;
        case Field::tp_comm_overlap:
            l.tp_comm_overlap = v != 0;
            break;
        case Field::overlap_grad_reduce:
            l.overlap_grad_reduce = v != 0;
            break;
        case Field::overlap_param_gather:
            l.overlap_param_gather = v != 0;
            break;
        case Field::distributed_optimizer:
            l.sharding = v != 0 ? sim::Sharding::distributed_optimizer : sim::Sharding::none;
            break;
        case Field::dispatcher:
            l.dispatcher = sim::Dispatcher(v);
            break;
        case Field::moe_grouped_gemm:
            l.moe_grouped_gemm = v != 0;
            break;
    }
}

bool is_flag(Field f) { return f >= Field::cuda_graphs && f <= Field::distributed_optimizer; }

/// A lever whose values are read back from the recipe one by one (the MoE backend choices).
bool is_choice(Field f) { return f == Field::dispatcher || f == Field::moe_grouped_gemm; }

/// The interleavings (up to 16, as the oracle enumerates) that split `layers` evenly over some pipeline.
std::vector<int> even_interleavings(int layers) {
    std::vector<int> out;
    constexpr int k_largest_interleaving = 16;
    for (int vpp = 1; vpp <= k_largest_interleaving; ++vpp)
        for (const int pp : {2, 4, 8, 16})
            if (layers % (pp * vpp) == 0) {
                out.push_back(vpp);
                break;
            }
    return out;
}

/// How a recompute value reads (as sim::from_recipe reads it).
sim::Recompute recompute_of(const Value& value) {
    return value.is_null() ? sim::Recompute::none : sim::parse_recompute(util::to_lower(value.to_string()));
}

}  // namespace

bool is_layout_field(Field field) {
    return std::find(std::begin(k_layout_fields), std::end(k_layout_fields), field) != std::end(k_layout_fields);
}

std::string_view lever_name(Field field) {
    switch (field) {
        case Field::tp:
            return "tp";
        case Field::pp:
            return "pp";
        case Field::vpp:
            return "vpp";
        case Field::cp:
            return "cp";
        case Field::ep:
            return "ep";
        case Field::mbs:
            return "micro_batch_size";
        case Field::recompute:
            return "recompute";
        case Field::cuda_graphs:
            return "cuda_graphs";
        case Field::tp_comm_overlap:
            return "tp_comm_overlap";
        case Field::overlap_grad_reduce:
            return "overlap_grad_reduce";
        case Field::overlap_param_gather:
            return "overlap_param_gather";
        case Field::distributed_optimizer:
            return "distributed_optimizer";
        case Field::dispatcher:
            return "moe_dispatcher";
        case Field::moe_grouped_gemm:
            return "moe_grouped_gemm";
    }
    return "";
}

ConfigSpace::ConfigSpace(const recipe::Document& original, const gate::Adapter& adapter, const cluster::Cluster& cluster,
                         const gate::Rules& rules, const gate::Policy& gate_policy)
    : m_original(&original),
      m_adapter(&adapter),
      m_cluster(&cluster),
      m_inputs(sim::from_recipe(original, adapter, cluster)),
      m_rules(&rules),
      m_gate_policy(&gate_policy) {
    // Megatron pads the vocabulary to a multiple of make_vocab_size_divisible_by x tp: a tp change
    // rescales that multiple so that the padded vocabulary (part of the model) stays as it was.
    m_vocab_multiple = adapter.quantity(original, "vocab_multiple", cluster);
    m_uneven_stages = adapter.quantity(original, "uneven_stages", cluster).value_or(0) == 1;
    for (const auto& rule : adapter.key_rules())
        if (rule.lever == "grad_accum" && recipe::is_key_path(rule.pattern) && original.find(rule.pattern) != nullptr) {
            m_accumulation = &rule;
            m_original_gbs = adapter.quantity(original, "gbs", cluster);
            break;
        }
    if (const auto* rule = adapter.lever_rule("vocab_padding"); rule && m_vocab_multiple)
        m_vocab_path = original.placed(rule->pattern);
    const auto& keys = adapter.key_rules();
    // The key a lever is written at: the one the recipe sets (the one the simulator reads), else the first
    // exact rule.
    const auto rule_of = [&](std::string_view lever) -> const gate::KeyRule* {
        for (const auto& rule : keys)
            if (rule.lever == lever && exact(rule.pattern) && original.find(rule.pattern) != nullptr)
                return &rule;
        return adapter.lever_rule(lever);
    };
    if (const auto* sp = rule_of("sequence_parallel"); sp && m_inputs.layout.sequence_parallel)
        m_sp_path = original.placed(sp->pattern);
    std::vector<Dimension> found;
    for (const Field field : k_fields) {
        if (is_choice(field)) {
            if (auto dim = choice_dimension(field)) found.push_back(std::move(*dim));
            continue;
        }
        const auto* rule = rule_of(lever_name(field));
        if (rule == nullptr || rule->key_class != gate::KeyClass::performance) continue;
        Dimension dim{field, original.placed(rule->pattern), {}};
        const auto add = [&](int v) {
            if (std::find(dim.options.begin(), dim.options.end(), v) == dim.options.end())
                dim.options.push_back(v);
        };
        if (field == Field::recompute) {
            m_recompute_bool = rule->domain.type == "bool";
            if (m_recompute_bool) add(int(sim::Recompute::none)), add(int(sim::Recompute::full));
            for (const auto& value : rule->domain.values) add(int(recompute_of(value)));
        } else if (is_flag(field)) {
            if (rule->domain.type != "bool") continue;
            add(0), add(1);
        } else {
            if (field == Field::ep && m_inputs.model.experts <= 0) continue;
            for (const auto& value : rule->domain.values)
                if (const auto n = value.as_number(); n && *n >= 1) add(int(*n));
            const auto in_domain = [&](int v) {
                return v >= rule->domain.min.value_or(1) && v <= rule->domain.max.value_or(1e9);
            };
            if (rule->domain.values.empty() && rule->domain.numeric()) {
                for (const int v : {1, 2, 4, 8})
                    if (in_domain(v)) add(v);
                // Interleaving pays where it splits the layers evenly: 80 layers take vpp 5 and 10.
                if (field == Field::vpp)
                    for (const int v : even_interleavings(m_inputs.model.layers))
                        if (in_domain(v)) add(v);
            }
            // The original's own value, so that the original is a point of the space.
            if (in_domain(get(m_inputs.layout, field))) add(get(m_inputs.layout, field));
            if (field == Field::vpp) {
                const Value* written = original.find(rule->pattern);
                m_vpp_null = written == nullptr || written->is_null();
            }
        }
        std::sort(dim.options.begin(), dim.options.end());
        // Keep only the values that read back as written (a key the simulator reads elsewhere is no lever
        // here).
        std::vector<int> kept;
        for (const int v : dim.options) {
            m_dims = {Dimension{field, dim.path, {v}}};
            try {
                const auto doc = original.with_edits(edit_list(edits(Point{0})));
                const sim::Layout read = sim::from_recipe(doc, adapter, cluster).layout;
                if (get(read, field) == v) kept.push_back(v);
                // The family's spelling of selective may be per-op checkpointing (torchtitan's 'op'): the
                // option is what the simulator reads.
                else if (field == Field::recompute && v == int(sim::Recompute::selective) &&
                         read.recompute == sim::Recompute::saved_ops)
                    kept.push_back(int(sim::Recompute::saved_ops));
                // NeMo's expert tensor parallelism defaults to tp: it moves with tp unless the recipe pins
                // it.
                if (field == Field::tp) m_etp_follows_tp = m_etp_follows_tp && read.etp == v;
            } catch (const InputError&) {
            }
        }
        m_dims.clear();
        dim.options = kept;
        if (dim.options.size() >= 2) found.push_back(dim);
    }
    m_dims = std::move(found);
    m_etp_follows_tp = m_etp_follows_tp && std::any_of(m_dims.begin(), m_dims.end(), [](const Dimension& d) {
                           return d.field == Field::tp;
                       });
    if (const auto* etp = rule_of("etp"); etp && m_etp_follows_tp) m_etp_path = original.placed(etp->pattern);
    m_original_point = point_of({});
    // Leave out a lever the gate pins: no other value of it alone is allowed from the original.
    if (!m_original_point) return;
    std::vector<Dimension> movable;
    Point reduced;
    for (std::size_t i = 0; i < m_dims.size(); ++i) {
        // Alone, or together with one other lever (HyperPod's per-rank batch moves with tp).
        bool moves = false;
        for (std::size_t o = 0; o < m_dims[i].options.size() && !moves; ++o) {
            if (o == (*m_original_point)[i]) continue;
            Point p = *m_original_point;
            p[i] = o;
            moves = consistent(p) && gate_allows(values(p));
            for (std::size_t j = 0; j < m_dims.size() && !moves; ++j)
                for (std::size_t k = 0; j != i && k < m_dims[j].options.size() && !moves; ++k) {
                    Point q = p;
                    q[j] = k;
                    moves = consistent(q) && gate_allows(values(q));
                }
        }
        if (moves) movable.push_back(m_dims[i]), reduced.push_back((*m_original_point)[i]);
    }
    m_dims = std::move(movable);
    m_original_point = reduced;
    m_admissible.clear();
}

std::optional<Dimension> ConfigSpace::choice_dimension(Field field) {
    if (m_inputs.model.experts <= 0) return std::nullopt;
    // The key the simulator reads the lever from: the first exact one with a domain of choices.
    const gate::KeyRule* rule = nullptr;
    for (const auto& r : m_adapter->key_rules())
        if (r.lever == lever_name(field) && exact(r.pattern) && r.key_class == gate::KeyClass::performance &&
            (r.domain.type == "bool" || !r.domain.values.empty())) {
            rule = &r;
            break;
        }
    if (rule == nullptr) return std::nullopt;
    auto values = rule->domain.values;
    if (values.empty()) values = {Value::boolean(false), Value::boolean(true)};
    std::map<int, Value> written;
    const Value* own = m_original->find(rule->pattern);
    written.emplace(get(m_inputs.layout, field), own ? *own : Value::null());
    for (const Value& value : values) {
        try {
            const auto doc = m_original->with_edits({{rule->pattern, value, false}});
            written.try_emplace(get(sim::from_recipe(doc, *m_adapter, *m_cluster).layout, field), value);
        } catch (const InputError&) {
        }
    }
    if (written.size() < 2) return std::nullopt;
    Dimension dim{field, m_original->placed(rule->pattern), {}};
    for (const auto& [v, value] : written) dim.options.push_back(v);
    m_written[field] = std::move(written);
    return dim;
}

bool ConfigSpace::gate_allows(const std::vector<int>& values) const {
    if (const auto it = m_admissible.find(values); it != m_admissible.end()) return it->second;
    return m_admissible[values] = gate_check(values);
}

bool ConfigSpace::gate_check(const std::vector<int>& values) const {
    try {
        gate::CheckOptions options;
        options.purpose = gate::Purpose::trial_run;
        options.max_levers = 1000;
        const auto candidate = m_original->with_edits(edit_list(edits_for(values)));
        return gate::check(*m_original, candidate, *m_adapter, *m_rules, *m_gate_policy,
                           *m_cluster, options)
            .allowed;
    } catch (const InputError&) {
        return false;
    }
}

double ConfigSpace::size() const {
    double n = 1;
    for (const auto& d : m_dims) n *= double(d.options.size());
    return n;
}

sim::Layout ConfigSpace::layout(const Point& point) const { return layout_of(values(point)); }

sim::Layout ConfigSpace::layout_of(const std::vector<int>& values) const {
    sim::Layout l = m_inputs.layout;
    l.dp = 0;
    for (std::size_t i = 0; i < m_dims.size(); ++i) set(l, m_dims[i].field, values[i]);
    l.sequence_parallel = l.tp > 1 && m_inputs.layout.sequence_parallel;
    if (m_etp_follows_tp) l.etp = m_etp_path ? sim::etp_following_tp(l) : l.tp;
    return l;
}

sim::Estimate ConfigSpace::estimate(const Point& point) const {
    return sim::estimate(m_inputs.hardware, m_inputs.model, layout(point));
}

bool ConfigSpace::consistent(const Point& point) const {
    const sim::Layout l = layout(point);
    const auto& m = m_inputs.model;
    if (!sim::estimate(m_inputs.hardware, m, l).valid) return false;
    if (m.kv_heads > 0 && m.kv_heads % l.tp != 0) return false;
    if (!splits(l)) return false;
    if (l.vpp > 1 && l.pp == 1) return false;
    return true;
}

bool ConfigSpace::splits(const sim::Layout& l) const {
    // The original's own split may be uneven (explicit stage sizes); an edited one must be even where the
    // framework splits evenly (Megatron-Core refuses 94 layers over 8 stages unless told each stage's size).
    const bool edited_split = l.pp != m_inputs.layout.pp || l.vpp != m_inputs.layout.vpp;
    return !edited_split || m_uneven_stages || m_inputs.model.layers % (l.pp * l.vpp) == 0;
}

bool ConfigSpace::admissible(const Point& point) const { return consistent(point) && gate_allows(values(point)); }

bool ConfigSpace::admits(const sim::Layout& layout) const {
    for (const Field field : k_fields) {
        const bool in_space = std::any_of(m_dims.begin(), m_dims.end(), [&](const Dimension& d) { return d.field == field; });
        if (!in_space && get(layout, field) != get(m_inputs.layout, field)) return false;
        if (const auto it = m_written.find(field); in_space && it != m_written.end() && !it->second.contains(get(layout, field)))
            return false;
    }
    return splits(layout) && gate_allows(values(layout));
}

Edits ConfigSpace::changes(const sim::Layout& layout) const {
    Edits out;
    for (auto& [path, value] : edits_for(values(layout))) {
        const Value* written = m_original->find(path);
        const bool same = written ? written->same_as(value, Value::Numeric::coerce) : value.is_null();
        if (!same) out.insert_or_assign(path, value);
    }
    return out;
}

std::vector<int> ConfigSpace::values(const Point& point) const {
    std::vector<int> out(m_dims.size());
    for (std::size_t i = 0; i < m_dims.size(); ++i) out[i] = m_dims[i].options[point[i]];
    return out;
}

std::vector<int> ConfigSpace::values(const sim::Layout& layout) const {
    std::vector<int> out(m_dims.size());
    for (std::size_t i = 0; i < m_dims.size(); ++i) out[i] = get(layout, m_dims[i].field);
    return out;
}

Edits ConfigSpace::edits(const Point& point) const { return edits_for(values(point)); }

Edits ConfigSpace::edits_for(const std::vector<int>& values) const {
    Edits out;
    int tp = m_inputs.layout.tp;
    for (std::size_t i = 0; i < m_dims.size(); ++i) {
        const auto& d = m_dims[i];
        const int v = values[i];
        switch (d.field) {
            case Field::recompute: {
                // Per-op checkpointing is how such a family spells selective.
                const auto r = sim::Recompute(v) == sim::Recompute::saved_ops ? sim::Recompute::selective : sim::Recompute(v);
                constexpr const char* k_choice[] = {"none", "selective", "full"};   // sim::Recompute's order
                const auto& spelt = m_adapter->runtime().recompute;
                if (const auto found = r <= sim::Recompute::full ? spelt.find(k_choice[int(r)]) : spelt.end(); found != spelt.end())
                    for (const auto& [path, value] : found->second) out.insert_or_assign(m_original->placed(path), value);
                else if (m_recompute_bool)
                    out.insert_or_assign(d.path, Value::boolean(r != sim::Recompute::none));
                else
                    out.insert_or_assign(
                        d.path, r == sim::Recompute::none
                                    ? Value::null()
                                    : Value::string(r == sim::Recompute::full ? "full" : "selective"));
                break;
            }
            case Field::vpp:
                out.insert_or_assign(d.path, v == 1 && m_vpp_null ? Value::null() : Value::number(v));
                break;
            case Field::dispatcher:
            case Field::moe_grouped_gemm: {
                const auto& written = m_written.at(d.field);
                if (const auto it = written.find(v); it != written.end()) out.insert_or_assign(d.path, it->second);
                break;
            }
            default:
                // A key the original leaves to its default stays unwritten where the value is the original's.
                if (v == get(m_inputs.layout, d.field) && m_original->find(d.path) == nullptr)
                    out.insert_or_assign(d.path, Value::null());
                else if (is_flag(d.field))
                    out.insert_or_assign(d.path, Value::boolean(v != 0));
                else
                    out.insert_or_assign(d.path, Value::number(v));
        }
        if (d.field == Field::tp) tp = v;
    }
    hold_batch(out, values);
    if (m_etp_path) {
        const sim::Layout l = layout_of(values);
        out.insert_or_assign(*m_etp_path, l.etp == l.tp ? Value::null() : Value::number(l.etp));
    }
    if (m_sp_path) out.insert_or_assign(*m_sp_path, Value::boolean(tp > 1));
    if (m_vocab_path) {  // written even when tp is the original's: the incumbent may have moved it
        const double multiple = *m_vocab_multiple * m_inputs.layout.tp / tp;
        // A recipe that leaves the multiple to its default keeps leaving it where tp is the original's.
        if (multiple == *m_vocab_multiple && m_original->find(*m_vocab_path) == nullptr)
            out.insert_or_assign(*m_vocab_path, Value::null());
        else if (multiple >= 1 && std::floor(multiple) == multiple)
            out.insert_or_assign(*m_vocab_path, Value::number(multiple));
    }
    return out;
}

void ConfigSpace::hold_batch(Edits& out, const std::vector<int>& values) const {
    const auto mbs_dim = std::find_if(m_dims.begin(), m_dims.end(), [](const Dimension& d) { return d.field == Field::mbs; });
    if (mbs_dim == m_dims.end() && m_accumulation == nullptr) return;
    const auto quantity = [&](const Edits& edits, const char* name) -> std::optional<double> {
        try {
            return m_adapter->quantity(m_original->with_edits(edit_list(edits)), name, *m_cluster);
        } catch (const InputError&) {
            return std::nullopt;
        }
    };
    // A family whose micro batch key is per device (MaxText: per_device_batch_size, while a model replica
    // of tp x cp x pp devices runs that many times more) gets the key that gives the point's micro batch.
    if (mbs_dim != m_dims.end()) {
        const double wanted = values[std::size_t(mbs_dim - m_dims.begin())];
        const Value* written = out.contains(mbs_dim->path) ? &out.at(mbs_dim->path) : m_original->find(mbs_dim->path);
        const auto key = written ? written->as_number() : std::nullopt;
        if (const auto read = quantity(out, "mbs"); key && read && *read > 0 && *read != wanted)
            out.insert_or_assign(mbs_dim->path, Value::number(*key * wanted / *read));
    }
    // A family whose global batch is micro batch x accumulation x dp holds it by its accumulation steps.
    if (m_accumulation == nullptr || !m_original_gbs) return;
    const auto candidate_gbs = quantity(out, "gbs");
    const auto steps = m_original->find(m_accumulation->pattern)->as_number();
    if (!candidate_gbs || !steps || *candidate_gbs <= 0 || *candidate_gbs == *m_original_gbs) return;
    const double held = *steps * *m_original_gbs / *candidate_gbs;
    if (held >= 1 && std::floor(held) == held) out.insert_or_assign(m_original->placed(m_accumulation->pattern), Value::number(held));
}

std::optional<Point> ConfigSpace::point_of(const Edits& edits) const {
    try {
        const auto doc = m_original->with_edits(edit_list(edits));
        const sim::Layout l = sim::from_recipe(doc, *m_adapter, *m_cluster).layout;
        Point point(m_dims.size());
        for (std::size_t i = 0; i < m_dims.size(); ++i) {
            const auto& o = m_dims[i].options;
            const auto it = std::find(o.begin(), o.end(), get(l, m_dims[i].field));
            if (it == o.end()) return std::nullopt;
            point[i] = std::size_t(it - o.begin());
        }
        return point;
    } catch (const InputError&) {
        return std::nullopt;
    }
}

Point ConfigSpace::random_point(std::mt19937_64& rng) const {
    Point point(m_dims.size());
    for (std::size_t i = 0; i < m_dims.size(); ++i)
        point[i] = std::uniform_int_distribution<std::size_t>(0, m_dims[i].options.size() - 1)(rng);
    return point;
}

std::vector<double> ConfigSpace::features(const Point& point) const {
    std::vector<double> x(m_dims.size());
    for (std::size_t i = 0; i < m_dims.size(); ++i)
        x[i] = double(point[i]) / double(m_dims[i].options.size() - 1);
    return x;
}

std::string ConfigSpace::describe(const Point& point) const {
    std::string out;
    constexpr const char* k_recompute[] = {"none", "selective", "full", "per-op"};   // sim::Recompute's order
    for (std::size_t i = 0; i < m_dims.size(); ++i) {
        const int v = m_dims[i].options[point[i]];
        const Field f = m_dims[i].field;
        if (!out.empty()) out += ' ';
        if (f == Field::recompute)
            out += fmt::format("recompute={}", k_recompute[v]);
        else if (is_flag(f))
            out += fmt::format("{}={}", lever_name(f), v != 0 ? "on" : "off");
        else if (is_choice(f))
            out += fmt::format("{}={}", lever_name(f), m_written.at(f).at(v).to_string());
        else
            out += fmt::format("{}={}", f == Field::mbs ? "mbs" : lever_name(f), v);
    }
    return out;
}

sim::OracleResult run_gated_oracle(const ConfigSpace& space, const sim::World& world) {
    sim::LeverSpace levers = sim::lever_space(space.adapter());
    levers.etp_follows_tp = space.etp_follows_tp();
    levers.etp_below_tp = space.etp_below_tp();
    // Recompute and the MoE backend choices are enumerated as the space reads them back from the recipe
    // (torchtitan's selective is per-op checkpointing).
    for (const auto& d : space.dimensions()) {
        if (d.field == Field::recompute) levers.recompute.clear();
        for (const int v : d.options) {
            if (d.field == Field::recompute) levers.recompute.push_back(sim::Recompute(v));
            if (d.field == Field::dispatcher) levers.dispatcher.push_back(sim::Dispatcher(v));
            if (d.field == Field::moe_grouped_gemm) levers.moe_grouped_gemm.push_back(v != 0);
        }
    }
    const auto& in = space.inputs();
    return sim::run_oracle(world, in.hardware, in.model, in.layout, levers,
                           [&space](const sim::Layout& layout) { return space.admits(layout); });
}

std::optional<std::size_t> dimension_of(const ConfigSpace& space, Field field) {
    const auto& dims = space.dimensions();
    for (std::size_t i = 0; i < dims.size(); ++i)
        if (dims[i].field == field) return i;
    return std::nullopt;
}

std::optional<int> option_of(const ConfigSpace& space, const Point& point, Field field) {
    const auto d = dimension_of(space, field);
    return d ? std::optional<int>(space.dimensions()[*d].options[point[*d]]) : std::nullopt;
}

}  // namespace attune::policy
