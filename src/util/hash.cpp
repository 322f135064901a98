#include <attune/util/hash.hpp>

#include <openssl/evp.h>

#include <array>
#include <stdexcept>

namespace attune::util {

std::string sha256_hex(std::string_view bytes) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("SHA-256 failed");
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += k_hex[digest[i] >> 4];
        out += k_hex[digest[i] & 0xF];
    }
    return out;
}

}  // namespace attune::util
