#pragma once

#include <filesystem>

namespace attune {

/// The folder holding attune's data (`gate/`, `skills/`): $ATTUNE_DATA_DIR when set, else
/// `<prefix>/share/attune` next to an installed binary, else the source tree it was built from.
std::filesystem::path data_dir();

}  // namespace attune
