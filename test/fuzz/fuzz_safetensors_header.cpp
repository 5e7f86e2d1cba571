// Bytes as a safetensors file (a checkpoint a user points the server at):
// opened and validated, then every tensor's bytes read (a view outside the
// mapping faults) and found again by name.
#include "model/safetensors.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

using namespace llmserve;

namespace {
volatile uint8_t sink; // keeps the reads
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // SafetensorsFile maps a path: an in-memory file gives it one.
  const int fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != static_cast<ssize_t>(size)) {
    std::perror("memfd");
    std::abort();
  }
  try {
    const SafetensorsFile file = SafetensorsFile::open("/proc/self/fd/" + std::to_string(fd));
    for (const TensorView &t : file.tensors()) {
      for (size_t i = 0; i < t.nbytes; ++i)
        sink = sink + t.data[i];
      if (file.find(t.name) != &t) {
        std::fprintf(stderr, "find('%s') is not its tensor\n", t.name.c_str());
        std::abort();
      }
    }
  } catch (const std::runtime_error &) {
  }
  close(fd);
  return 0;
}
