#include "bundle/bundle.h"

#include "llmserve/abi.h"
#include "model/convert.h"
#include "model/quantize.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace llmserve {

namespace {

namespace fs = std::filesystem;

std::string dims_text(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string resolve(const std::string &dir, const std::string &path) {
  return fs::path(path).is_absolute() ? path : (fs::path(dir) / path).string();
}

} // namespace

Manifest Bundle::load_manifest(const std::string &dir) {
  const fs::path manifest_path = fs::path(dir) / abi::kManifestFile;
  if (!fs::is_directory(dir))
    throw std::runtime_error(dir + ": not a directory");
  if (!fs::exists(manifest_path))
    throw std::runtime_error(dir + ": not a kernel bundle (no " +
                             abi::kManifestFile + ")");
  return Manifest::load(manifest_path.string());
}

Bundle::Bundle(const std::string &dir, const std::string &checkpoint_dir)
    : dir_(dir), manifest_(load_manifest(dir)) {
  bind_weights(checkpoint_dir);
}

void Bundle::bind_weights(const std::string &checkpoint_dir) {
  weights_.assign(manifest_.buffers.size(), nullptr);
  bool any = false;
  for (const Buffer &b : manifest_.buffers)
    any |= b.kind == BufferKind::Weight;
  if (!any)
    return;

  if (!checkpoint_dir.empty()) {
    checkpoint_ = Checkpoint::open(checkpoint_dir);
    weights_source_ = checkpoint_dir;
  } else if (!manifest_.weights.embedded.empty()) {
    weights_source_ = resolve(dir_, manifest_.weights.embedded);
    embedded_ = SafetensorsFile::open(weights_source_);
  } else if (!manifest_.weights.checkpoint.empty()) {
    weights_source_ = resolve(dir_, manifest_.weights.checkpoint);
    checkpoint_ = Checkpoint::open(weights_source_);
  } else {
    throw std::runtime_error(dir_ + ": the bundle reads weights but neither "
                                    "embeds them nor names a checkpoint; give "
                                    "a checkpoint directory");
  }

  for (size_t id = 0; id < manifest_.buffers.size(); ++id) {
    const Buffer &b = manifest_.buffers[id];
    if (b.kind != BufferKind::Weight)
      continue;
    const std::string where = dir_ + ": buffers[" + std::to_string(id) +
                              "] (weight '" + b.name + "'): ";
    try {
      weights_[id] = bind_weight(b);
    } catch (const std::exception &e) {
      throw std::runtime_error(where + e.what());
    }
  }
  quantized_.clear(); // arrays no buffer asked for
  unpacked_.clear();
  dequantized_.reset();
}

const TensorView &Bundle::find_tensor(const std::string &name) const {
  if (checkpoint_)
    return checkpoint_->tensor(name); // throws, naming the directory
  if (const TensorView *t = embedded_->find(name))
    return *t;
  if (const char *dtype = embedded_->unreadable_dtype(name))
    throw std::runtime_error("tensor '" + name + "' in " + weights_source_ +
                             " has dtype " + dtype + ", which llmserve does not read");
  throw std::runtime_error("tensor '" + name + "' is missing from " + weights_source_);
}

bool Bundle::has_tensor(const std::string &name) const {
  return checkpoint_ ? checkpoint_->find(name) != nullptr : embedded_->find(name) != nullptr;
}

const TensorView &Bundle::source_tensor(const Buffer &b, const std::string &name) {
  if (!b.from) {
    const TensorView &t = find_tensor(name);
    if (t.dtype == DType::F8E4M3)
      throw std::runtime_error("tensor '" + name + "' in " + weights_source_ +
                               " is f8_e4m3, and the bundle reads it without block scales "
                               "(import the checkpoint with its quantization_config)");
    return t;
  }
  if (dequantized_ && dequantized_->view.name == name)
    return dequantized_->view;
  Dequantized d;
  std::vector<int64_t> shape;
  if (!is_four_bit(*b.from)) {
    const bool fp8 = *b.from == QuantizedCheckpoint::Fp8Block128;
    const TensorView &t = find_tensor(name);
    const TensorView &scales =
        find_tensor(fp8 ? fp8_scale_name(name) : compressed_scale_name(name));
    try {
      d.values = fp8 ? dequantize_fp8_block128(t, scales) : dequantize_compressed(t, scales);
    } catch (const std::runtime_error &e) {
      throw std::runtime_error(std::string(fp8 ? "FP8" : "compressed-tensors") + " weight '" +
                               name + "' in " + weights_source_ + ": " + e.what());
    }
    release(t);
    release(scales);
    shape = t.shape;
  } else {
    const Int4WithZeros &q = unpacked_linear(*b.from, name);
    d.values = dequantize_int4(q);
    shape = {q.rows, q.cols};
  }
  d.view = TensorView{name, DType::F32, shape, reinterpret_cast<const uint8_t *>(d.values.data()),
                      d.values.size() * sizeof(float)};
  dequantized_ = std::move(d);
  return dequantized_->view;
}

const Int4WithZeros &Bundle::unpacked_linear(QuantizedCheckpoint layout,
                                             const std::string &m) {
  auto [it, fresh] = unpacked_.try_emplace(m);
  if (!fresh)
    return it->second;
  const bool compressed = layout == QuantizedCheckpoint::CompressedTensorsInt4;
  const auto tensors = compressed ? std::array{".weight_packed", ".weight_scale", ".weight_shape"}
                                  : std::array{".qweight", ".qzeros", ".scales"};
  try {
    if (compressed) {
      it->second = unpack_compressed_int4(find_tensor(m + tensors[0]), find_tensor(m + tensors[1]),
                                          find_tensor(m + tensors[2]));
    } else {
      const TensorView *g_idx = nullptr;
      if (layout != QuantizedCheckpoint::Awq && has_tensor(m + ".g_idx"))
        g_idx = &find_tensor(m + ".g_idx");
      it->second = unpack_int4_checkpoint(layout, find_tensor(m + tensors[0]),
                                          find_tensor(m + tensors[1]), find_tensor(m + tensors[2]),
                                          g_idx);
    }
  } catch (const std::runtime_error &e) {
    unpacked_.erase(it);
    throw std::runtime_error(std::string(quantized_checkpoint_name(layout)) + " linear '" + m +
                             "' in " + weights_source_ + ": " + e.what());
  }
  for (const char *name : tensors)
    release(find_tensor(m + name));
  return it->second;
}

namespace {

// The [rows, cols] matrix as ceil(rows / 16) panels of [cols, 16]: element
// (n, k) at [n / 16][k][n % 16], zero-padded (Buffer::panels16).
AlignedBuffer pack_panels16(const AlignedBuffer &matrix, int64_t rows,
                            int64_t cols, size_t element) {
  const int64_t panels = (rows + 15) / 16;
  AlignedBuffer packed(static_cast<size_t>(panels * cols * 16) * element);
  std::memset(packed.data(), 0, packed.size());
  const auto *from = static_cast<const uint8_t *>(matrix.data());
  auto *to = static_cast<uint8_t *>(packed.data());
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k)
      std::memcpy(to + ((n / 16 * cols + k) * 16 + n % 16) * element,
                  from + (n * cols + k) * element, element);
  return packed;
}

// The [rows, cols] quantized values (one a byte) in rows8x64
// (Buffer::rows8x64): row n's columns [64b, 64b + 64) at [n / 8][b][n % 8],
// as their 64 bytes, or for int4 values (in [-8, 7]) as 32 bytes, byte j
// holding column 64b + j plus 8 in its low nibble and column 64b + 32 + j
// plus 8 in its high one.
AlignedBuffer pack_rows8x64(const AlignedBuffer &matrix, int64_t rows, int64_t cols, bool int4) {
  const int64_t block_bytes = int4 ? 32 : 64;
  AlignedBuffer packed(static_cast<size_t>(rows * cols / (64 / block_bytes)));
  const auto *from = static_cast<const int8_t *>(matrix.data());
  auto *to = static_cast<uint8_t *>(packed.data());
  const int64_t blocks = cols / 64;
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t block = 0; block < blocks; ++block) {
      const int8_t *values = from + n * cols + block * 64;
      uint8_t *bytes = to + (((n / 8) * blocks + block) * 8 + n % 8) * block_bytes;
      if (!int4) {
        std::memcpy(bytes, values, 64);
        continue;
      }
      for (int64_t j = 0; j < 32; ++j)
        bytes[j] = static_cast<uint8_t>((values[j] + 8) | (values[j + 32] + 8) << 4);
    }
  return packed;
}

