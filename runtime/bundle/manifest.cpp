#include "bundle/manifest.h"

#include "llmserve/abi.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace llmserve {

namespace {

using nlohmann::json;

constexpr std::pair<BufferKind, const char *> kBufferKinds[] = {
    {BufferKind::Argument, "argument"}, {BufferKind::Result, "result"},
    {BufferKind::Weight, "weight"},     {BufferKind::KvCache, "kv_cache"},
    {BufferKind::Activation, "activation"},
};

// Reads JSON values, naming the file and the field path in every error.
class Reader {
public:
  explicit Reader(const std::string &origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string &path, const std::string &what) const {
    throw std::runtime_error(origin_ + ": " + path + ": " + what);
  }

  const json &field(const json &object, const std::string &path,
                    const char *key) const {
    if (!object.is_object())
      fail(path, "expected a JSON object, got " + object.dump());
    auto it = object.find(key);
    if (it == object.end())
      fail(path, std::string("missing field '") + key + "'");
    return *it;
  }

  const json *optional_field(const json &object, const char *key) const {
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }

  int64_t integer(const json &value, const std::string &path) const {
    if (!value.is_number_integer())
      fail(path, "expected an integer, got " + value.dump());
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
      fail(path, "integer " + value.dump() + " does not fit in int64");
    return value.get<int64_t>();
  }

  int64_t integer(const json &object, const std::string &path, const char *key,
                  int64_t min) const {
    const int64_t v = integer(field(object, path, key), path + "." + key);
    if (v < min)
      fail(path + "." + key, std::to_string(v) + " is less than " + std::to_string(min));
    return v;
  }

  bool boolean(const json &value, const std::string &path) const {
    if (!value.is_boolean())
      fail(path, "expected true or false, got " + value.dump());
    return value.get<bool>();
  }

  std::string string(const json &value, const std::string &path) const {
    if (!value.is_string())
      fail(path, "expected a string, got " + value.dump());
    return value.get<std::string>();
  }

  std::string string(const json &object, const std::string &path,
                     const char *key) const {
    return string(field(object, path, key), path + "." + key);
  }

  const json &array(const json &value, const std::string &path) const {
    if (!value.is_array())
      fail(path, "expected an array, got " + value.dump());
    return value;
  }

  DType dtype(const json &object, const std::string &path) const {
    const std::string name = string(object, path, "dtype");
    // Only the bundle's spelling; "F32" is the checkpoint's.
    std::optional<DType> d = parse_dtype(name);
    if (!d || name != dtype_name(*d))
      fail(path + ".dtype", "unknown dtype '" + name +
                                "' (expected f32, f16, bf16, i32 or i64)");
    return *d;
  }

  Expression expression(const json &value, const std::string &path) const {
    if (value.is_number_integer())
      return Expression::constant(integer(value, path));
    if (!value.is_string())
      fail(path, "expected an integer or an expression string, got " + value.dump());
    try {
      return Expression::parse(value.get<std::string>());
    } catch (const std::invalid_argument &e) {
      fail(path, e.what());
    }
  }

  std::vector<Expression> expressions(const json &value,
                                      const std::string &path) const {
    std::vector<Expression> out;
    for (size_t i = 0; i < array(value, path).size(); ++i)
      out.push_back(expression(value[i], path + "[" + std::to_string(i) + "]"));
    return out;
  }

