#include <attune/util/data_file.hpp>

#include <attune/util/files.hpp>
#include <attune/util/strings.hpp>

#include <algorithm>

namespace attune::util {

DataFile::DataFile(const std::filesystem::path& path) : DataFile(path, util::read_text_file(path, 4u << 20), 1) {}

DataFile::DataFile(const std::filesystem::path& path, std::string text, int first_line)
    : m_path(path.string()), m_text(std::move(text)), m_first_line(first_line) {
    try {
        m_root = YAML::Load(m_text);
    } catch (const YAML::Exception& e) {
        throw InputError(m_path + ":" + std::to_string(e.mark.line + m_first_line) + ": malformed YAML: " + e.msg);
    }
    if (!m_root.IsMap()) throw InputError(m_path + ":" + std::to_string(m_first_line) + ": expected a YAML mapping");
}

std::string DataFile::where(const YAML::Node& node) const {
    return m_path + ":" + std::to_string(node.Mark().line + m_first_line);
}

void DataFile::fail(const YAML::Node& node, const std::string& what) const {
    throw InputError(where(node) + ": " + what);
}

namespace {

/// `; did you mean 'x'?` when a name is close, else the list of names.
std::string suggestion_for(const std::string& text, const std::vector<std::string>& names) {
    const auto suggestion = util::closest_match(text, names);
    return suggestion ? "; did you mean '" + *suggestion + "'?" : "; expected one of " + util::join(names, ", ");
}

}  // namespace

void DataFile::expect_fields(const YAML::Node& mapping, std::initializer_list<const char*> allowed) const {
    if (!mapping.IsMap()) fail(mapping, "expected a mapping");
    const std::vector<std::string> names(allowed.begin(), allowed.end());
    for (const auto& item : mapping) {
        const auto key = item.first.Scalar();
        if (std::find(names.begin(), names.end(), key) == names.end())
            fail(item.first, "unknown field '" + key + "'" + suggestion_for(key, names));
    }
}

std::size_t DataFile::one_of(const YAML::Node& node, const std::string& what, const std::vector<std::string>& names) const {
    const auto text = string(node, what);
    const auto found = std::find(names.begin(), names.end(), text);
    if (found == names.end()) fail(node, what + " '" + text + "' is not known" + suggestion_for(text, names));
    return std::size_t(found - names.begin());
}

std::string DataFile::string(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) fail(node, "'" + what + "' must be a string");
    return node.Scalar();
}

std::vector<std::string> DataFile::strings(const YAML::Node& node, const std::string& what) const {
    std::vector<std::string> out;
    if (!node || node.IsNull()) return out;
    if (node.IsScalar()) return {node.Scalar()};
    if (!node.IsSequence()) fail(node, "'" + what + "' must be a list of strings");
    for (const auto& item : node) out.push_back(string(item, what));
    return out;
}

double DataFile::number(const YAML::Node& node, const std::string& what) const {
    const auto value = node.IsScalar() ? util::parse_number(node.Scalar()) : std::nullopt;
    if (!value) fail(node, "'" + what + "' must be a number");
    return *value;
}

bool DataFile::boolean(const YAML::Node& node, const std::string& what) const {
    const auto text = node.IsScalar() ? util::to_lower(node.Scalar()) : std::string();
    if (text == "true" || text == "yes") return true;
    if (text == "false" || text == "no") return false;
    fail(node, "'" + what + "' must be true or false");
}

}  // namespace attune::util