// The [rows, cols] int4 values (in [-8, 7], one a byte) packed two a byte
// in row-major order: byte j of a row holding column 2j plus 8 in its low
// nibble and column 2j + 1 plus 8 in its high one.
AlignedBuffer pack_int4_pairs(const AlignedBuffer &matrix, int64_t rows, int64_t cols) {
  AlignedBuffer packed(static_cast<size_t>(rows * cols / 2));
  const auto *from = static_cast<const int8_t *>(matrix.data());
  auto *to = static_cast<uint8_t *>(packed.data());
  for (int64_t i = 0; i < rows * cols / 2; ++i)
    to[i] = static_cast<uint8_t>((from[2 * i] + 8) | (from[2 * i + 1] + 8) << 4);
  return packed;
}

// The int4 values of a [rows, cols] matrix as buffer `b` stores them.
AlignedBuffer packed_int4(const Buffer &b, const AlignedBuffer &matrix, int64_t rows,
                          int64_t cols) {
  return b.rows8x64 ? pack_rows8x64(matrix, rows, cols, /*int4=*/true)
                    : pack_int4_pairs(matrix, rows, cols);
}

// The columns of the matrix a quantized buffer of shape `want` comes from.
int64_t quantized_columns(const Buffer &b, const std::vector<int64_t> &want) {
  const bool int4 = b.quantization == WeightQuantization::Int4Group128;
  if (b.part == QuantizedPart::Values)
    return int4 ? 2 * want[1] : want[1];
  return int4 ? kInt4GroupSize * want[1] : -1; // int8_channel: one scale a row
}

} // namespace

