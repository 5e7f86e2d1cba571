#include "support/safetensors_writer.h"

#include "model/dtype.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace llmserve {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw std::runtime_error(path + ": " + what);
}

[[noreturn]] void fail_tensor(const std::string &path, const std::string &name,
                              const std::string &what) {
  fail(path, "tensor '" + name + "': " + what);
}

} // namespace

void write_safetensors(const std::string &path,
                       const std::vector<TensorView> &tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const TensorView &t : tensors) {
    if (t.name == "__metadata__" || header.contains(t.name))
      fail_tensor(path, t.name, "duplicate or reserved tensor name");
    int64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        fail_tensor(path, t.name, "negative dimension " + std::to_string(d));
      numel *= d;
    }
    if (static_cast<uint64_t>(numel) * dtype_size(t.dtype) != t.nbytes)
      fail_tensor(path, t.name,
                  std::to_string(t.nbytes) + " bytes do not match its shape");
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  // The header is padded with spaces so the data section starts 8-aligned.
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = path + ".tmp";
  FILE *out = std::fopen(tmp.c_str(), "wb");
  if (!out)
    fail(tmp, std::string("cannot create: ") + std::strerror(errno));
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(length, 1, 8, out) == 8 &&
            std::fwrite(text.data(), 1, text.size(), out) == text.size();
  for (const TensorView &t : tensors)
    ok = ok && std::fwrite(t.data, 1, t.nbytes, out) == t.nbytes;
  ok = std::fclose(out) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    std::remove(tmp.c_str());
    fail(path, std::string("cannot write: ") + std::strerror(saved));
  }
}

} // namespace llmserve