  int buffer_id(const json &value, const std::string &path,
                size_t num_buffers) const {
    const int64_t id = integer(value, path);
    if (id < 0 || static_cast<size_t>(id) >= num_buffers)
      fail(path, "buffer id " + std::to_string(id) + " is out of range (" +
                     std::to_string(num_buffers) + " buffers)");
    return static_cast<int>(id);
  }

private:
  const std::string &origin_;
};

void check_versions(const Reader &r, const json &root) {
  const std::string format = r.string(root, "manifest", "format");
  if (format != abi::kFormatName)
    r.fail("format", "'" + format + "' is not a kernel bundle (expected '" +
                         abi::kFormatName + "')");
  const int64_t format_version =
      r.integer(r.field(root, "manifest", "format_version"), "format_version");
  if (format_version != abi::kBundleFormatVersion)
    r.fail("format_version", "bundle format version " +
                                 std::to_string(format_version) +
                                 ", runtime supports " +
                                 std::to_string(abi::kBundleFormatVersion));
  const int64_t abi_version = r.integer(
      r.field(root, "manifest", "kernel_abi_version"), "kernel_abi_version");
  if (abi_version != abi::kKernelAbiVersion)
    r.fail("kernel_abi_version", "bundle kernel ABI version " +
                                     std::to_string(abi_version) +
                                     ", runtime supports " +
                                     std::to_string(abi::kKernelAbiVersion));
}

ModelConfig parse_model(const Reader &r, const json &m) {
  const std::string p = "model";
  ModelConfig c;
  c.architecture = r.string(m, p, "architecture");
  c.vocab_size = r.integer(m, p, "vocab_size", 1);
  c.hidden_size = r.integer(m, p, "hidden_size", 1);
  c.num_layers = r.integer(m, p, "num_layers", 1);
  c.num_heads = r.integer(m, p, "num_heads", 1);
  c.num_kv_heads = r.integer(m, p, "num_kv_heads", 1);
  c.head_dim = r.integer(m, p, "head_dim", 1);
  c.max_position_embeddings = r.integer(m, p, "max_position_embeddings", 1);
  if (const json *bos = r.optional_field(m, "bos_token_id"))
    c.bos_token_id = r.integer(*bos, p + ".bos_token_id");
  const json &eos = r.array(r.field(m, p, "eos_token_ids"), p + ".eos_token_ids");
  for (size_t i = 0; i < eos.size(); ++i)
    c.eos_token_ids.push_back(
        r.integer(eos[i], p + ".eos_token_ids[" + std::to_string(i) + "]"));
  for (int64_t id : c.eos_token_ids)
    if (id < 0 || id >= c.vocab_size)
      r.fail(p + ".eos_token_ids", "token " + std::to_string(id) +
                                       " is outside the vocabulary of " +
                                       std::to_string(c.vocab_size));
  if (c.bos_token_id >= c.vocab_size || c.bos_token_id < -1)
    r.fail(p + ".bos_token_id", "token " + std::to_string(c.bos_token_id) +
                                    " is outside the vocabulary of " +
                                    std::to_string(c.vocab_size));
  const json *experts = r.optional_field(m, "num_experts");
  const json *per_token = r.optional_field(m, "num_experts_per_tok");
  if (bool(experts) != bool(per_token))
    r.fail(p, "num_experts and num_experts_per_tok go together");
  if (experts) {
    c.num_experts = r.integer(m, p, "num_experts", 1);
    c.num_experts_per_tok = r.integer(m, p, "num_experts_per_tok", 1);
    if (c.num_experts_per_tok > c.num_experts)
      r.fail(p + ".num_experts_per_tok", std::to_string(c.num_experts_per_tok) +
                                             " experts of " + std::to_string(c.num_experts));
  }
  return c;
}

KvCacheLayout parse_kv_cache(const Reader &r, const json &kv,
                             const std::optional<ModelConfig> &model) {
  const std::string p = "kv_cache";
  KvCacheLayout l;
  l.block_size = r.integer(kv, p, "block_size", 1);
  l.dtype = r.dtype(kv, p);
  l.layout = r.string(kv, p, "layout");
  l.num_layers = r.integer(kv, p, "num_layers", 1);
  l.num_kv_heads = r.integer(kv, p, "num_kv_heads", 1);
  l.head_dim = r.integer(kv, p, "head_dim", 1);
  l.bytes_per_token = r.integer(kv, p, "bytes_per_token", 1);
  if (model && l.num_layers != model->num_layers)
    r.fail(p + ".num_layers", std::to_string(l.num_layers) +
                                  " layers, the model has " +
                                  std::to_string(model->num_layers));
  int64_t expected = 2 * static_cast<int64_t>(dtype_size(l.dtype));
  for (int64_t factor : {l.num_layers, l.num_kv_heads, l.head_dim})
    if (__builtin_mul_overflow(expected, factor, &expected))
      r.fail(p, "the KV cache's size overflows int64");
  if (l.bytes_per_token != expected)
    r.fail(p + ".bytes_per_token",
           std::to_string(l.bytes_per_token) + ", but 2 * layers * kv_heads * "
           "head_dim * sizeof(dtype) is " + std::to_string(expected));
  return l;
}

// An FP8 checkpoint's codes or block scales, read as stored: a 2-D
// untransposed, unstacked f8_e4m3 or f32 array in no layout.
void check_fp8_block128(const Reader &r, const Buffer &buf, const std::string &p) {
  if (buf.from != QuantizedCheckpoint::Fp8Block128 || buf.stacked || buf.transpose)
    r.fail(p + ".quantization", "fp8_block128 arrays are an FP8 checkpoint's (\"from\" "
                                "fp8_block128), neither stacked nor transposed");
  if (buf.panels16 || buf.rows8x64)
    r.fail(p + ".layout", "fp8_block128 arrays are stored in no layout");
  const bool values = buf.part == QuantizedPart::Values;
  if (buf.part == QuantizedPart::Zeros || buf.dtype != (values ? DType::F8E4M3 : DType::F32) ||
      buf.shape.size() != 2)
    r.fail(p, std::string("fp8_block128 ") +
                  (values ? "values are a 2-D f8_e4m3" : "scales are a 2-D f32") + " array, got " +
                  quantized_part_name(buf.part) + " " + dtype_name(buf.dtype) + " [" +
                  shape_text(buf.shape) + "]");
}

Buffer parse_buffer(const Reader &r, const json &b, const std::string &p,
                    const std::optional<KvCacheLayout> &kv) {
  const std::string kind = r.string(b, p, "kind");
  Buffer buf{};
  bool known = false;
  for (const auto &[k, name] : kBufferKinds)
    if (kind == name) {
      buf.kind = k;
      known = true;
    }
  if (!known)
    r.fail(p + ".kind", "unknown buffer kind '" + kind +
                            "' (expected argument, result, weight, kv_cache or "
                            "activation)");
  if (const json *name = r.optional_field(b, "name"))
    buf.name = r.string(*name, p + ".name");
  else if (buf.kind != BufferKind::Activation)
    r.fail(p, "missing field 'name'");
  buf.dtype = r.dtype(b, p);
  buf.shape = r.expressions(r.field(b, p, "shape"), p + ".shape");

  switch (buf.kind) {
  case BufferKind::Weight: {
    buf.tensor = r.string(b, p, "tensor");
    if (buf.tensor.empty())
      r.fail(p + ".tensor", "empty tensor name");
    for (const Expression &dim : buf.shape)
      if (!dim.is_constant())
        r.fail(p + ".shape", "a weight's shape must be constant, got [" +
                                 shape_text(buf.shape) + "]");
    if (const json *stacked = r.optional_field(b, "stacked")) {
      buf.stacked = r.integer(*stacked, p + ".stacked");
      const size_t at = buf.tensor.find("{}");
      if (buf.stacked <= 0)
        r.fail(p + ".stacked", "must be positive, got " + std::to_string(buf.stacked));
      if (at == std::string::npos || buf.tensor.find("{}", at + 2) != std::string::npos)
        r.fail(p + ".tensor", "a stacked weight's tensor name holds \"{}\" once, got '" +
                                  buf.tensor + "'");
      if (buf.shape.size() < 2 || buf.shape[0].evaluate({}) != buf.stacked)
        r.fail(p + ".shape", "a weight of " + std::to_string(buf.stacked) +
                                 " stacked tensors has rank 2 or more and dimension 0 of " +
                                 std::to_string(buf.stacked) + ", got [" +
                                 shape_text(buf.shape) + "]");
    }
    // The dimensions of each stacked tensor (all of the shape if not stacked).
    const size_t tensor_dim = buf.stacked ? 1 : 0;
    const std::string transform = r.string(b, p, "transform");
    if (transform == "transpose")
      buf.transpose = true;
    else if (transform != "none")
      r.fail(p + ".transform", "unknown transform '" + transform +
                                   "' (expected none or transpose)");
    const json *layout = r.optional_field(b, "layout");
    if (layout) {
      const std::string name = layout->is_string() ? layout->get<std::string>() : "";
      if (name != "panels16" && name != "rows8x64")
        r.fail(p + ".layout", "unknown layout " + layout->dump() +
                                  " (expected \"panels16\" or \"rows8x64\")");
      if (buf.shape.size() != 2 || buf.stacked)
        r.fail(p + ".layout", name + " needs a 2-D shape, got [" +
                                  shape_text(buf.shape) + "]");
      buf.panels16 = name == "panels16";
      buf.rows8x64 = name == "rows8x64";
    }
    if (const json *from = r.optional_field(b, "from")) {
      const std::string layout = r.string(*from, p + ".from");
      buf.from = parse_quantized_checkpoint(layout);
      if (!buf.from)
        r.fail(p + ".from", "unknown quantized checkpoint '" + layout +
                                "' (expected gptq, gptq_v2, awq, fp8_block128, "
                                "compressed_tensors or compressed_tensors_int4)");
    }
    if (buf.from && is_four_bit(*buf.from) && (buf.stacked || transform != "none"))
      r.fail(p + ".from", "a 4-bit checkpoint's linear is neither stacked nor transposed");
    if (const json *quantization = r.optional_field(b, "quantization")) {
      const std::string scheme = r.string(*quantization, p + ".quantization");
      buf.quantization = parse_quantization(scheme);
      if (!buf.quantization)
        r.fail(p + ".quantization", "unknown quantization '" + scheme +
                                        "' (expected int8_channel, int4_group128 or "
                                        "fp8_block128)");
      if (buf.stacked && *buf.quantization != WeightQuantization::Int8Channel)
        r.fail(p + ".quantization", "a stacked weight is quantized by int8_channel only");
      const std::string part = r.string(b, p, "part");
      std::optional<QuantizedPart> parsed = parse_quantized_part(part);
      if (!parsed)
        r.fail(p + ".part", "unknown part '" + part + "' (expected values, scales or zeros)");
      buf.part = *parsed;
      if (buf.part == QuantizedPart::Zeros &&
          (!buf.from || !is_four_bit(*buf.from) ||
           *buf.quantization != WeightQuantization::Int4Group128))
        r.fail(p + ".part", "zeros come from a 4-bit checkpoint (\"from\" gptq, gptq_v2, "
                            "awq or compressed_tensors_int4) read as int4_group128");
      if (buf.part == QuantizedPart::Zeros &&
          (buf.dtype != DType::I8 || buf.shape.size() != 2 || buf.rows8x64))
        r.fail(p, "int4_group128 zeros are a 2-D i8 array, got " +
                      std::string(dtype_name(buf.dtype)) + " [" + shape_text(buf.shape) + "]");
      if (buf.quantization == WeightQuantization::Fp8Block128) {
        check_fp8_block128(r, buf, p);
      } else {
        const bool values = buf.part == QuantizedPart::Values;
        if (buf.panels16 || (buf.rows8x64 && !values))
          r.fail(p + ".layout",
                 "quantized " + part + " are not stored in " + layout->get<std::string>());
        const bool int4 = buf.quantization == WeightQuantization::Int4Group128;
        const std::string scheme_name = quantization_name(*buf.quantization);
        // A stacked weight's arrays have the experts' dimension in front.
        const size_t values_rank = 2 + tensor_dim;
        if (values && (buf.dtype != DType::I8 || buf.shape.size() != values_rank))
          r.fail(p, scheme_name + " values are a " + std::to_string(values_rank) +
                        "-D i8 array, got " + std::string(dtype_name(buf.dtype)) + " [" +
                        shape_text(buf.shape) + "]");
        const size_t scale_rank = (int4 ? 2 : 1) + tensor_dim;
        if (buf.part == QuantizedPart::Scales &&
            (buf.dtype != DType::F32 || buf.shape.size() != scale_rank))
          r.fail(p, scheme_name + " scales are a " + std::to_string(scale_rank) +
                        "-D f32 array, got " + std::string(dtype_name(buf.dtype)) + " [" +
                        shape_text(buf.shape) + "]");
        if (buf.rows8x64 &&
            (buf.shape[0].evaluate({}) % 8 != 0 || buf.shape[1].evaluate({}) % 64 != 0))
          r.fail(p + ".layout", "rows8x64 needs rows a multiple of 8 and columns of 64, got [" +
                                    shape_text(buf.shape) + "]");
      }
    } else if (r.optional_field(b, "part")) {
      r.fail(p + ".part", "a part of a weight that is not quantized");
    } else if (buf.rows8x64) {
      r.fail(p + ".layout", "rows8x64 holds quantized values only");
    }
    // The scales of a quantized weight are 1-D whatever the matrix's transform.
    const bool scales = buf.quantization && buf.part == QuantizedPart::Scales;
    if (buf.transpose && buf.shape.size() != 2 + tensor_dim && !scales)
      r.fail(p + ".transform", std::string("transpose needs a ") +
                                   (buf.stacked ? "3-D shape (stacked 2-D tensors)" : "2-D shape") +
                                   ", got [" + shape_text(buf.shape) + "]");
    if (const json *rows = r.optional_field(b, "rows")) {
      if (!rows->is_array() || rows->size() != 2)
        r.fail(p + ".rows", "expected [begin, end], got " + rows->dump());
      buf.rows_begin = r.integer((*rows)[0], p + ".rows[0]");
      buf.rows_end = r.integer((*rows)[1], p + ".rows[1]");
      if (buf.rows_begin < 0 || buf.rows_end <= buf.rows_begin)
        r.fail(p + ".rows", "empty or negative range " + rows->dump());
      // FP8 block scales have a row per block of 128 rows the range spans.
      const bool block_scales = buf.quantization == WeightQuantization::Fp8Block128;
      if (block_scales && buf.rows_begin % kFp8BlockSize != 0)
        r.fail(p + ".rows", "fp8_block128 rows start at a block of 128, got " + rows->dump());
      const int64_t rows_held =
          block_scales && buf.part == QuantizedPart::Scales
              ? (buf.rows_end + kFp8BlockSize - 1) / kFp8BlockSize - buf.rows_begin / kFp8BlockSize
              : buf.rows_end - buf.rows_begin;
      if (buf.shape.size() <= tensor_dim || buf.shape[tensor_dim].evaluate({}) != rows_held)
        r.fail(p + ".rows", "rows " + rows->dump() + " do not match shape [" +
                                shape_text(buf.shape) + "]");
    }
    break;
  }
  case BufferKind::KvCache: {
    if (!kv)
      r.fail(p, "a kv_cache buffer, but the manifest has no 'kv_cache'");
    buf.layer = r.integer(r.field(b, p, "layer"), p + ".layer");
    if (buf.layer < 0 || buf.layer >= kv->num_layers)
      r.fail(p + ".layer", "layer " + std::to_string(buf.layer) +
                               " is out of range (" +
                               std::to_string(kv->num_layers) + " layers)");
    const std::string role = r.string(b, p, "role");
    if (role != "k" && role != "v")
      r.fail(p + ".role", "unknown role '" + role + "' (expected k or v)");
    buf.role = role[0];
    if (buf.dtype != kv->dtype)
      r.fail(p + ".dtype", std::string(dtype_name(buf.dtype)) +
                               ", but kv_cache.dtype is " + dtype_name(kv->dtype));
    // Sized once for the whole pool, so only NB may appear; and a pool of n
    // blocks holds n * block_size tokens of one layer and role, whatever
    // the layout, or the engine's memory accounting would be wrong.
    for (const Expression &dim : buf.shape)
      if (dim.uses("T") || dim.uses("S") || dim.uses("MB"))
        r.fail(p + ".shape", "a KV cache shape may use only NB, got [" +
                                 shape_text(buf.shape) + "]");
    const int64_t block_bytes = kv->bytes_per_token / (2 * kv->num_layers) * kv->block_size;
    for (int64_t blocks : {1, 2}) {
      Symbols s;
      s.NB = blocks;
      size_t bytes = 0;
      try {
        bytes = buf.byte_size(s, 0);
      } catch (const std::runtime_error &) {
        bytes = 0; // a negative or huge dimension: reported below
      }
      if (bytes != static_cast<size_t>(blocks * block_bytes))
        r.fail(p + ".shape", "[" + shape_text(buf.shape) + "] holds " +
                                 std::to_string(bytes) + " bytes for NB=" +
                                 std::to_string(blocks) + ", kv_cache says " +
                                 std::to_string(blocks * block_bytes) +
                                 " (block_size * num_kv_heads * head_dim * dtype size)");
    }
    break;
  }
  default:
    break;
  }
  return buf;
}

void check_buffers(const Reader &r, const std::vector<Buffer> &buffers,
                   const std::optional<KvCacheLayout> &kv) {
  std::map<std::tuple<std::string, int64_t, bool, int64_t, int64_t, bool,
                      std::optional<WeightQuantization>, QuantizedPart>,
           size_t> weights;
  std::set<std::pair<int64_t, char>> kv_pools;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const Buffer &b = buffers[i];
    const std::string p = "buffers[" + std::to_string(i) + "]";
    if (b.kind == BufferKind::Weight) {
      auto [it, fresh] = weights.emplace(
          std::make_tuple(b.tensor, b.stacked, b.transpose, b.rows_begin, b.rows_end, b.panels16,
                          b.quantization, b.part),
          i);
      if (!fresh)
        r.fail(p, "tensor '" + b.tensor + "' with transform " +
                      (b.transpose ? "transpose" : "none") +
                      (b.rows_end < 0 ? std::string()
                                      : " rows [" + std::to_string(b.rows_begin) +
                                            ", " + std::to_string(b.rows_end) + "]") +
                      (b.panels16 ? " layout panels16" : "") +
                      (b.quantization ? std::string(" quantization ") +
                                            quantization_name(*b.quantization) + " " +
                                            quantized_part_name(b.part)
                                      : std::string()) +
                      " is already bound by buffers[" + std::to_string(it->second) + "]");
    } else if (b.kind == BufferKind::KvCache) {
      if (!kv_pools.emplace(b.layer, b.role).second)
        r.fail(p, "a second KV cache buffer for layer " + std::to_string(b.layer) +
                      " role " + b.role);
    }
  }
  if (!kv_pools.empty() && kv_pools.size() != static_cast<size_t>(2 * kv->num_layers))
    r.fail("buffers", std::to_string(kv_pools.size()) + " KV cache buffers, " +
                          "expected one per layer and role (" +
                          std::to_string(2 * kv->num_layers) + ")");
}

