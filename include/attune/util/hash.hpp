#pragma once

#include <string>
#include <string_view>

namespace attune::util {

/// Lower-case hexadecimal SHA-256 of the bytes.
std::string sha256_hex(std::string_view bytes);

}  // namespace attune::util
