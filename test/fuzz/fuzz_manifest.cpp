// Bytes as a bundle's manifest.json: parsed and validated. A manifest that
// parses is one an executor may trust: its ids are in range, and its sizes
// evaluate or fail with an error.
#include "bundle/manifest.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <vector>

using namespace llmserve;

namespace {

void check_ids(const std::vector<int> &ids, size_t count, const char *what) {
  for (int id : ids)
    if (id < 0 || static_cast<size_t>(id) >= count) {
      std::fprintf(stderr, "a parsed manifest has %s id %d of %zu\n", what, id, count);
      std::abort();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Manifest m;
  try {
    m = Manifest::parse(std::string_view(reinterpret_cast<const char *>(data), size), "manifest.json");
  } catch (const std::runtime_error &) {
    return 0;
  }
  // A small step and a large one.
  for (const Symbols &s : {Symbols{1, 1, 1, 1, 0, 0}, Symbols{8192, 256, 4096, 1 << 20, 65536, 4096}}) {
    for (size_t i = 0; i < m.buffers.size(); ++i)
      try {
        m.buffers[i].byte_size(s, static_cast<int>(i));
      } catch (const std::runtime_error &) {
      }
    for (const EntryPoint &e : m.entry_points) {
      check_ids(e.arguments, m.buffers.size(), "argument buffer");
      check_ids(e.results, m.buffers.size(), "result buffer");
      for (const Dispatch &d : e.dispatches) {
        check_ids({d.kernel}, m.kernels.size(), "kernel");
        check_ids(d.bindings, m.buffers.size(), "bound buffer");
        try {
          for (const Expression &x : d.grid)
            x.evaluate(s);
          for (const Expression &x : d.push_constants)
            x.evaluate(s);
        } catch (const std::runtime_error &) {
        }
      }
      m.scratch_buffers(e);
    }
  }
  if (m.find_entry("step"))
    m.step_bounds(64);
  return 0;
}
