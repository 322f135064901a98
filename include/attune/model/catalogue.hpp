#pragma once
// The model's identity: the catalogue of known models and tokenizers (gate/models.yaml), Hugging
// Face config.json files, and how a name a recipe carries resolves to a shape.

#include <attune/model/shape.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attune::model {

/// One model or tokenizer of the catalogue.
struct Entry {
    std::vector<std::string> names;  ///< as the file writes them; the first is the short key
    std::string source;              ///< where the shape was published
    std::string where;               ///< `file:line` of the entry
    ModelShape shape;                ///< a tokenizer sets only the vocabulary
    bool tokenizer_only = false;
};

/// The models and tokenizers attune knows by name.
class Catalogue {
public:
    /// Reads a catalogue file; throws InputError with `file:line: what was expected`.
    static Catalogue load(const std::filesystem::path& path);
    /// The catalogue attune ships (gate/models.yaml in its data folder), loaded once.
    static const Catalogue& shipped();

    /// The entry a name refers to, or nullptr. Case-insensitive; an `org/Name` id or a path also
    /// by its last component, and a name with a variant suffix (`-Instruct`) by the name without it.
    /// `models_only` leaves out the tokenizers that are no model of their own.
    [[nodiscard]] const Entry* find(std::string_view name, bool models_only = false) const;
    /// The catalogued name closest to `name`, for a did-you-mean.
    [[nodiscard]] std::optional<std::string> closest(std::string_view name) const;
    [[nodiscard]] const std::vector<Entry>& entries() const { return m_entries; }
    /// The file's bytes (a gate's judgement depends on them, so the rules hash covers them).
    [[nodiscard]] const std::string& text() const { return m_text; }

private:
    const Entry* lookup(const std::string& normalised) const;

    std::vector<Entry> m_entries;
    std::unordered_map<std::string, std::size_t> m_by_name;  ///< normalised names and unambiguous last components
    std::vector<std::string> m_suffixes;
    std::string m_text;
};

/// The shape in a Hugging Face `config.json` (num_hidden_layers, hidden_size, intermediate_size,
/// attention heads, KV heads, vocab_size, head_dim, and the MoE and MLA fields where present).
/// Throws InputError naming the file and the field when it cannot be read.
ModelShape from_config(const std::filesystem::path& config_json);

/// What a name a recipe carries resolves to.
struct Identity {
    ModelShape shape;
    std::string source;  ///< the config.json read, or the catalogue entry's name
};

/// A name as a local model folder with a config.json (or a .json file), as given or relative to
/// `base`; else as a catalogue entry (`models_only`: not a bare tokenizer). Nullopt when neither.
/// Local folders and files are looked up and read once per process.
std::optional<Identity> resolve(std::string_view name, const std::filesystem::path& base, const Catalogue& catalogue,
                                bool models_only);

}  // namespace attune::model