std::vector<Kernel> parse_kernels(const Reader &r, const json &list,
                                  bool cuda) {
  std::vector<Kernel> kernels;
  std::set<std::string> names;
  for (size_t i = 0; i < r.array(list, "kernels").size(); ++i) {
    const std::string p = "kernels[" + std::to_string(i) + "]";
    Kernel k{r.string(list[i], p, "name"), r.string(list[i], p, "symbol")};
    if (k.name.empty() || k.symbol.empty())
      r.fail(p, "empty kernel name or symbol");
    if (cuda) {
      const json &block = r.array(r.field(list[i], p, "block"), p + ".block");
      if (block.size() != 3)
        r.fail(p + ".block", "expected 3 dimensions, got " + block.dump());
      int64_t threads = 1;
      for (size_t d = 0; d < 3; ++d) {
        k.block[d] = r.integer(block[d], p + ".block");
        if (k.block[d] < 1 || k.block[d] > 1024)
          r.fail(p + ".block", "dimension out of [1, 1024]: " + block.dump());
        threads *= k.block[d];
      }
      if (threads > 1024)
        r.fail(p + ".block", "more than 1024 threads: " + block.dump());
      k.shared_bytes = r.integer(r.field(list[i], p, "shared_bytes"),
                                 p + ".shared_bytes");
      if (k.shared_bytes < 0)
        r.fail(p + ".shared_bytes", "negative");
      if (const json *programmatic = r.optional_field(list[i], "programmatic_launch"))
        k.programmatic_launch = r.boolean(*programmatic, p + ".programmatic_launch");
    }
    if (!names.insert(k.name).second)
      r.fail(p + ".name", "kernel '" + k.name + "' is listed twice");
    kernels.push_back(std::move(k));
  }
  return kernels;
}