void *Bundle::bind_weight(const Buffer &b) {
  std::vector<int64_t> want; // the buffer's shape
  for (const Expression &dim : b.shape)
    want.push_back(dim.evaluate(Symbols{}));
  if (b.stacked)
    return bind_stacked_weight(b, want);
  if (b.from && is_four_bit(*b.from) && b.quantization == WeightQuantization::Int4Group128)
    return bind_checkpoint_quantized(b, want);
  if (b.quantization == WeightQuantization::Fp8Block128)
    return bind_fp8_block128(b, want);
  const TensorView &t = source_tensor(b, b.tensor);
  if (b.quantization)
    return bind_quantized_weight(b, t, want);
  check_weight_shape(b, t, want);

  const TensorView source = rows_of(b, t);
  size_t bytes = dtype_size(b.dtype);
  for (int64_t d : want)
    bytes *= static_cast<size_t>(d);
  const bool aligned = reinterpret_cast<uintptr_t>(source.data) % dtype_size(b.dtype) == 0;
  if (source.dtype == b.dtype && !b.transpose && aligned && !b.panels16 && !b.from) {
    mapped_weight_bytes_ += bytes;
    return const_cast<uint8_t *>(source.data); // mapped read-only
  }
  AlignedBuffer dst = converted(b, t, b.dtype, want);
  if (b.panels16)
    dst = pack_panels16(dst, want[0], want[1], dtype_size(b.dtype));
  return keep_converted(t, std::move(dst));
}

