// Every key of every data file attune ships (gate/, skills/, data/) is either read or refused when the
// file loads: a key nothing reads would let a user edit it and see nothing change. Each mapping of
// each file gets an extra key, and its loader must refuse it, naming the file and the line.
#include <attune/bench/generate.hpp>
#include <attune/core/error.hpp>
#include <attune/diagnose/diagnosis.hpp>
#include <attune/gate/adapter.hpp>
#include <attune/gate/policy.hpp>
#include <attune/model/catalogue.hpp>
#include <attune/policy/search_rules.hpp>
#include <attune/sim/calibration.hpp>
#include <attune/sim/model.hpp>
#include <attune/util/files.hpp>

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <set>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace attune;

namespace {

const fs::path k_source = ATTUNE_SOURCE_DIR;
constexpr const char* k_unread = "zz_not_a_key";

/// A mapping of the file: where it is (for the message) and where its first key starts.
struct Mapping {
    std::string path;
    YAML::Mark mark;
};

void collect(const YAML::Node& node, const std::string& path, std::vector<Mapping>& out) {
    if (node.IsMap()) {
        out.push_back({path, node.Mark()});
        for (const auto& item : node) collect(item.second, path + "." + item.first.Scalar(), out);
    } else if (node.IsSequence()) {
        for (std::size_t i = 0; i < node.size(); ++i) collect(node[i], fmt::format("{}[{}]", path, i), out);
    }
}

/// The text with `zz_not_a_key: 1` added as the first key of the mapping at `mark`.
std::string with_unread_key(const std::string& text, const YAML::Mark& mark) {
    const auto at = static_cast<std::size_t>(mark.pos);
    if (text[at] == '{') return text.substr(0, at + 1) + k_unread + ": 1, " + text.substr(at + 1);
    return text.substr(0, at) + k_unread + ": 1\n" + std::string(static_cast<std::size_t>(mark.column), ' ') + text.substr(at);
}

/// The mappings whose keys are names the file defines (a quantity's value map, the keys a move
/// sets with it, adjusts or requires): any name is a legitimate key there.
bool open_mapping(const std::string& path) {
    static const std::regex open(R"(.*\.(map|with|adjust|requires)$)");
    return std::regex_match(path, open);
}

struct DataFileCase {
    std::string file;                                       ///< relative to the source tree
    std::function<void(const fs::path& data_dir)> load;     ///< loads the copy of `file` under data_dir
};

void PrintTo(const DataFileCase& c, std::ostream* os) { *os << c.file; }

std::vector<DataFileCase> data_files() {
    std::vector<DataFileCase> cases;
    for (const auto& entry : fs::directory_iterator(k_source / "gate" / "frameworks")) {
        const auto name = "gate/frameworks/" + entry.path().filename().string();
        cases.push_back({name, [name](const fs::path& dir) { (void)gate::Adapter::load(dir / name); }});
    }
    cases.push_back({"gate/models.yaml", [](const fs::path& dir) { (void)model::Catalogue::load(dir / "gate/models.yaml"); }});
    cases.push_back({"data/hardware.yaml", [](const fs::path& dir) { (void)sim::load_hardware(dir / "data/hardware.yaml"); }});
    cases.push_back({"data/calibration/recipes.yaml", [](const fs::path& dir) {
                         (void)sim::calibrate_through_recipes({}, dir / "data/calibration/recipes.yaml");
                     }});
    cases.push_back({"gate/invariants.yaml", [](const fs::path& dir) { (void)gate::Rules::load(dir); }});
    cases.push_back({"gate/policy.default.yaml", [](const fs::path& dir) { (void)gate::load_policy(dir, std::nullopt); }});
    cases.push_back({"skills/rules/search.yaml", [](const fs::path& dir) { (void)policy::SearchRules::load(dir / "skills/rules/search.yaml"); }});
    cases.push_back({"skills/diagnosis.yaml", [](const fs::path& dir) { (void)diagnose::load_rules(dir / "skills/diagnosis.yaml"); }});
    return cases;
}

class ShippedDataFile : public ::testing::TestWithParam<DataFileCase> {
protected:
    void SetUp() override {
        m_dir = fs::temp_directory_path() / fmt::format("attune-data-files-{}", ::getpid());
        fs::remove_all(m_dir);
        fs::create_directories(m_dir / "skills" / "rules");
        fs::create_directories(m_dir / "data" / "calibration");
        fs::copy(k_source / "gate", m_dir / "gate", fs::copy_options::recursive);
    }
    void TearDown() override { fs::remove_all(m_dir); }