// The arrays of the step contract match abi::kStepArguments and kStepResults.
void check_contract_buffer(const Reader &r, const Buffer &b,
                           const abi::ContractArray &want, const std::string &p) {
  std::string shape = shape_text(b.shape);
  std::string want_shape;
  for (const char *c = want.shape; *c; ++c)
    if (*c != ' ')
      want_shape += *c;
  if (b.name != want.name || std::string(dtype_name(b.dtype)) != want.dtype ||
      shape != want_shape)
    r.fail(p, "buffer '" + b.name + "' " + dtype_name(b.dtype) + " [" + shape +
                  "], the step contract says '" + want.name + "' " + want.dtype +
                  " [" + want_shape + "]");
}

EntryPoint parse_entry(const Reader &r, const json &e, const std::string &p,
                       const Manifest &m,
                       std::vector<std::pair<size_t, size_t>> &kernel_arity) {
  EntryPoint entry;
  entry.name = r.string(e, p, "name");
  const auto ids = [&](const char *key, BufferKind kind) {
    std::vector<int> out;
    const json &list = r.array(r.field(e, p, key), p + "." + key);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string q = p + "." + key + "[" + std::to_string(i) + "]";
      const int id = r.buffer_id(list[i], q, m.buffers.size());
      if (m.buffers[id].kind != kind)
        r.fail(q, "buffer " + std::to_string(id) + " is of kind " +
                      buffer_kind_name(m.buffers[id].kind) + ", expected " +
                      buffer_kind_name(kind));
      out.push_back(id);
    }
    return out;
  };
  entry.arguments = ids("arguments", BufferKind::Argument);
  entry.results = ids("results", BufferKind::Result);
  if (std::set<int>(entry.arguments.begin(), entry.arguments.end()).size() !=
          entry.arguments.size() ||
      std::set<int>(entry.results.begin(), entry.results.end()).size() !=
          entry.results.size())
    r.fail(p, "a buffer is listed twice among the arguments or results");

  if (entry.name == "step") {
    if (!m.model || !m.kv_cache)
      r.fail(p, "the step entry point needs the manifest's 'model' and 'kv_cache'");
    if (entry.arguments.size() != abi::kNumStepArguments)
      r.fail(p + ".arguments", std::to_string(entry.arguments.size()) +
                                   " arguments, the step contract has " +
                                   std::to_string(abi::kNumStepArguments));
    for (int i = 0; i < abi::kNumStepArguments; ++i)
      check_contract_buffer(r, m.buffers[entry.arguments[i]], abi::kStepArguments[i],
                            p + ".arguments[" + std::to_string(i) + "]");
    if (entry.results.size() != abi::kNumStepResults)
      r.fail(p + ".results", std::to_string(entry.results.size()) +
                                 " results, the step contract has " +
                                 std::to_string(abi::kNumStepResults));
    for (int i = 0; i < abi::kNumStepResults; ++i)
      check_contract_buffer(r, m.buffers[entry.results[i]], abi::kStepResults[i],
                            p + ".results[" + std::to_string(i) + "]");
  }

  const json &list = r.array(r.field(e, p, "dispatches"), p + ".dispatches");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string q = p + ".dispatches[" + std::to_string(i) + "]";
    const json &d = list[i];
    Dispatch dispatch;
    const std::string kernel = r.string(d, q, "kernel");
    dispatch.kernel = -1;
    for (size_t k = 0; k < m.kernels.size(); ++k)
      if (m.kernels[k].name == kernel)
        dispatch.kernel = static_cast<int>(k);
    if (dispatch.kernel < 0)
      r.fail(q + ".kernel", "kernel '" + kernel + "' is not listed in kernels");
    const json &bindings = r.array(r.field(d, q, "bindings"), q + ".bindings");
    for (size_t b = 0; b < bindings.size(); ++b) {
      const std::string bq = q + ".bindings[" + std::to_string(b) + "]";
      const int id = r.buffer_id(bindings[b], bq, m.buffers.size());
      // An argument or result is only bound while its entry point runs.
      const BufferKind kind = m.buffers[id].kind;
      const std::vector<int> &own =
          kind == BufferKind::Argument ? entry.arguments : entry.results;
      if ((kind == BufferKind::Argument || kind == BufferKind::Result) &&
          std::find(own.begin(), own.end(), id) == own.end())
        r.fail(bq, "buffer " + std::to_string(id) + " is of kind " +
                       buffer_kind_name(kind) + " but not one of this entry "
                       "point's " + buffer_kind_name(kind) + "s");
      dispatch.bindings.push_back(id);
    }
    dispatch.push_constants =
        r.expressions(r.field(d, q, "push_constants"), q + ".push_constants");
    std::vector<Expression> grid = r.expressions(r.field(d, q, "grid"), q + ".grid");
    if (grid.size() != 3)
      r.fail(q + ".grid", std::to_string(grid.size()) +
                              " dimensions, expected 3 (x, y, z)");
    dispatch.grid = {grid[0], grid[1], grid[2]};

    // A kernel's signature is fixed: every dispatch of it binds as many
    // buffers and passes as many constants.
    auto &[num_bindings, num_constants] = kernel_arity[dispatch.kernel];
    const std::pair<size_t, size_t> arity{dispatch.bindings.size(),
                                          dispatch.push_constants.size()};
    if (num_bindings == SIZE_MAX) {
      num_bindings = arity.first;
      num_constants = arity.second;
    } else if (arity != std::make_pair(num_bindings, num_constants)) {
      r.fail(q, "kernel '" + kernel + "' dispatched with " +
                    std::to_string(arity.first) + " bindings and " +
                    std::to_string(arity.second) + " push constants, elsewhere with " +
                    std::to_string(num_bindings) + " and " +
                    std::to_string(num_constants));
    }
    entry.dispatches.push_back(std::move(dispatch));
  }
  return entry;
}

