// Loads every tensor of a checkpoint the way a runtime does (map, convert to
// the kernels' dtype, drop the file's pages) and reports the time against a
// plain sequential read of the same files measured in the same run, and the
// peak resident memory against the size of the converted weights: a loader
// that streams stays near 1x; one that holds the file too approaches 2x.
//
//   checkpoint_load_bench <checkpoint-dir> [f32|f16|bf16]   (default f32)
//
// A TinyLlama-1.1B-shaped checkpoint to run it on:
//   /usr/bin/python3 test/fixtures/make_fixtures.py --tinyllama /tmp/tinyllama --dtype bfloat16
#include "model/checkpoint.h"
#include "model/convert.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Peak resident set size so far, from /proc/self/status, in bytes.
size_t peak_rss() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stoull(line.substr(6)) * 1024;
  return 0;
}

// Reads every safetensors file of `dir` with read(2): the floor for loading.
size_t read_all(const fs::path &dir) {
  std::vector<char> buffer(8 << 20);
  size_t total = 0;
  for (const auto &entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors")
      continue;
    int fd = open(entry.path().c_str(), O_RDONLY);
    if (fd < 0)
      throw std::runtime_error(entry.path().string() + ": cannot open");
    ssize_t n;
    while ((n = read(fd, buffer.data(), buffer.size())) > 0)
      total += static_cast<size_t>(n);
    close(fd);
  }
  return total;
}

} // namespace

int main(int argc, char **argv) {
  using namespace llmserve;
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <checkpoint-dir> [f32|f16|bf16]\n", argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  const auto to = parse_dtype(argc == 3 ? argv[2] : "f32");
  if (!to) {
    std::fprintf(stderr, "unknown dtype '%s'\n", argv[2]);
    return 2;
  }
  try {
    read_all(dir); // warm the page cache: both timings below read from it
    auto start = Clock::now();
    const size_t file_bytes = read_all(dir);
    const double read_s = seconds_since(start);

    start = Clock::now();
    Checkpoint ckpt = Checkpoint::open(dir.string());
    const double open_s = seconds_since(start);
    std::vector<std::unique_ptr<uint8_t[]>> weights;
    size_t weight_bytes = 0;
    for (const TensorView *t : ckpt.tensors()) {
      const size_t bytes = static_cast<size_t>(t->numel()) * dtype_size(*to);
      weights.emplace_back(new uint8_t[bytes]);
      convert_tensor(*t, *to, /*transpose=*/false, weights.back().get());
      ckpt.release(*t);
      weight_bytes += bytes;
    }
    const double load_s = seconds_since(start);

    const double gb = 1e9;
    std::printf("checkpoint      %s: %zu tensors, %.2f GB on disk\n", dir.c_str(),
                ckpt.tensors().size(), file_bytes / gb);
    std::printf("plain read      %.2f s (%.2f GB/s)\n", read_s, file_bytes / gb / read_s);
    std::printf("load to %-4s    %.2f s (open and validate %.3f s), %.2f GB of weights\n",
                dtype_name(*to), load_s, open_s, weight_bytes / gb);
    std::printf("time ratio      %.2f x the plain read\n", load_s / read_s);
    std::printf("peak RSS        %.2f GB = %.2f x the loaded weights\n", peak_rss() / gb,
                static_cast<double>(peak_rss()) / weight_bytes);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
