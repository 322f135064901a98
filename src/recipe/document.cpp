#include <attune/core/error.hpp>
#include <attune/recipe/document.hpp>
#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include "resolver.hpp"
#include "tree.hpp"

#include <algorithm>

namespace attune::recipe {

namespace {

// Recipes are small; anything this large is not one.
constexpr std::size_t k_max_recipe_bytes = 16u << 20;

}  // namespace

Format format_of(const std::filesystem::path& path) {
    const auto extension = util::to_lower(path.extension().string());
    if (extension == ".json") return Format::json;
    if (extension == ".toml") return Format::toml;
    if (extension == ".sh" || extension == ".bash") return Format::shell;
    return Format::yaml;
}

bool is_recipe_file(const std::filesystem::path& path) {
    const auto extension = util::to_lower(path.extension().string());
    return extension == ".yaml" || extension == ".yml" || extension == ".json" || extension == ".toml" || extension == ".sh" ||
           extension == ".bash";
}

std::string extension_of(Format format) {
    switch (format) {
        case Format::json: return ".json";
        case Format::toml: return ".toml";
        case Format::shell: return ".sh";
        case Format::yaml: break;
    }
    return ".yaml";
}

Document::Document(std::string text, std::string origin, std::vector<std::string> env_sections, std::string launcher_package)
    : m_text(std::move(text)), m_origin(std::move(origin)), m_format(format_of(m_origin)),
      m_env_sections(std::move(env_sections)), m_launcher_package(std::move(launcher_package)) {
    // JSON is YAML's flow style: the YAML reader reads it, with its positions and duplicate keys.
    auto tree = std::make_shared<Tree>(m_format == Format::toml    ? read_toml(m_text, m_origin)
                                       : m_format == Format::shell ? read_shell(m_text, m_origin)
                                                                   : read_yaml(m_text, m_origin));
    if (m_format == Format::yaml) compose_defaults(*tree, m_origin, m_launcher_package);
    m_duplicates = tree->duplicates;
    m_leaves = flatten_and_resolve(tree->root, m_env_sections, m_origin);
    m_tree = std::move(tree);
}

const std::vector<BaseConfig>& Document::base_configs() const { return m_tree->bases; }
const std::vector<MissingDefault>& Document::missing_defaults() const { return m_tree->missing_defaults; }

Document::~Document() = default;
Document::Document(const Document&) = default;
Document& Document::operator=(const Document&) = default;
Document::Document(Document&&) noexcept = default;
Document& Document::operator=(Document&&) noexcept = default;

Document Document::load(const std::filesystem::path& path, const std::vector<std::string>& env_sections) {
    return Document(util::read_text_file(path, k_max_recipe_bytes), path.string(), env_sections);
}

Document Document::parse(std::string text, std::string origin, const std::vector<std::string>& env_sections) {
    return Document(std::move(text), std::move(origin), env_sections);
}

Document Document::with_env_sections(const std::vector<std::string>& env_sections) const {
    Document document(m_text, m_origin, env_sections, m_launcher_package);
    document.m_model_config = m_model_config;
    return document;
}

Document Document::with_launcher_package(std::string package) const {
    Document document(m_text, m_origin, m_env_sections, std::move(package));
    document.m_model_config = m_model_config;
    return document;
}

Document Document::with_model_config(std::filesystem::path config_json) const {
    Document document = *this;
    document.m_model_config = std::move(config_json);
    return document;
}

bool is_any_section(std::string_view path) { return path.starts_with("*.") && is_key_path(path.substr(2)); }

bool is_key_path(std::string_view pattern) {
    if (pattern.starts_with("*.")) pattern.remove_prefix(2);
    return pattern.find('*') == std::string_view::npos;
}

namespace {

std::string_view section_of(std::string_view path) { return path.substr(0, path.find('.')); }

/// The part of a path below its section: `--num-layers` of `MODEL_ARGS.--num-layers`.
std::string_view below_section(std::string_view path) {
    const auto dot = path.find('.');
    return dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
}

}  // namespace

std::string Document::placed(std::string_view path) const {
    if (!is_any_section(path)) return std::string(path);
    if (const Leaf* leaf = find_leaf(path)) return leaf->path;
    // A new key goes where most of the recipe's keys are (TRAINING_ARGS, MODEL_ARGS), never into
    // an environment section.
    std::vector<std::pair<std::string_view, int>> sizes;
    for (const Leaf& leaf : m_leaves) {
        const auto section = section_of(leaf.path);
        if (section == leaf.path || std::find(m_env_sections.begin(), m_env_sections.end(), section) != m_env_sections.end())
            continue;
        auto found = std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == section; });
        if (found == sizes.end()) sizes.emplace_back(section, 1);
        else ++found->second;
    }
    const auto largest = std::max_element(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (largest == sizes.end())
        throw InputError(m_origin + ": no section to write " + std::string(path.substr(2)) + " in; add it by hand");
    return std::string(largest->first) + "." + std::string(path.substr(2));
}

const Leaf* Document::find_leaf(std::string_view path) const {
    const bool any_section = is_any_section(path);
    const auto found = std::find_if(m_leaves.begin(), m_leaves.end(), [&](const Leaf& leaf) {
        return any_section ? below_section(leaf.path) == path.substr(2) : leaf.path == path;
    });
    return found == m_leaves.end() ? nullptr : &*found;
}

const Value* Document::find(std::string_view path) const {
    const Leaf* leaf = find_leaf(path);
    return leaf == nullptr ? nullptr : &leaf->value;
}

bool Document::has(std::string_view path) const {
    if (is_any_section(path))
        return std::any_of(m_leaves.begin(), m_leaves.end(), [&](const Leaf& leaf) {
            const auto below = below_section(leaf.path);
            const auto rest = path.substr(2);
            return below.starts_with(rest) && (below.size() == rest.size() || below[rest.size()] == '.' || below[rest.size()] == '[');
        });
    return find_node(m_tree->root, path) != nullptr;
}

Edit parse_override(std::string_view text, std::string_view origin) {
    const auto trimmed = util::trim(text);
    Edit edit;
    std::string_view body = trimmed;
    if (body.starts_with("++")) {
        body.remove_prefix(2);
    } else if (body.starts_with("+")) {
        edit.create = true;
        body.remove_prefix(1);
    } else if (body.starts_with("~")) {
        throw InputError(std::string(origin) + ": '" + std::string(trimmed) +
                         "': deleting a key (~key) is not supported; expected key=value or +key=value");
    }
    const auto equals = body.find('=');
    const auto key = util::trim(body.substr(0, equals));
    if (equals == std::string_view::npos || key.empty() ||
        key.find_first_of(" \t=") != std::string_view::npos)
        throw InputError(std::string(origin) + ": '" + std::string(trimmed) +
                         "': expected a hydra override key=value or +key=value");
    edit.path = std::string(key);
    auto value = util::trim(body.substr(equals + 1));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
        edit.value = Value::string(std::string(value.substr(1, value.size() - 2)));
    else
        edit.value = Value::from_plain(value);
    return edit;
}

}  // namespace attune::recipe