std::vector<std::string> parse_cpu_features(const Reader &r, const json &value,
                                            const std::string &path) {
  const json &list = r.array(value, path);
  std::vector<std::string> features;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const std::string name = r.string(list[i], p);
    if (std::find_if(std::begin(abi::kCpuFeatures), std::end(abi::kCpuFeatures),
                     [&](const char *known) { return name == known; }) ==
        std::end(abi::kCpuFeatures))
      r.fail(p, "unknown CPU feature '" + name + "'");
    features.push_back(name);
  }
  return features;
}

// The kernels of a CPU bundle: kernels.cpu.so, then the fallbacks'.
std::vector<CpuKernels> parse_cpu_kernels(const Reader &r, const json &root) {
  CpuKernels first{{}, abi::kCpuKernelsFile, {}};
  if (const json *cpu = r.optional_field(root, "cpu"))
    first.cpu = r.string(*cpu, "cpu");
  if (const json *features = r.optional_field(root, "cpu_features"))
    first.features = parse_cpu_features(r, *features, "cpu_features");
  std::vector<CpuKernels> all{first};
  const json *fallbacks = r.optional_field(root, "cpu_fallbacks");
  if (!fallbacks)
    return all;
  const json &list = r.array(*fallbacks, "cpu_fallbacks");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string p = "cpu_fallbacks[" + std::to_string(i) + "]";
    CpuKernels k;
    k.cpu = r.string(r.field(list[i], p, "cpu"), p + ".cpu");
    k.file = r.string(r.field(list[i], p, "kernels"), p + ".kernels");
    // A file of the bundle directory itself, and a shared object.
    if (k.file.find('/') != std::string::npos || k.file.size() <= 3 ||
        k.file.compare(k.file.size() - 3, 3, ".so") != 0)
      r.fail(p + ".kernels", "expected the name of a .so file in the bundle directory, got '" +
                                 k.file + "'");
    k.features = parse_cpu_features(r, r.field(list[i], p, "cpu_features"),
                                     p + ".cpu_features");
    for (const CpuKernels &other : all)
      if (other.file == k.file || (!other.cpu.empty() && other.cpu == k.cpu))
        r.fail(p, "the kernels for CPU '" + k.cpu + "' (" + k.file +
                      ") repeat an earlier set's CPU or file");
    all.push_back(std::move(k));
  }
  return all;
}

} // namespace

