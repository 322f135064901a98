#include <attune/bench/generate.hpp>

#include <attune/cluster/cluster.hpp>
#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/policy/config_space.hpp>
#include <attune/recipe/document.hpp>
#include <attune/sim/from_recipe.hpp>
#include <attune/sim/oracle.hpp>
#include <attune/sim/world.hpp>
#include <attune/util/files.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <optional>
#include <random>

namespace attune::bench {

namespace {

namespace fs = std::filesystem;

// The issue's draw: three GPU generations, one to 32 nodes of eight, two sequence lengths.
constexpr std::array<std::string_view, 3> k_gpus{"h100", "h200", "b200"};
constexpr std::array<int, 6> k_nodes{1, 2, 4, 8, 16, 32};
constexpr std::array<int, 2> k_seq_lens{4096, 8192};
constexpr int k_gpus_per_node = 8;
constexpr double k_network_gbps_per_gpu = 400;  // AWS p5, p5e and p6-b200: 3200 Gbit/s EFA per node of 8
constexpr int k_tries_per_row = 200;             // draws before a row gives up (the catalogue cannot fill it)
constexpr std::uint64_t k_sibling_world = 0x9e3779b97f4a7c15;  // the vendor's cluster: another world, same hardware

/// A portable draw in [0, n): the engine is specified by the standard, the distributions are not.
std::size_t draw(std::mt19937_64& rng, std::size_t n) { return std::size_t(rng() % n); }

struct Template {
    fs::path file;
    gate::LoadedRecipe loaded;
};

std::vector<Template> load_templates() {
    const fs::path dir = data_dir() / "data" / "generate";
    std::vector<fs::path> files;
    if (fs::is_directory(dir))
        for (const auto& entry : fs::directory_iterator(dir))
            if (entry.is_regular_file() && recipe::is_recipe_file(entry.path())) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(fmt::format("{}: no recipe templates to generate a suite from", dir.string()));
    std::vector<Template> out;
    for (const auto& file : files) out.push_back({file, load_template(file)});
    return out;
}

/// A model the templates can write by keys alone: no latent attention, Mamba mixers, shared or
/// latent experts, leading dense layers or MTP heads.
bool writable(const model::Entry& entry) {
    const auto& s = entry.shape;
    return !entry.tokenizer_only && s.layers > 0 && s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0 &&
           s.vocab > 0 && s.gated_mlp && !s.mla && s.mamba_layers == 0 && s.attention_layers == 0 && s.shared_ffn == 0 &&
           s.moe_latent == 0 && s.dense_layers == 0 && s.mtp_layers == 0 && (s.experts == 0 || s.moe_ffn > 0);
}

/// The name a recipe gives the model: its Hugging Face id where the catalogue has one.
std::string model_id(const model::Entry& entry) {
    const auto id = std::find_if(entry.names.begin(), entry.names.end(),
                                 [](const std::string& n) { return n.find('/') != std::string::npos; });
    return id != entry.names.end() ? *id : entry.names.front();
}

/// The path a quantity is written at: the first the template writes as a value (not an
/// interpolation of another key), else the first the adapter reads.
std::optional<std::string> write_path(const recipe::Document& doc, const std::vector<std::string>& paths) {
    for (const auto& path : paths)
        if (const auto* leaf = doc.find_leaf(path); leaf && leaf->written.find("${") == std::string::npos) return path;
    if (paths.empty()) return std::nullopt;
    return paths.front();
}

struct Setting {
    const model::Entry* model = nullptr;
    std::string gpu;
    int nodes = 1;
    int seq_len = 4096;
    int gbs = 128;
};

const std::string& short_name(const Setting& s) { return s.model->names.front(); }

cluster::Cluster cluster_of(const std::string& gpu, int nodes) {
    cluster::Cluster c;
    c.name = fmt::format("{}-{}nodes", gpu, nodes);
    c.gpu = gpu;
    c.nodes = nodes;
    c.gpus_per_node = k_gpus_per_node;
    c.network_gbps_per_gpu = k_network_gbps_per_gpu;
    return c;
}

/// `doc` with one pipeline stage where the model's layers do not divide evenly over the stages it
/// writes and the framework splits evenly: the gate would take the uneven split as the recipe's own
/// stage sizes (it does not write them), and the framework would refuse it.
recipe::Document even_split(const recipe::Document& doc, const gate::Adapter& adapter, const cluster::Cluster& c, int layers) {
    const double pp = adapter.quantity(doc, "pp", c).value_or(1), vpp = adapter.quantity(doc, "vpp", c).value_or(1);
    if (adapter.quantity(doc, "uneven_stages", c).value_or(0) == 1 || layers % int(pp * vpp) == 0) return doc;
    const auto path = write_path(doc, adapter.quantity_paths("pp"));
    if (!path || vpp != 1)
        throw InputError(fmt::format("the template's split ({} x {} stages) does not divide {} layers", pp, vpp, layers));
    return doc.with_edits({{*path, recipe::Value::number(1), false}});
}

/// The template set to the setting's model, tokenizer, node count, sequence length and global batch.
recipe::Document row_document(const Template& t, const Setting& s) {
    const auto& adapter = *t.loaded.adapter;
    const auto& doc = t.loaded.document;
    const auto& shape = s.model->shape;
    std::vector<std::pair<std::string, int>> values{
        {"layers", shape.layers}, {"hidden", shape.hidden}, {"ffn", shape.ffn > 0 ? shape.ffn : shape.moe_ffn},
        {"heads", shape.heads},   {"kv_heads", shape.kv_heads}, {"nodes", s.nodes},
        {"gpus_per_node", k_gpus_per_node}, {"seq_len", s.seq_len}, {"gbs", s.gbs}};
    if (shape.head_dim > 0 && shape.head_dim * shape.heads != shape.hidden) values.emplace_back("head_dim", shape.head_dim);
    if (shape.experts > 0)
        values.insert(values.end(), {{"experts", shape.experts}, {"topk", shape.topk}, {"moe_ffn", shape.moe_ffn}});
    std::vector<recipe::Edit> edits;
    for (const auto& [name, value] : values)
        if (const auto path = write_path(doc, adapter.quantity_paths(name)))
            edits.push_back({*path, recipe::Value::number(value), false});
    for (const auto* keys : {&adapter.model_keys().names, &adapter.model_keys().tokenizers})
        if (const auto path = write_path(doc, *keys)) {
            edits.push_back({*path, recipe::Value::string(model_id(*s.model)), false});
            break;
        }
    return even_split(doc.with_edits(edits), adapter, cluster_of(s.gpu, s.nodes), shape.layers);
}

/// Whether a layout runs in `world` and the nominal estimate says so too (a user's recipe passes attune's
/// own preflight): consistent, and fits.
bool runs(const sim::SimInputs& in, const sim::Layout& layout, const sim::World& world) {
    const auto nominal = sim::estimate(in.hardware, in.model, layout);
    const auto e = world.measure(in.hardware, in.model, layout, 0, 0, false);
    return nominal.valid && nominal.fits && e.valid && e.fits;
}

/// A first draft: tp drawn among those inside the node that divide the heads, the fewest pipeline
/// stages (then expert ranks) that fit with every layer recomputed, micro batch 1, no overlaps,
/// all-gather dispatch and looped expert GEMMs.
std::optional<sim::Layout> draft_layout(const sim::SimInputs& in, const policy::ConfigSpace& space,
                                        const sim::World& world, std::mt19937_64& rng) {
    const auto& m = in.model;
    const int world_size = in.layout.nodes * in.layout.gpus_per_node;
    std::vector<int> tps;
    for (const int tp : {2, 4, 8})
        if (tp <= in.layout.gpus_per_node && m.heads % tp == 0 && m.kv_heads % tp == 0) tps.push_back(tp);
    if (tps.empty()) tps.push_back(1);
    sim::Layout l = in.layout;
    l.tp = tps[draw(rng, tps.size())];
    l.etp = l.tp;
    l.sequence_parallel = l.tp > 1;
    l.vpp = 1, l.cp = 1, l.mbs = 1;
    l.recompute = sim::Recompute::full, l.recompute_layers = 0;
    l.overlap_grad_reduce = false, l.overlap_param_gather = false, l.tp_comm_overlap = false;
    if (m.experts > 0) l.dispatcher = sim::Dispatcher::allgather, l.moe_grouped_gemm = false;
    for (int pp = 1; pp <= m.layers && pp <= 32; pp *= 2) {
        if (m.layers % pp != 0 || world_size % (l.tp * pp) != 0) continue;
        l.pp = pp;
        l.dp = world_size / (l.tp * pp);
        if (l.gbs % l.dp != 0 || l.gbs / l.dp < pp) continue;
        for (int ep = 1; ep <= std::max(1, m.experts); ep *= 2) {
            if (m.experts > 0 && (m.experts % ep != 0 || world_size % (ep * l.etp * pp) != 0)) continue;
            l.ep = ep;
            if (runs(in, l, world) && space.admits(l)) return l;
            if (m.experts == 0) break;
        }
    }
    return std::nullopt;
}

/// The best layout the gate allows in the space, in `world`.
sim::Layout best_layout(const policy::ConfigSpace& space, const sim::World& world) {
    return policy::run_gated_oracle(space, world).best;
}

/// `from`'s layout on this row's nodes: the same model-parallel split and micro batch, data
/// parallelism taking what the node count gives.
std::optional<sim::Layout> ported_here(sim::Layout from, const sim::SimInputs& here) {
    from.nodes = here.layout.nodes;
    from.gpus_per_node = here.layout.gpus_per_node;
    from.gbs = here.layout.gbs;
    const int world_size = from.nodes * from.gpus_per_node;
    if (world_size % (from.tp * from.pp * from.cp) != 0) return std::nullopt;
    from.dp = world_size / (from.tp * from.pp * from.cp);
    if (from.gbs % (from.mbs * from.dp) != 0) return std::nullopt;
    return from;
}

/// 200 GPU-h for every 64 GPUs, at least 200: a trial costs in proportion to the GPUs, so each row
/// affords about as many trials as the named suite's 8-node rows.
double row_budget_gpuh(const cluster::Cluster& c) {
    constexpr double k_gpuh_per_64_gpus = 200;
    return k_gpuh_per_64_gpus * std::max(1, c.nodes * c.gpus_per_node / 64);
}

std::string cluster_yaml(const cluster::Cluster& c) {
    return fmt::format(
        "# Written by attune bench --generate: {} nodes of {} x {}, {:.0f} Gbit/s scale-out per GPU (AWS p5, p5e, p6-b200).\n"
        "name: {}\ngpu: {}\nnodes: {}\ngpus_per_node: {}\nnetwork_gbps_per_gpu: {:.0f}\ntime_limit: \"00:30:00\"\n",
        c.nodes, c.gpus_per_node, c.gpu, *c.network_gbps_per_gpu, c.name, c.gpu, c.nodes, c.gpus_per_node,
        *c.network_gbps_per_gpu);
}

struct Row {
    std::string name, recipe_text, recipe_file;
    cluster::Cluster cluster;
    std::uint64_t world_seed = 0;
};

class Generator {
public:
    explicit Generator(std::uint64_t seed)
        : m_rng(seed), m_templates(load_templates()), m_gate_policy(gate::load_policy(data_dir(), std::nullopt)) {
        for (const auto& entry : model::Catalogue::shipped().entries())
            if (writable(entry)) m_models.push_back(&entry);
        if (m_models.empty()) throw InputError("the model catalogue has no model a generated recipe can write");
    }