void *Bundle::bind_stacked_weight(const Buffer &b, const std::vector<int64_t> &want) {
  const std::vector<int64_t> each(want.begin() + 1, want.end());
  size_t each_bytes = dtype_size(b.dtype);
  for (int64_t d : each)
    each_bytes *= static_cast<size_t>(d);
  AlignedBuffer stack(each_bytes * static_cast<size_t>(want[0]));
  for (int64_t i = 0; i < want[0]; ++i) {
    Buffer one = b;
    one.tensor = b.stacked_tensor(i);
    const TensorView &t = source_tensor(one, one.tensor);
    uint8_t *slice = static_cast<uint8_t *>(stack.data()) + static_cast<size_t>(i) * each_bytes;
    if (b.quantization) {
      const AlignedBuffer part = quantized_part(one, t, each);
      std::memcpy(slice, part.data(), each_bytes);
    } else {
      check_weight_shape(one, t, each);
      convert_into(one, t, b.dtype, each, slice);
    }
    release(t);
  }
  return keep_converted(std::move(stack));
}

void *Bundle::bind_checkpoint_quantized(const Buffer &b, const std::vector<int64_t> &want) {
  const std::string &m = b.tensor;
  const Int4WithZeros &q = unpacked_linear(*b.from, m);
  const int64_t groups = q.cols / kInt4GroupSize;
  const int64_t begin = b.rows_end >= 0 ? b.rows_begin : 0;
  const int64_t end = b.rows_end >= 0 ? b.rows_end : q.rows;
  // Groups that are not consecutive columns (act-order): int4_group128 of
  // the dequantized weight, whose zero point is 8 everywhere.
  if (q.act_order) {
    if (b.part != QuantizedPart::Zeros)
      return bind_quantized_weight(b, source_tensor(b, m), want);
    if (want != std::vector<int64_t>{end - begin, groups})
      throw std::runtime_error(std::string(quantized_checkpoint_name(*b.from)) + " linear '" +
                               m + "' has " + std::to_string(groups) +
                               " groups, but its zeros buffer is " + dims_text(want));
    AlignedBuffer zeros(static_cast<size_t>((end - begin) * groups));
    std::memset(zeros.data(), 8, zeros.size());
    return keep_converted(std::move(zeros));
  }
  // The rows [begin, end) of the module's outputs this buffer holds.
  const int64_t per_row = b.part == QuantizedPart::Values ? q.cols : groups;
  const std::vector<int64_t> expected = {end - begin, b.part == QuantizedPart::Values
                                                          ? q.cols / 2
                                                          : groups};
  if (end > q.rows || want != expected)
    throw std::runtime_error(std::string(quantized_checkpoint_name(*b.from)) + " linear '" + m +
                             "' in " + weights_source_ + " has " + std::to_string(q.rows) +
                             " outputs of " + std::to_string(q.cols) + " inputs, but its " +
                             quantized_part_name(b.part) + " buffer is " + dims_text(want));
  const size_t element = b.part == QuantizedPart::Scales ? sizeof(float) : 1;
  const auto *source = b.part == QuantizedPart::Values  ? static_cast<const void *>(q.values.data())
                       : b.part == QuantizedPart::Zeros ? static_cast<const void *>(q.zeros.data())
                                                        : static_cast<const void *>(q.scales.data());
  AlignedBuffer rows(static_cast<size_t>((end - begin) * per_row) * element);
  std::memcpy(rows.data(), static_cast<const uint8_t *>(source) + begin * per_row * element,
              rows.size());
  if (b.part == QuantizedPart::Values)
    rows = packed_int4(b, rows, end - begin, q.cols);
  return keep_converted(std::move(rows));
}

