#include "core/block_hash.h"

#include <openssl/evp.h>

#include <stdexcept>
#include <vector>

namespace llmserve {
namespace {

// CBOR (RFC 8949) heads in their shortest form, as canonical encoding wants.
void append_head(std::vector<uint8_t> &out, uint8_t major, uint64_t value) {
  const uint8_t type = static_cast<uint8_t>(major << 5);
  if (value < 24) {
    out.push_back(type | static_cast<uint8_t>(value));
    return;
  }
  int bytes = value <= 0xff ? 1 : value <= 0xffff ? 2 : value <= 0xffffffffull ? 4 : 8;
  out.push_back(type | static_cast<uint8_t>(bytes == 1 ? 24 : bytes == 2 ? 25 : bytes == 4 ? 26 : 27));
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

constexpr uint8_t kUnsigned = 0, kText = 3, kArray = 4;
constexpr uint8_t kNull = 0xf6;

uint64_t last_8_bytes_of_sha256(const std::vector<uint8_t> &data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1 ||
      size != 32)
    throw std::runtime_error("BlockHasher: SHA-256 failed");
  uint64_t value = 0;
  for (unsigned i = 24; i < 32; ++i)
    value = value << 8 | digest[i];
  return value;
}

} // namespace

BlockHasher::BlockHasher(std::string_view seed) {
  std::vector<uint8_t> cbor;
  append_head(cbor, kText, seed.size());
  cbor.insert(cbor.end(), seed.begin(), seed.end());
  root_ = last_8_bytes_of_sha256(cbor);
}

uint64_t BlockHasher::chain(uint64_t parent, const int32_t *tokens, int32_t num_tokens) const {
  std::vector<uint8_t> cbor;
  cbor.reserve(16 + 5 * size_t(num_tokens));
  append_head(cbor, kArray, 3);
  append_head(cbor, kUnsigned, parent);
  append_head(cbor, kArray, static_cast<uint64_t>(num_tokens));
  for (int32_t i = 0; i < num_tokens; ++i) {
    if (tokens[i] < 0)
      throw std::invalid_argument("BlockHasher: negative token id " + std::to_string(tokens[i]));
    append_head(cbor, kUnsigned, static_cast<uint64_t>(tokens[i]));
  }
  cbor.push_back(kNull);
  return last_8_bytes_of_sha256(cbor);
}

} // namespace llmserve