    Row row(int index) {
        for (int attempt = 0; attempt < k_tries_per_row; ++attempt)
            if (auto r = try_row(index)) return std::move(*r);
        throw InputError(fmt::format("bench --generate: no recipe found for row {} in {} draws", index + 1, k_tries_per_row));
    }

private:
    std::optional<Row> try_row(int index) {
        const Template& t = m_templates[draw(m_rng, m_templates.size())];
        Setting s;
        s.model = m_models[draw(m_rng, m_models.size())];
        s.gpu = std::string(k_gpus[draw(m_rng, k_gpus.size())]);
        s.nodes = k_nodes[draw(m_rng, k_nodes.size())];
        s.seq_len = k_seq_lens[draw(m_rng, k_seq_lens.size())];
        s.gbs = std::clamp(64 * s.nodes, 128, 1024);  // about 0.5 to 8M tokens a step, as the published recipes run
        const auto kind = StartKind(index % 3);  // as many of each kind
        const std::uint64_t world_seed = m_rng() & 0xffffffffU;
        const sim::World world(world_seed);
        const auto cluster = cluster_of(s.gpu, s.nodes);
        try {
            const auto base = row_document(t, s);
            const auto& adapter = *t.loaded.adapter;
            const auto in = sim::from_recipe(base, adapter, cluster);
            const policy::ConfigSpace space(base, adapter, cluster, gate::default_rules(), m_gate_policy);
            const auto draft = draft_layout(in, space, world, m_rng);
            if (!draft) {
                spdlog::debug("generate: {} on {} x {} has no draft that fits; drawn again", short_name(s), s.nodes, s.gpu);
                return std::nullopt;
            }
            std::optional<sim::Layout> layout = draft;
            if (kind == StartKind::vendor) layout = best_layout(space, sim::World(world_seed ^ k_sibling_world));
            if (kind == StartKind::ported) layout = ported_layout(t, s, in);
            if (!layout || !space.admits(*layout)) {
                spdlog::debug("generate: {} on {} x {}: no {} layout the gate allows; drawn again", short_name(s), s.nodes, s.gpu, kind_name(kind));
                return std::nullopt;
            }
            const auto recipe = base.with_edits(policy::edit_list(space.changes(*layout)));
            // The recipe as written is what must run (a companion the family does not write, such as
            // sequence parallelism in a script without the flag, is not in it).
            if (const auto written = sim::from_recipe(recipe, adapter, cluster); !runs(written, written.layout, world)) {
                spdlog::debug("generate: {} on {} x {}: the {} recipe does not fit; drawn again", short_name(s), s.nodes, s.gpu, kind_name(kind));
                return std::nullopt;
            }
            Row r;
            r.name = fmt::format("g{:02} {} {} {}x{} {} ({})", index + 1, short_name(s), s.gpu, s.nodes, k_gpus_per_node, kind_name(kind),
                                 adapter.name());
            r.recipe_file = fmt::format("g{:02}-{}-{}-{}n-{}{}", index + 1, short_name(s), s.gpu, s.nodes, kind_name(kind),
                                        t.file.extension().string());
            r.recipe_text = recipe.text();
            r.cluster = cluster;
            r.world_seed = world_seed;
            return r;
        } catch (const InputError& e) {
            spdlog::debug("generate: {} on {} x {} from {}: {}; drawn again", short_name(s), s.nodes, s.gpu, t.file.filename().string(), e.what());
            return std::nullopt;
        }
    }