const char *buffer_kind_name(BufferKind kind) {
  for (const auto &[k, name] : kBufferKinds)
    if (k == kind)
      return name;
  return "?";
}

std::string shape_text(const std::vector<Expression> &shape) {
  std::string s;
  for (const Expression &e : shape)
    s += (s.empty() ? "" : ",") + e.text();
  return s;
}

std::string Buffer::stacked_tensor(int64_t index) const {
  std::string name = tensor;
  return name.replace(name.find("{}"), 2, std::to_string(index));
}

size_t Buffer::byte_size(const Symbols &symbols, int id) const {
  int64_t size = static_cast<int64_t>(dtype_size(dtype));
  for (const Expression &dim : shape) {
    const int64_t n = dim.evaluate(symbols);
    if (n < 0 || __builtin_mul_overflow(size, n, &size)) {
      std::string dims;
      for (const Expression &d : shape)
        dims += (dims.empty() ? "" : ", ") + std::to_string(d.evaluate(symbols));
      throw std::runtime_error("buffer " + std::to_string(id) +
                               (name.empty() ? "" : " '" + name + "'") +
                               " has shape [" + dims + "] for [" + shape_text(shape) +
                               "]: " + (n < 0 ? "negative dimension" : "too large"));
    }
  }
  return static_cast<size_t>(size);
}

