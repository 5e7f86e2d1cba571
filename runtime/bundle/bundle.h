// A kernel bundle loaded on the host: its manifest and every weight buffer
// bound to memory in the dtype and layout the kernels read. The executor of
// the bundle's target loads its kernels (cpu/kernel_library.h for "cpu"; the
// CUDA executor loads an sm_90 bundle's module and uploads the weights).
#ifndef LLMSERVE_BUNDLE_BUNDLE_H
#define LLMSERVE_BUNDLE_BUNDLE_H

#include "bundle/aligned_buffer.h"
#include "bundle/manifest.h"
#include "model/checkpoint.h"
#include "model/quantized_checkpoint.h"
#include "model/safetensors.h"

#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

namespace llmserve {

class Bundle {
public:
  // Loads the bundle directory `dir`. Weights are read from `checkpoint_dir`
  // when it is given, else from the bundle's embedded weights file, else from
  // the manifest's checkpoint directory (relative paths are relative to
  // `dir`). Throws std::runtime_error naming the file, and the buffer or
  // tensor at fault.
  explicit Bundle(const std::string &dir, const std::string &checkpoint_dir = {});
  // The manifest of the bundle directory `dir` alone, with the errors the
  // constructor gives for it.
  static Manifest load_manifest(const std::string &dir);

  const std::string &dir() const { return dir_; }
  const Manifest &manifest() const { return manifest_; }
  // Base address of weight buffer `buffer_id`, read-only; nullptr for a
  // buffer that is not a weight.
  void *weight(int buffer_id) const { return weights_[buffer_id]; }
  // Where the weights were read from (a directory or a file); empty if the
  // bundle has no weight buffers.
  const std::string &weights_source() const { return weights_source_; }
  // Weight bytes used straight from the mapped file, and bytes converted
  // (dtype or layout) into memory of our own.
  size_t mapped_weight_bytes() const { return mapped_weight_bytes_; }
  size_t converted_weight_bytes() const { return converted_weight_bytes_; }

private:
  void bind_weights(const std::string &checkpoint_dir);
  const TensorView &find_tensor(const std::string &name) const;
  bool has_tensor(const std::string &name) const;
  // The tensor `name` as weight buffer `b` reads it: the checkpoint's, or a
  // quantized checkpoint's weight (`from`) dequantized to f32. A float8
  // tensor read otherwise is an error: it needs its block scales.
  const TensorView &source_tensor(const Buffer &b, const std::string &name);
  // The linear `module` of a 4-bit checkpoint, unpacked once.
  const Int4WithZeros &unpacked_linear(QuantizedCheckpoint layout, const std::string &module);
  // Base address of weight buffer `b`: in the mapped file or converted.
  void *bind_weight(const Buffer &b);
  // A weight of stacked tensors, each converted (or quantized) into its
  // slice.
  void *bind_stacked_weight(const Buffer &b, const std::vector<int64_t> &want);
  // A part of a weight the runtime quantizes; `want` is the part's shape.
  void *bind_quantized_weight(const Buffer &b, const TensorView &t,
                              const std::vector<int64_t> &want);
  // A part of a linear the checkpoint stores quantized (GPTQ, AWQ).
  void *bind_checkpoint_quantized(const Buffer &b, const std::vector<int64_t> &want);
  // An FP8 checkpoint's codes (in place) or block scales (as f32), as
  // stored.
  void *bind_fp8_block128(const Buffer &b, const std::vector<int64_t> &want);
  // That part's array, in the buffer's layout.
  AlignedBuffer quantized_part(const Buffer &b, const TensorView &t,
                               const std::vector<int64_t> &want);
  // The rows of `t` that `b` holds, when they are contiguous (untransposed).
  static TensorView rows_of(const Buffer &b, const TensorView &t);
  // `t` transformed and sliced as `b` says, as `dtype` of shape `want`.
  static AlignedBuffer converted(const Buffer &b, const TensorView &t,
                                 DType dtype, const std::vector<int64_t> &want);
  // The same, written to `dst` (of the shape's bytes).
  static void convert_into(const Buffer &b, const TensorView &t, DType dtype,
                           const std::vector<int64_t> &want, void *dst);
  // Keeps `converted` as a weight buffer, dropping `t`'s file pages.
  void *keep_converted(const TensorView &t, AlignedBuffer converted);
  void *keep_converted(AlignedBuffer converted);
  // Drops the file pages of `t`, which a converted copy replaces.
  void release(const TensorView &t);
  void check_weight_shape(const Buffer &b, const TensorView &t,
                          const std::vector<int64_t> &want) const;

  std::string dir_;
  Manifest manifest_;

  // One of these holds the mapped weights, which zero-copy buffers point into.
  std::optional<Checkpoint> checkpoint_;
  std::optional<SafetensorsFile> embedded_;
  std::string weights_source_;
  std::vector<AlignedBuffer> converted_;
  // Quantized matrices whose other array a later buffer takes, by (tensor,
  // transpose, rows, scheme); empty after loading.
  struct QuantizedMatrix {
    AlignedBuffer values, scales;
  };
  std::map<std::tuple<std::string, bool, int64_t, int64_t, WeightQuantization>,
           QuantizedMatrix>
      quantized_;
  // Linears unpacked from a 4-bit checkpoint, by module; empty after
  // loading.
  std::map<std::string, Int4WithZeros> unpacked_;
  // The FP8 weight dequantized last, kept for the next buffer that reads it
  // (a quantized weight's two arrays); empty after loading.
  struct Dequantized {
    std::vector<float> values;
    TensorView view;
  };
  std::optional<Dequantized> dequantized_;
  std::vector<void *> weights_; // by buffer id
  size_t mapped_weight_bytes_ = 0;
  size_t converted_weight_bytes_ = 0;
};

} // namespace llmserve

#endif // LLMSERVE_BUNDLE_BUNDLE_H