    /// The best layout for the same model on another GPU, or on half or twice the nodes, if it fits here.
    std::optional<sim::Layout> ported_layout(const Template& t, Setting s, const sim::SimInputs& here) {
        std::string gpu = s.gpu;
        if (draw(m_rng, 2) == 0) {
            while (gpu == s.gpu) gpu = std::string(k_gpus[draw(m_rng, k_gpus.size())]);
        } else {
            s.nodes = draw(m_rng, 2) == 0 && s.nodes > 1 ? s.nodes / 2 : s.nodes * 2;  // the same global batch
        }
        const auto cluster = cluster_of(gpu, s.nodes);
        const auto there = row_document(t, s);
        const policy::ConfigSpace space(there, *t.loaded.adapter, cluster, gate::default_rules(), m_gate_policy);
        return ported_here(best_layout(space, sim::World(m_rng() & 0xffffffffU)), here);
    }

    std::mt19937_64 m_rng;
    std::vector<Template> m_templates;
    gate::Policy m_gate_policy;
    std::vector<const model::Entry*> m_models;
};

}  // namespace

gate::LoadedRecipe load_template(const fs::path& file) {
    auto loaded = gate::load_recipe(file, gate::default_rules());
    for (const auto& leaf : loaded.document.leaves())
        if (!loaded.adapter->classify(leaf.path))
            throw InputError(fmt::format("{}:{}: '{}' is no key the {} adapter classifies; a template may hold only keys its family reads",
                                         file.string(), leaf.mark.line, leaf.path, loaded.adapter->name()));
    return loaded;
}

std::string kind_name(StartKind kind) {
    switch (kind) {
        case StartKind::vendor: return "vendor";
        case StartKind::ported: return "ported";
        case StartKind::draft: return "draft";
    }
    return "draft";
}

std::vector<SuiteEntry> generate_suite(int rows, std::uint64_t seed, const fs::path& dir) {
    if (rows < 1) throw InputError(fmt::format("--generate {}: expected a number of rows, at least 1", rows));
    Generator generator(seed);
    fs::create_directories(dir / "clusters");
    std::string manifest = fmt::format("# attune bench --generate {} --seed {}: {} rows drawn from the model catalogue "
                                       "(docs/benchmarks.md, \"A generated suite\").\n",
                                       rows, seed, rows);
    std::vector<SuiteEntry> suite;
    for (int i = 0; i < rows; ++i) {
        const Row r = generator.row(i);
        const fs::path cluster_file = dir / "clusters" / (r.cluster.name + ".yaml");
        util::write_file_atomically(cluster_file, cluster_yaml(r.cluster));
        util::write_file_atomically(dir / r.recipe_file, r.recipe_text);
        const double budget_gpuh = row_budget_gpuh(r.cluster);
        manifest += fmt::format("- {{recipe: {}, cluster: clusters/{}.yaml, name: \"{}\", world_seed: {}, budget: {:g}gpuh}}\n",
                                r.recipe_file, r.cluster.name, r.name, r.world_seed, budget_gpuh);
        suite.push_back({r.name, dir / r.recipe_file, cluster_file, std::nullopt, r.world_seed, budget_gpuh * 3600});
    }
    util::write_file_atomically(dir / "suite.yaml", manifest);
    return suite;
}

}  // namespace attune::bench
