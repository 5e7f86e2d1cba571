// manifest.json of a kernel bundle (docs/bundle.md) as plain structs. Parsing
// validates everything the executor relies on, so a Manifest that exists is
// consistent: ids in range, dtypes known, kernels listed, the step entry point
// matching the step contract of llmserve/abi.h.
#ifndef LLMSERVE_BUNDLE_MANIFEST_H
#define LLMSERVE_BUNDLE_MANIFEST_H

#include "bundle/expression.h"
#include "bundle/step_batch.h"
#include "model/dtype.h"
#include "model/quantize.h"
#include "model/quantized_checkpoint.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

struct ModelConfig {
  std::string architecture;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  int64_t bos_token_id = -1; // -1: none
  std::vector<int64_t> eos_token_ids;
  // A mixture of experts: the experts of a sparse layer and those each
  // token chooses; 0 for a dense model.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
};

struct KvCacheLayout {
  int64_t block_size = 0;
  DType dtype = DType::F32;
  std::string layout;
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t bytes_per_token = 0; // all layers, K and V
};

// Where weight buffers are read from; paths as written in the manifest.
struct WeightSource {
  std::string embedded;   // file in the bundle, or empty
  std::string checkpoint; // default checkpoint directory, or empty
};

enum class BufferKind { Argument, Result, Weight, KvCache, Activation };

struct Buffer {
  BufferKind kind;
  std::string name; // may be empty for activations
  DType dtype;
  std::vector<Expression> shape;
  // kind == Weight: the checkpoint tensor, whether it is stored transposed,
  // and the rows [begin, end) of the (transposed) tensor this buffer holds;
  // all of them when rows_end is -1.
  std::string tensor;
  // When positive, the buffer stacks that many tensors: slice i is the
  // tensor named by `tensor` with its "{}" replaced by i (the experts of a
  // mixture-of-experts layer), each transformed and sliced as below.
  int64_t stacked = 0;
  bool transpose = false;
  int64_t rows_begin = 0;
  int64_t rows_end = -1;
  // The 2-D [N, K] matrix stored as ceil(N / 16) panels of [K, 16] (element
  // (n, k) at [n / 16][k][n % 16], zero-padded), the layout of the compiled
  // linear kernel; otherwise dense row-major.
  bool panels16 = false;
  // The quantized [N, K] values as groups of 8 rows whose blocks of 64
  // columns interleave: int8 element (n, k) at [n / 8][k / 64][n % 8][k %
  // 64]; int4 values two a byte, 32 bytes a block (docs/bundle.md).
  bool rows8x64 = false;
  // kind == Weight, quantized by the runtime at load: the scheme, and which
  // of its arrays this buffer holds (the values' [N, K] or the scales' [N]).
  std::optional<WeightQuantization> quantization;
  QuantizedPart part = QuantizedPart::Values;
  // A weight the checkpoint stores quantized. GPTQ or AWQ (int4_group128
  // only): `tensor` is the linear's module, whose tensors this layout unpacks
  // into the part. fp8_block128: `tensor` is an FP8 weight, dequantized with
  // its block scales before anything else is done to it.
  std::optional<QuantizedCheckpoint> from;
  // kind == KvCache
  int64_t layer = -1;
  char role = 0; // 'k' or 'v'

  // The name of tensor `index` of a stacked weight.
  std::string stacked_tensor(int64_t index) const;
  // Byte size for the given symbol values; throws naming the buffer when a
  // dimension is negative or the size overflows.
  size_t byte_size(const Symbols &symbols, int id) const;
};

struct Kernel {
  std::string name;
  std::string symbol;
  // CUDA kernels only (docs/bundle.md): threads per block and dynamic shared
  // memory; {1, 1, 1} and 0 for CPU kernels.
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t shared_bytes = 0;
  // CUDA kernels only: the kernel waits for the grids before it
  // (griddepcontrol.wait) before it reads what they wrote, so it may be
  // launched while they finish (programmatic dependent launch).
  bool programmatic_launch = false;
};

struct Dispatch {
  int kernel; // index into Manifest::kernels
  std::vector<int> bindings; // buffer ids
  std::vector<Expression> push_constants;
  std::array<Expression, 3> grid;
};

struct EntryPoint {
  std::string name;
  std::vector<int> arguments; // buffer ids
  std::vector<int> results;   // buffer ids
  std::vector<Dispatch> dispatches;
};

// A CPU bundle's kernels for one CPU: a shared object in the bundle, the
// CPU it was compiled for (an LLVM name; empty if the manifest does not say)
// and the x86 features its code may use (abi::kCpuFeatures' names).
struct CpuKernels {
  std::string cpu;
  std::string file;
  std::vector<std::string> features;
};

struct Manifest {
  std::string target;
  // cpu: the kernels for each CPU the bundle was compiled for, the preferred
  // first (abi::kCpuKernelsFile, "cpu" and "cpu_features"), then each of
  // "cpu_fallbacks". Every set computes the same program on the same
  // buffers.
  std::vector<CpuKernels> cpu_kernels;
  // Absent in bundles of single ops; the `step` entry point needs both, and
  // kv_cache buffers need kv_cache.
  std::optional<ModelConfig> model;
  std::optional<KvCacheLayout> kv_cache;
  WeightSource weights;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<EntryPoint> entry_points;

  // Parses and validates `text`; errors are std::runtime_error starting with
  // `origin` (the file name) and naming the field, e.g.
  // "m.json: buffers[3].dtype: unknown dtype 'f8'".
  static Manifest parse(std::string_view text, const std::string &origin);
  // Reads and parses `path`.
  static Manifest load(const std::string &path);

  // nullptr if there is no entry point of that name.
  const EntryPoint *find_entry(std::string_view name) const;
  // The buffers an executor lays out for each call of `e`: its results, then
  // the activations its dispatches bind, in order of first use.
  std::vector<int> scratch_buffers(const EntryPoint &e) const;
  // What a step's arrays may index with a KV pool of `num_blocks` blocks;
  // needs the model and kv_cache sections (which a `step` implies).
  StepBounds step_bounds(int64_t num_blocks) const;
};

const char *buffer_kind_name(BufferKind kind);
// "S,MB": a shape's expressions as written, for messages.
std::string shape_text(const std::vector<Expression> &shape);

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_MANIFEST_H
