#include <attune/core/error.hpp>
#include <attune/core/paths.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/util/data_file.hpp>
#include <attune/util/strings.hpp>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <mutex>
#include <set>

namespace attune::model {
namespace {

using util::DataFile;

std::string normalise(std::string_view name) {
    std::string lowered = util::to_lower(util::trim(name));
    while (lowered.size() > 1 && lowered.back() == '/') lowered.pop_back();
    return lowered;
}

std::string last_component(const std::string& name) {
    const auto slash = name.rfind('/');
    return slash == std::string::npos ? std::string() : name.substr(slash + 1);
}

void read_shape(const DataFile& file, const YAML::Node& node, ModelShape& shape) {
    if (!node.IsMap()) file.fail(node, "'shape' must map shape fields to numbers");
    const auto names = field_names();
    for (const auto& item : node) {
        const std::string key = names[file.one_of(item.first, "shape field", names)];
        const bool flag = key == "gated_mlp" || key == "mla";
        const double value = flag ? (file.boolean(item.second, key) ? 1 : 0) : file.number(item.second, key);
        if (value < 0 || value != std::floor(value)) file.fail(item.second, "'" + key + "' must be a whole number, at least 0");
        set_field(shape, key, value);
    }
    for (const char* required : {"layers", "hidden", "heads", "vocab"})
        if (!node[required] || *field(shape, required) <= 0) file.fail(node, fmt::format("the shape needs '{}' above 0", required));
    if (!node["kv_heads"]) shape.kv_heads = shape.heads;
}

Entry read_entry(const DataFile& file, const YAML::Node& node, bool tokenizer) {
    if (!node.IsMap()) file.fail(node, "expected a mapping with names, source and " + std::string(tokenizer ? "vocab" : "shape"));
    if (tokenizer) file.expect_fields(node, {"names", "source", "vocab"});
    else file.expect_fields(node, {"names", "source", "shape"});
    Entry entry;
    entry.names = file.strings(node["names"], "names");
    if (entry.names.empty()) file.fail(node, "an entry needs at least one name");
    entry.source = file.string(node["source"], "source");
    entry.where = file.where(node);
    entry.tokenizer_only = tokenizer;
    if (tokenizer) {
        const double vocab = file.number(node["vocab"], "vocab");
        if (vocab < 1 || vocab != std::floor(vocab)) file.fail(node["vocab"], "'vocab' must be a whole number above 0");
        entry.shape.vocab = int(vocab);
    } else {
        if (!node["shape"]) file.fail(node, "a model needs 'shape'");
        read_shape(file, node["shape"], entry.shape);
    }
    return entry;
}

}  // namespace

Catalogue Catalogue::load(const std::filesystem::path& path) {
    const DataFile file(path);
    Catalogue catalogue;
    catalogue.m_text = file.text();
    file.expect_fields(file.root(), {"variant_suffixes", "models", "tokenizers"});
    for (const auto& suffix : file.strings(file.root()["variant_suffixes"], "variant_suffixes"))
        catalogue.m_suffixes.push_back(normalise(suffix));
    for (const char* section : {"models", "tokenizers"}) {
        const auto list = file.root()[section];
        if (list && !list.IsSequence()) file.fail(list, std::string("'") + section + "' must be a list of entries");
        for (const auto& node : list) {
            catalogue.m_entries.push_back(read_entry(file, node, std::string_view(section) == "tokenizers"));
            for (const auto& name : catalogue.m_entries.back().names) {
                const auto [at, inserted] = catalogue.m_by_name.emplace(normalise(name), catalogue.m_entries.size() - 1);
                if (!inserted) file.fail(node, "name '" + name + "' is also given at " + catalogue.m_entries[at->second].where);
            }
        }
    }
    // A repository's last component names the model too (`Qwen3-32B`, a local `/models/Qwen3-32B`),
    // unless two entries share it.
    std::map<std::string, std::set<std::size_t>> parts;
    for (std::size_t i = 0; i < catalogue.m_entries.size(); ++i)
        for (const auto& name : catalogue.m_entries[i].names)
            if (const auto part = last_component(normalise(name)); !part.empty()) parts[part].insert(i);
    for (const auto& [part, owners] : parts)
        if (owners.size() == 1) catalogue.m_by_name.emplace(part, *owners.begin());
    return catalogue;
}

const Catalogue& Catalogue::shipped() {
    static const Catalogue catalogue = load(data_dir() / "gate" / "models.yaml");
    return catalogue;
}

const Entry* Catalogue::lookup(const std::string& normalised) const {
    const auto found = m_by_name.find(normalised);
    return found == m_by_name.end() ? nullptr : &m_entries[found->second];
}

const Entry* Catalogue::find(std::string_view name, bool models_only) const {
    std::vector<std::string> candidates{normalise(name)};
    if (const auto part = last_component(candidates.front()); !part.empty()) candidates.push_back(part);
    for (std::size_t i = 0; i < candidates.size(); ++i)
        for (const auto& suffix : m_suffixes)
            if (candidates[i].size() > suffix.size() && candidates[i].ends_with(suffix))
                candidates.push_back(candidates[i].substr(0, candidates[i].size() - suffix.size()));
    for (const auto& candidate : candidates)
        if (const auto* entry = lookup(candidate); entry != nullptr && !(models_only && entry->tokenizer_only)) return entry;
    return nullptr;
}

std::optional<std::string> Catalogue::closest(std::string_view name) const {
    std::vector<std::string> names;
    for (const auto& entry : m_entries) names.insert(names.end(), entry.names.begin(), entry.names.end());
    return util::closest_match(name, names);
}

namespace {

/// The model a local folder (with a config.json) or .json file called `name` describes, as given or
/// relative to `base`. Looked up once per process: the answer is asked for at every quantity a gate
/// check or an estimate reads, and the file system does not change under a campaign's recipe.
std::optional<Identity> local_model(std::string_view name, const std::filesystem::path& base) {
    namespace fs = std::filesystem;
    static std::mutex mutex;
    static std::map<std::pair<std::string, fs::path>, std::optional<Identity>> known;
    const std::lock_guard lock(mutex);
    const auto key = std::make_pair(std::string(name), base);
    if (const auto found = known.find(key); found != known.end()) return found->second;
    std::optional<Identity> identity;
    for (const fs::path& folder : {fs::path{}, base}) {
        fs::path candidate = folder / std::string(name);
        std::error_code error;
        if (fs::is_directory(candidate, error) && fs::is_regular_file(candidate / "config.json", error)) candidate /= "config.json";
        else if (candidate.extension() != ".json" || !fs::is_regular_file(candidate, error)) continue;
        identity = Identity{from_config(candidate), candidate.string()};
        break;
    }
    known.emplace(key, identity);
    return identity;
}

}  // namespace

std::optional<Identity> resolve(std::string_view name, const std::filesystem::path& base, const Catalogue& catalogue,
                                bool models_only) {
    if (auto local = local_model(name, base)) return local;
    if (const auto* entry = catalogue.find(name, models_only)) return Identity{entry->shape, entry->names.front()};
    return std::nullopt;
}

}  // namespace attune::model