void *Bundle::bind_fp8_block128(const Buffer &b, const std::vector<int64_t> &want) {
  const TensorView &t = find_tensor(b.tensor);
  try {
    const bool values = b.part == QuantizedPart::Values;
    // The codes are scanned once, for the buffer that maps them.
    if (values)
      check_fp8_codes(t);
    else
      check_fp8_weight(t);
    const int64_t begin = b.rows_end >= 0 ? b.rows_begin : 0;
    const int64_t end = b.rows_end >= 0 ? b.rows_end : t.shape[0];
    // Rows [begin, end) of the codes, blocks [begin / 128, ceil(end / 128))
    // of the scales.
    const int64_t first = values ? begin : begin / kFp8BlockSize;
    const int64_t last = values ? end : (end + kFp8BlockSize - 1) / kFp8BlockSize;
    const int64_t columns = values ? t.shape[1] : (t.shape[1] + kFp8BlockSize - 1) / kFp8BlockSize;
    if (end > t.shape[0] || want != std::vector<int64_t>{last - first, columns})
      throw std::runtime_error("its " + std::string(quantized_part_name(b.part)) + " buffer " +
                               dims_text(want) + " is not those of rows [" + std::to_string(begin) +
                               ", " + std::to_string(end) + ") of " + dims_text(t.shape));
    if (values) {
      mapped_weight_bytes_ += static_cast<size_t>((end - begin) * columns);
      return const_cast<uint8_t *>(rows_of(b, t).data); // mapped read-only
    }
    const std::vector<float> scales = fp8_block_scales(t, find_tensor(fp8_scale_name(b.tensor)));
    AlignedBuffer rows(static_cast<size_t>((last - first) * columns) * sizeof(float));
    std::memcpy(rows.data(), scales.data() + first * columns, rows.size());
    return keep_converted(std::move(rows));
  } catch (const std::runtime_error &e) {
    throw std::runtime_error("FP8 weight '" + b.tensor + "' in " + weights_source_ + ": " +
                             e.what());
  }
}

void *Bundle::bind_quantized_weight(const Buffer &b, const TensorView &t,
                                    const std::vector<int64_t> &want) {
  return keep_converted(t, quantized_part(b, t, want));
}

AlignedBuffer Bundle::quantized_part(const Buffer &b, const TensorView &t,
                                     const std::vector<int64_t> &want) {
  // The matrix the scheme quantizes: [N, K] after transform and rows.
  if (t.shape.size() != 2)
    throw std::runtime_error("tensor '" + b.tensor + "' in " + weights_source_ +
                             " has shape " + dims_text(t.shape) + ", but " +
                             quantization_name(*b.quantization) +
                             " quantizes a 2-D matrix");
  const int64_t cols = b.transpose ? t.shape[0] : t.shape[1];
  const std::vector<int64_t> matrix = {want[0], cols};
  check_weight_shape(b, t, matrix);
  const bool int4 = *b.quantization == WeightQuantization::Int4Group128;
  if (const int64_t expected = quantized_columns(b, want); expected >= 0 && expected != cols)
    throw std::runtime_error("tensor '" + b.tensor + "' in " + weights_source_ + " has " +
                             std::to_string(cols) + " columns, but the shape " +
                             dims_text(want) + " of its " + quantized_part_name(b.part) +
                             " is that of a matrix of " +
                             std::to_string(expected));

  // Both arrays come from one pass over the matrix; the first of its
  // buffers to bind quantizes it, the other takes what is left.
  const auto key = std::make_tuple(b.tensor, b.transpose, b.rows_begin, b.rows_end,
                                   *b.quantization);
  auto [it, fresh] = quantized_.try_emplace(key);
  QuantizedMatrix &q = it->second;
  if (fresh) {
    const AlignedBuffer weights = converted(b, t, DType::F32, matrix);
    const int64_t scales_per_row = int4 ? cols / kInt4GroupSize : 1;
    q.values = AlignedBuffer(static_cast<size_t>(matrix[0] * matrix[1]));
    q.scales = AlignedBuffer(static_cast<size_t>(matrix[0] * scales_per_row) * sizeof(float));
    try {
      auto *values = static_cast<int8_t *>(q.values.data());
      auto *scales = static_cast<float *>(q.scales.data());
      const auto *w = static_cast<const float *>(weights.data());
      if (int4)
        quantize_int4_group128(w, matrix[0], matrix[1], values, scales);
      else
        quantize_int8_channel(w, matrix[0], matrix[1], values, scales);
    } catch (const std::runtime_error &e) {
      quantized_.erase(it);
      throw std::runtime_error("tensor '" + b.tensor + "': " + e.what());
    }
  }
  AlignedBuffer dst =
      std::move(b.part == QuantizedPart::Values ? q.values : q.scales);
  if (b.part != QuantizedPart::Values)
    return dst;
  if (int4)
    return packed_int4(b, dst, matrix[0], matrix[1]);
  return b.rows8x64 ? pack_rows8x64(dst, matrix[0], matrix[1], /*int4=*/false) : std::move(dst);
}