Manifest Manifest::parse(std::string_view text, const std::string &origin) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) { // a syntax error, or a number out of range
    throw std::runtime_error(origin + ": not valid JSON: " + e.what());
  }
  const Reader r(origin);
  if (!root.is_object())
    r.fail("manifest", "expected a JSON object");
  check_versions(r, root);

  Manifest m;
  m.target = r.string(root, "manifest", "target");
  if (const json *model = r.optional_field(root, "model"))
    m.model = parse_model(r, *model);
  if (const json *kv = r.optional_field(root, "kv_cache"))
    m.kv_cache = parse_kv_cache(r, *kv, m.model);
  if (const json *w = r.optional_field(root, "weights")) {
    if (!w->is_object())
      r.fail("weights", "expected a JSON object, got " + w->dump());
    if (const json *e = r.optional_field(*w, "embedded"))
      m.weights.embedded = r.string(*e, "weights.embedded");
    if (const json *c = r.optional_field(*w, "checkpoint"))
      m.weights.checkpoint = r.string(*c, "weights.checkpoint");
  }

  const json &buffers = r.array(r.field(root, "manifest", "buffers"), "buffers");
  for (size_t i = 0; i < buffers.size(); ++i)
    m.buffers.push_back(
        parse_buffer(r, buffers[i], "buffers[" + std::to_string(i) + "]", m.kv_cache));
  check_buffers(r, m.buffers, m.kv_cache);

  if (m.target != "cpu" && m.target != abi::kCudaTarget)
    r.fail("target", "unknown target '" + m.target + "' (known: cpu, " +
                         abi::kCudaTarget + ")");
  if (m.target == "cpu")
    m.cpu_kernels = parse_cpu_kernels(r, root);
  else
    for (const char *field : {"cpu", "cpu_features", "cpu_fallbacks"})
      if (r.optional_field(root, field))
        r.fail(field, "a " + m.target + " bundle's kernels are not for a CPU");
  m.kernels = parse_kernels(r, r.field(root, "manifest", "kernels"),
                            m.target == abi::kCudaTarget);

  const json &entries =
      r.array(r.field(root, "manifest", "entry_points"), "entry_points");
  std::vector<std::pair<size_t, size_t>> kernel_arity(m.kernels.size(),
                                                      {SIZE_MAX, SIZE_MAX});
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string p = "entry_points[" + std::to_string(i) + "]";
    EntryPoint e = parse_entry(r, entries[i], p, m, kernel_arity);
    if (m.find_entry(e.name))
      r.fail(p + ".name", "entry point '" + e.name + "' is listed twice");
    m.entry_points.push_back(std::move(e));
  }
  return m;
}

Manifest Manifest::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw std::runtime_error(path + ": read error");
  return parse(text.str(), path);
}

const EntryPoint *Manifest::find_entry(std::string_view name) const {
  for (const EntryPoint &e : entry_points)
    if (e.name == name)
      return &e;
  return nullptr;
}

std::vector<int> Manifest::scratch_buffers(const EntryPoint &e) const {
  std::vector<int> scratch = e.results;
  for (const Dispatch &d : e.dispatches)
    for (int id : d.bindings)
      if (buffers[id].kind == BufferKind::Activation &&
          std::find(scratch.begin(), scratch.end(), id) == scratch.end())
        scratch.push_back(id);
  return scratch;
}

StepBounds Manifest::step_bounds(int64_t num_blocks) const {
  return {model->vocab_size, model->max_position_embeddings, kv_cache->block_size,
          num_blocks};
}

} // namespace llmserve
