// Loads every tensor of a checkpoint the way a runtime does (map, convert to
// the kernels' dtype, drop the file's pages) and reports the time against a
// plain read(2) of the same files into fresh memory, measured in the same
// run, and the peak resident memory against the size of the converted
// weights: a loader that streams stays near 1x; one that holds the file too
// approaches 2x.
//
//   checkpoint_load_bench <checkpoint-dir> [f32|f16|bf16]   (default f32)
//
// A TinyLlama-1.1B-shaped checkpoint to run it on:
//   /usr/bin/python3 test/fixtures/make_fixtures.py --tinyllama /tmp/tinyllama --dtype bfloat16
#include "model/checkpoint.h"
#include "model/convert.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
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

// CPU time of this process so far (user + system), in seconds: on a shared
// machine the wall clock also counts other processes' turns.
double cpu_seconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Reads every safetensors file of `dir` with read(2) into fresh memory: the
// floor for loading, page faults of the destination included.
size_t read_all(const fs::path &dir) {
  size_t total = 0;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".safetensors")
      total += fs::file_size(entry.path());
  std::unique_ptr<char[]> memory(new char[total]);
  size_t done = 0;
  for (const auto &entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors")
      continue;
    int fd = open(entry.path().c_str(), O_RDONLY);
    if (fd < 0)
      throw std::runtime_error(entry.path().string() + ": cannot open");
    ssize_t n;
    while ((n = read(fd, memory.get() + done, std::min<size_t>(total - done, 1 << 30))) > 0)
      done += static_cast<size_t>(n);
    close(fd);
  }
  return done;
}

// Resets the peak resident set size (VmHWM) to the current size.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

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
    double cpu_start = cpu_seconds();
    const size_t file_bytes = read_all(dir);
    const double read_s = seconds_since(start), read_cpu = cpu_seconds() - cpu_start;

    reset_peak_rss();
    start = Clock::now();
    cpu_start = cpu_seconds();
    Checkpoint ckpt = Checkpoint::open(dir.string());
    const double open_s = seconds_since(start);
    size_t weight_bytes = 0;
    for (const TensorView *t : ckpt.tensors())
      weight_bytes += static_cast<size_t>(t->numel()) * dtype_size(*to);
    std::unique_ptr<uint8_t[]> weights(new uint8_t[weight_bytes]);
    size_t offset = 0;
    for (const TensorView *t : ckpt.tensors()) {
      convert_tensor(*t, *to, /*transpose=*/false, weights.get() + offset);
      ckpt.release(*t);
      offset += static_cast<size_t>(t->numel()) * dtype_size(*to);
    }
    const double load_s = seconds_since(start), load_cpu = cpu_seconds() - cpu_start;

    const double gb = 1e9;
    std::printf("checkpoint      %s: %zu tensors, %.2f GB on disk\n", dir.c_str(),
                ckpt.tensors().size(), file_bytes / gb);
    std::printf("plain read      %.2f s wall, %.2f s CPU (%.2f GB/s)\n", read_s, read_cpu,
                file_bytes / gb / read_s);
    std::printf("load to %-4s    %.2f s wall, %.2f s CPU (open and validate %.3f s), %.2f GB of weights\n",
                dtype_name(*to), load_s, load_cpu, open_s, weight_bytes / gb);
    std::printf("time ratio      %.2f x the plain read (CPU time: %.2f x)\n", load_s / read_s,
                load_cpu / read_cpu);
    std::printf("peak RSS        %.2f GB = %.2f x the loaded weights\n", peak_rss() / gb,
                static_cast<double>(peak_rss()) / weight_bytes);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