TensorView Bundle::rows_of(const Buffer &b, const TensorView &t) {
  // Rows of an untransposed tensor are a contiguous part of it.
  TensorView source = t;
  if (b.rows_end >= 0 && !b.transpose) {
    const size_t row_bytes = t.nbytes / static_cast<size_t>(t.shape[0]);
    source.shape[0] = b.rows_end - b.rows_begin;
    source.data += static_cast<size_t>(b.rows_begin) * row_bytes;
    source.nbytes = static_cast<size_t>(source.shape[0]) * row_bytes;
  }
  return source;
}

AlignedBuffer Bundle::converted(const Buffer &b, const TensorView &t,
                                DType dtype, const std::vector<int64_t> &want) {
  size_t bytes = dtype_size(dtype);
  for (int64_t d : want)
    bytes *= static_cast<size_t>(d);
  AlignedBuffer dst(bytes);
  convert_into(b, t, dtype, want, dst.data());
  return dst;
}

void Bundle::convert_into(const Buffer &b, const TensorView &t, DType dtype,
                          const std::vector<int64_t> &want, void *dst) {
  size_t bytes = dtype_size(dtype);
  for (int64_t d : want)
    bytes *= static_cast<size_t>(d);
  if (b.rows_end >= 0 && b.transpose) {
    // Transposed rows are columns of the stored tensor: transpose it all,
    // then keep the rows.
    AlignedBuffer all(static_cast<size_t>(t.numel()) * dtype_size(dtype));
    convert_tensor(t, dtype, true, all.data());
    const size_t row_bytes = bytes / static_cast<size_t>(want[0]);
    std::memcpy(dst,
                static_cast<uint8_t *>(all.data()) +
                    static_cast<size_t>(b.rows_begin) * row_bytes,
                bytes);
  } else {
    convert_tensor(rows_of(b, t), dtype, b.transpose, dst);
  }
}

void Bundle::release(const TensorView &t) {
  // A dequantized copy is not in the file; its source was released.
  if (dequantized_ && t.data == dequantized_->view.data)
    return;
  if (checkpoint_)
    checkpoint_->release(t);
  else
    embedded_->release(t);
}

void *Bundle::keep_converted(const TensorView &t, AlignedBuffer converted) {
  // The converted copy is what kernels read; drop the file's pages.
  release(t);
  return keep_converted(std::move(converted));
}

void *Bundle::keep_converted(AlignedBuffer converted) {
  converted_weight_bytes_ += converted.size();
  converted_.push_back(std::move(converted));
  return converted_.back().data();
}

void Bundle::check_weight_shape(const Buffer &b, const TensorView &t,
                                const std::vector<int64_t> &want) const {
  const bool sliced = b.rows_end >= 0;
  // The tensor as the kernels see it before the row slice.
  std::vector<int64_t> whole = t.shape;
  if (b.transpose && whole.size() == 2)
    std::swap(whole[0], whole[1]);
  if (whole.size() == want.size() &&
      (want.empty() || (std::equal(want.begin() + 1, want.end(), whole.begin() + 1) &&
                        (sliced ? b.rows_end <= whole[0] : whole[0] == want[0]))))
    return;

  std::vector<std::string> dims; // the shape the checkpoint should hold
  for (int64_t d : want)
    dims.push_back(std::to_string(d));
  if (sliced)
    dims[0] = ">=" + std::to_string(b.rows_end);
  if (b.transpose)
    std::swap(dims[0], dims[1]);
  std::string expected = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    expected += (i ? ", " : "") + dims[i];
  expected += "]";
  if (b.transpose)
    expected += " (transposed to " + dims_text(want) + ")";
  if (sliced)
    expected += " for rows [" + std::to_string(b.rows_begin) + ", " +
                std::to_string(b.rows_end) + ")";
  throw std::runtime_error("tensor '" + b.tensor + "' in " + weights_source_ +
                           " has shape " + dims_text(t.shape) + ", expected " + expected);
}

} // namespace llmserve