    void write(const std::string& file, const std::string& text) const { std::ofstream(m_dir / file, std::ios::binary) << text; }

    fs::path m_dir;
};

}  // namespace

TEST(ShippedDataFiles, EveryDataFileOfGateSkillsAndDataIsCovered) {
    std::set<std::string> covered;
    for (const auto& c : data_files()) covered.insert(c.file);
    for (const auto* folder : {"gate", "skills", "data"})
        for (const auto& entry : fs::recursive_directory_iterator(k_source / folder))
            if (entry.path().extension() == ".yaml" && entry.path().parent_path() != k_source / "data" / "generate")
                EXPECT_TRUE(covered.count(fs::relative(entry.path(), k_source).string()))
                    << entry.path() << " is a data file no loader test covers";
}

TEST_P(ShippedDataFile, LoadsAsShippedAndRefusesAKeyNothingReads) {
    const auto& param = GetParam();
    const auto text = util::read_text_file(k_source / param.file);
    write(param.file, text);
    ASSERT_NO_THROW(param.load(m_dir)) << param.file << " as shipped";

    std::vector<Mapping> mappings;
    collect(YAML::Load(text), "", mappings);
    int checked = 0;
    for (const auto& mapping : mappings) {
        if (open_mapping(mapping.path)) continue;
        write(param.file, with_unread_key(text, mapping.mark));
        const auto where = fmt::format("{}:{}:", (m_dir / param.file).string(), mapping.mark.line + 1);
        try {
            param.load(m_dir);
            ADD_FAILURE() << param.file << ": a key '" << k_unread << "' in the mapping at line " << mapping.mark.line + 1
                          << " (" << (mapping.path.empty() ? "the top level" : mapping.path) << ") was neither read nor refused";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what() << "\nexpected it to start at " << where;
            EXPECT_NE(std::string(e.what()).find(k_unread), std::string::npos) << e.what();
        }
        ++checked;
    }
    EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Gate, ShippedDataFile, ::testing::ValuesIn(data_files()),
                         [](const auto& info) {
                             auto name = info.param.file;
                             for (auto& c : name) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

// The recipe templates of `bench --generate` are recipes: the gate classifies their keys (a section the
// family leaves open, such as NeMo's `run.**`, takes any key), and a key it does not classify is refused.
TEST(GenerateTemplates, EveryTemplateLoadsAndAKeyItsFamilyDoesNotClassifyIsRefusedWithItsLine) {
    // Where each format gets a key added: the YAML recipe's model section, the launch script's MODEL_ARGS.
    const std::vector<std::pair<std::string, std::string>> sections{{"\nmodel:\n", std::string("  ") + k_unread + ": 1\n"},
                                                                    {"\nMODEL_ARGS=(\n", std::string("    --") + k_unread + " 1\n"}};
    int templates = 0;
    for (const auto& entry : fs::directory_iterator(k_source / "data" / "generate")) {
        ++templates;
        ASSERT_NO_THROW((void)bench::load_template(entry.path())) << entry.path();
        const auto text = util::read_text_file(entry.path());
        const auto section = std::find_if(sections.begin(), sections.end(), [&](const auto& s) { return text.find(s.first) != std::string::npos; });
        ASSERT_NE(section, sections.end()) << entry.path() << ": the test knows no section of it to add a key to";
        const auto at = text.find(section->first) + section->first.size();
        const auto dir = fs::temp_directory_path() / fmt::format("attune-template-{}", ::getpid());
        fs::create_directories(dir);
        const auto copy = dir / entry.path().filename();
        std::ofstream(copy) << text.substr(0, at) << section->second << text.substr(at);
        const int line = int(std::count(text.begin(), text.begin() + std::ptrdiff_t(at), '\n')) + 1;
        try {
            (void)bench::load_template(copy);
            ADD_FAILURE() << entry.path() << ": " << k_unread << " was not refused";
        } catch (const InputError& e) {
            EXPECT_NE(std::string(e.what()).find(fmt::format("{}:{}:", copy.string(), line)), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(k_unread), std::string::npos) << e.what();
        }
        fs::remove_all(dir);
    }
    EXPECT_GE(templates, 2);
}
