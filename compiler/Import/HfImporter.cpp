//===- HfImporter.cpp - Hugging Face checkpoint to the llmserve dialect ---===//
//
// Reads config.json, hands it to the model family of its model_type
// (compiler/Import/Models/), checks the tensor names the graph uses against
// the checkpoint's, and records the model config and the checkpoint on the
// module.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/HfImporter.h"

#include "compiler/Import/GraphBuilder.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::llmserve;
namespace json = llvm::json;

namespace {

/// A safetensors file, mapped, and its parsed header.
struct SafetensorsFile {
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  json::Object header;
  llvm::StringRef data; // the bytes after the header
};

/// The file at `path`, mapped (never read whole: shards are gigabytes),
/// with its header checked to fit the file and parsed.
llvm::Expected<SafetensorsFile> openSafetensors(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError(path + ": " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  uint64_t length = 0;
  for (int i = 7; i >= 0 && bytes.size() >= 8; --i)
    length = length << 8 | static_cast<uint8_t>(bytes[i]);
  if (bytes.size() < 8 || length > bytes.size() - 8)
    return makeError(path + ": truncated safetensors header");
  auto header = json::parse(bytes.substr(8, length));
  if (!header || !header->getAsObject()) {
    if (!header)
      llvm::consumeError(header.takeError());
    return makeError(path + ": invalid safetensors header");
  }
  return SafetensorsFile{std::move(*buffer), std::move(*header->getAsObject()),
                         bytes.substr(8 + length)};
}

/// The tensor names of a checkpoint directory, from the safetensors headers
/// or the shard index; empty when the directory holds no weights.
llvm::Expected<llvm::StringSet<>> readTensorNames(llvm::StringRef dir) {
  llvm::StringSet<> names;
  llvm::SmallString<256> index(dir), single(dir);
  llvm::sys::path::append(index, "model.safetensors.index.json");
  llvm::sys::path::append(single, "model.safetensors");
  if (llvm::sys::fs::exists(index)) {
    auto value = readJson(index);
    if (!value)
      return value.takeError();
    const json::Object *map =
        value->getAsObject() ? value->getAsObject()->getObject("weight_map")
                             : nullptr;
    if (!map)
      return makeError(index + ": no \"weight_map\" object");
    for (const auto &entry : *map)
      names.insert(entry.first.str());
    return names;
  }
  if (!llvm::sys::fs::exists(single))
    return names;
  auto file = openSafetensors(single);
  if (!file)
    return file.takeError();
  for (const auto &entry : file->header)
    if (entry.first != "__metadata__")
      names.insert(entry.first.str());
  return names;
}

/// The files of a checkpoint directory that hold each tensor: the shard
/// index's weight_map (readTensorNames has checked it), or model.safetensors
/// for all. A file named by a path rather than a name is an error.
llvm::Expected<llvm::StringMap<std::string>>
tensorFiles(llvm::StringRef dir, const llvm::StringSet<> &names) {
  llvm::StringMap<std::string> files;
  llvm::SmallString<256> index(dir);
  llvm::sys::path::append(index, "model.safetensors.index.json");
  if (!llvm::sys::fs::exists(index)) {
    for (const auto &name : names)
      files[name.getKey()] = "model.safetensors";
    return files;
  }
  auto value = readJson(index);
  if (!value)
    return value.takeError();
  for (const auto &entry : *value->getAsObject()->getObject("weight_map")) {
    std::optional<llvm::StringRef> file = entry.second.getAsString();
    if (!file || llvm::sys::path::filename(*file) != *file || *file == "..")
      return makeError(index + ": weight_map[\"" + entry.first.str() +
                       "\"] is not the name of a file in the directory");
    files[entry.first.str()] = file->str();
  }
  return files;
}

/// The `count` values of the F32, BF16 or F16 tensor `name` of `file` (at
/// `path`), of any shape with that many elements, as KV-cache scales.
llvm::Expected<SmallVector<float>> readKvScales(const SafetensorsFile &file,
                                               llvm::StringRef path, llvm::StringRef name,
                                               int64_t count) {
  const json::Object *tensor = file.header.getObject(name);
  if (!tensor)
    return makeError(path + ": no tensor '" + name + "'");
  std::string dtype = tensor->getString("dtype").value_or("").str();
  const json::Array *shape = tensor->getArray("shape");
  const json::Array *offsets = tensor->getArray("data_offsets");
  int64_t elements = 1;
  bool wellFormed = shape != nullptr;
  SmallVector<std::string> dims;
  for (const json::Value &dim : shape ? *shape : json::Array()) {
    int64_t size = dim.getAsInteger().value_or(-1);
    wellFormed &= size >= 0 && !llvm::MulOverflow(elements, size, elements);
    dims.push_back(std::to_string(size));
  }
  size_t width = dtype == "F32" ? 4 : dtype == "BF16" || dtype == "F16" ? 2 : 0;
  std::optional<int64_t> begin = offsets && offsets->size() == 2 ? (*offsets)[0].getAsInteger()
                                                                  : std::nullopt;
  if (!wellFormed || elements != count || !width || !begin || *begin < 0 ||
      static_cast<uint64_t>(*begin) + width * count > file.data.size())
    return makeError(path + ": tensor '" + name + "' is " + dtype + " [" +
                     llvm::join(dims, ", ") + "] at its offsets, but the KV-cache scales are " +
                     (count == 1 ? "one f32, bf16 or f16 value"
                                 : std::to_string(count) +
                                       " f32, bf16 or f16 values, one per KV head"));
  SmallVector<float> values;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, file.data.data() + *begin + i * width, width);
    if (dtype == "F32") {
      values.push_back(llvm::bit_cast<float>(bits));
    } else if (dtype == "BF16") {
      values.push_back(llvm::bit_cast<float>(bits << 16));
    } else {
      llvm::APFloat half(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
      bool lost;
      half.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
      values.push_back(half.convertToFloat());
    }
  }
  return values;
}

/// kv_cache_scheme's scales, layer by layer: the tensors named
/// "<...>.layers.<i>.self_attn.k_scale" and "v_scale", as llm-compressor
/// saves them, each of `count` values (1, or one per KV head), positive and
/// finite.
llvm::Expected<SmallVector<StoredQuantization::KvCacheScales>>
readKvCacheScales(llvm::StringRef dir, const llvm::StringSet<> &names, int64_t layers,
                  int64_t count) {
  if (names.empty())
    return makeError(dir + ": quantization_config.kv_cache_scheme: the KV-cache scales are "
                           "read from the checkpoint's tensors, and the directory has none");
  auto files = tensorFiles(dir, names);
  if (!files)
    return files.takeError();
  llvm::StringMap<SafetensorsFile> opened;
  SmallVector<StoredQuantization::KvCacheScales> scales(layers);
  for (int64_t layer = 0; layer < layers; ++layer) {
    for (const char *role : {"k_scale", "v_scale"}) {
      std::string suffix = (".layers." + llvm::Twine(layer) + ".self_attn." + role).str();
      auto it = llvm::find_if(names, [&](const auto &n) {
        return n.getKey().ends_with(suffix);
      });
      if (it == names.end())
        return makeError(dir + ": quantization_config has a kv_cache_scheme, but the "
                               "checkpoint has no tensor '<...>" + suffix + "'");
      llvm::StringRef name = it->getKey();
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, files->lookup(name));
      auto file = opened.find(path);
      if (file == opened.end()) {
        auto mapped = openSafetensors(path);
        if (!mapped)
          return mapped.takeError();
        file = opened.try_emplace(path, std::move(*mapped)).first;
      }
      auto values = readKvScales(file->second, path, name, count);
      if (!values)
        return values.takeError();
      for (float value : *values)
        if (!std::isfinite(value) || value <= 0)
          return makeError(path + ": KV-cache scale '" + name + "' holds " +
                           std::to_string(value) + "; scales are positive and finite");
      (role[0] == 'k' ? scales[layer].key : scales[layer].value) = std::move(*values);
    }
  }
  return scales;
}

DictionaryAttr modelAttr(Builder &b, const ModelShape &m, const Config &c) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("architecture", b.getStringAttr(m.architecture)),
      b.getNamedAttr("vocab_size", b.getI64IntegerAttr(m.vocab)),
      b.getNamedAttr("hidden_size", b.getI64IntegerAttr(m.hidden)),
      b.getNamedAttr("num_layers", b.getI64IntegerAttr(m.layers)),
      b.getNamedAttr("num_heads", b.getI64IntegerAttr(m.heads)),
      b.getNamedAttr("num_kv_heads", b.getI64IntegerAttr(m.kvHeads)),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(m.headDim)),
      b.getNamedAttr("max_position_embeddings",
                     b.getI64IntegerAttr(m.maxPositions)),
  };
  SmallVector<int64_t> eos = c.integers("eos_token_id");
  attrs.push_back(b.getNamedAttr(
      "eos_token_ids",
      b.getArrayAttr(llvm::map_to_vector(eos, [&](int64_t id) -> Attribute {
        return b.getI64IntegerAttr(id);
      }))));
  if (m.experts > 0) {
    attrs.push_back(b.getNamedAttr("num_experts", b.getI64IntegerAttr(m.experts)));
    attrs.push_back(b.getNamedAttr("num_experts_per_tok",
                                   b.getI64IntegerAttr(m.expertsPerToken)));
  }
  if (SmallVector<int64_t> bos = c.integers("bos_token_id"); !bos.empty())
    attrs.push_back(
        b.getNamedAttr("bos_token_id", b.getI64IntegerAttr(bos.front())));
  return b.getDictionaryAttr(attrs);
}


/// The family of `modelType`, or an error listing the supported ones.
llvm::Expected<ModelReader> familyOf(const Config &config, llvm::StringRef modelType) {
  for (const ModelFamily &family : modelFamilies())
    if (family.modelType == modelType)
      return family.read;
  SmallVector<llvm::StringRef> supported = llvm::map_to_vector(
      modelFamilies(), [](const ModelFamily &f) -> llvm::StringRef { return f.modelType; });
  return config.error("unsupported model_type '" + modelType + "' (supported: " +
                      llvm::join(supported, ", ") + ")");
}

} // namespace

/// quant_method fp8 (transformers' FineGrainedFP8Config): e4m3 weights
/// with a scale per block of 128 x 128, dequantized at load.
static llvm::Expected<std::optional<StoredQuantization>>
readFp8Checkpoint(const Config &q) {
  std::string format = q.string("fmt", "e4m3");
  if (format != "e4m3")
    return q.error("fmt '" + format + "' is not read: llmserve reads e4m3 weights");
  constexpr int64_t kBlock = 128;
  if (q.integers("weight_block_size") != SmallVector<int64_t>{kBlock, kBlock})
    return q.error("weight_block_size must be [128, 128]: llmserve reads FP8 "
                   "weights with a scale per block of 128 x 128");
  return StoredQuantization{QuantizedCheckpoint::fp8_block128};
}

/// One config group of a compressed-tensors checkpoint: the formats
/// llmserve reads, noted in `stored`.
static llvm::Error readCompressedGroup(const Config &group, llvm::StringRef format,
                                       StoredQuantization &stored) {
  const json::Object *object = group.nested("weights");
  if (!object)
    return group.error("has no \"weights\" object");
  Config weights(*object, group.file() + ".weights");
  std::string type = weights.string("type", "int");
  std::string strategy = weights.string("strategy", "tensor");
  int64_t bits;
  LLMSERVE_TRY_ASSIGN(bits, weights.integer("num_bits"));
  if (!weights.boolean("symmetric", true))
    return weights.error("symmetric false is not read: llmserve reads symmetric weights");
  if (weights.boolean("dynamic", false))
    return weights.error("dynamic true is not read: llmserve reads weights with stored scales");
  std::string actOrder = weights.string("actorder", "static");
  if (actOrder != "static" && actOrder != "weight")
    return weights.error("actorder '" + actOrder +
                         "' is not read: llmserve reads groups of consecutive columns");
  if (format == "pack-quantized") {
    int64_t groupSize;
    LLMSERVE_TRY_ASSIGN(groupSize, weights.integer("group_size", 0));
    if (type != "int" || bits != 4 || strategy != "group" || groupSize != kInt4GroupColumns)
      return weights.error("type " + type + ", " + llvm::Twine(bits) + " bits, strategy " +
                           strategy + " is not read in pack-quantized: llmserve reads "
                           "4-bit int weights in groups of 128");
    stored.packedInt4 = true;
    return llvm::Error::success();
  }
  bool floating = format == "float-quantized";
  if (!floating && format != "int-quantized")
    return group.error("format '" + format + "' is not read (llmserve reads "
                       "float-quantized, int-quantized and pack-quantized)");
  if (type != (floating ? "float" : "int") || bits != 8)
    return weights.error("type " + type + " with " + llvm::Twine(bits) + " bits is not read in " +
                         format + ": llmserve reads " + (floating ? "FP8 e4m3" : "int8") +
                         " weights");
  if (strategy == "block") {
    if (weights.integers("block_structure") != SmallVector<int64_t>{128, 128})
      return weights.error("block_structure must be [128, 128]: llmserve reads blocks of "
                           "128 x 128");
  } else if (strategy != "tensor" && strategy != "channel" && strategy != "group") {
    return weights.error("strategy '" + strategy +
                         "' is not read (llmserve reads tensor, channel, group and block)");
  }
  stored.eightBit = true;
  return llvm::Error::success();
}

/// quant_method compressed-tensors (llm-compressor's checkpoints): the
/// weights of each config group in a format llmserve reads. Activation
/// quantization is not applied: linears compute on the dequantized (or
/// int4) weights in the bundle's own types, as weight-only kernels do.
static llvm::Expected<std::optional<StoredQuantization>>
readCompressedTensors(const Config &q) {
  std::string status = q.string("quantization_status", "compressed");
  if (status != "compressed")
    return q.error("quantization_status '" + status +
                   "' is not read: llmserve reads compressed checkpoints");
  if (const json::Object *sparsity = q.nested("sparsity_config"); sparsity && !sparsity->empty())
    return q.error("sparsity_config is not read: llmserve reads dense weights");
  const json::Object *groups = q.nested("config_groups");
  if (!groups || groups->empty())
    return q.error("config_groups is missing or empty");
  StoredQuantization stored{QuantizedCheckpoint::compressed_tensors};
  std::string format = q.string("format", "");
  for (const auto &[name, value] : *groups) {
    const json::Object *object = value.getAsObject();
    if (!object)
      return q.error("config_groups." + name.str() + " is not an object");
    Config group(*object, q.file() + ".config_groups." + name.str());
    if (llvm::Error error = readCompressedGroup(group, group.string("format", format), stored))
      return std::move(error);
  }
  if (const json::Object *kv = q.nested("kv_cache_scheme")) {
    stored.kvCacheScheme = true;
    Config scheme(*kv, q.file() + ".kv_cache_scheme");
    int64_t bits;
    LLMSERVE_TRY_ASSIGN(bits, scheme.integer("num_bits"));
    std::string strategy = scheme.string("strategy", "tensor");
    if (scheme.string("type", "") != "float" || bits != 8 ||
        (strategy != "tensor" && strategy != "attn_head") || !scheme.boolean("symmetric", true))
      return scheme.error("llmserve reads FP8 KV-cache scales per tensor or per KV head "
                          "(type float, 8 bits, strategy tensor or attn_head, symmetric)");
    stored.kvCachePerHead = strategy == "attn_head";
  }
  return stored;
}

llvm::Expected<std::optional<StoredQuantization>>
mlir::llmserve::readQuantizedCheckpoint(const Config &config) {
  const json::Object *object = config.nested("quantization_config");
  if (!object)
    return std::nullopt;
  Config q(*object, config.file() + ": quantization_config");
  std::string method = q.string("quant_method", "(none)");
  // Other stored quantizations (bitsandbytes, modelopt, ...) hold
  // packed tensors under other names; say so rather than miss their weights.
  if (method != "gptq" && method != "awq" && method != "fp8" && method != "compressed-tensors")
    return config.error("quantization_config.quant_method '" + method +
                        "' is not read: llmc imports unquantized f32, f16 and "
                        "bf16 checkpoints, 4-bit GPTQ and AWQ ones, FP8 ones "
                        "with block scales and compressed-tensors ones (llmc "
                        "compile --quantize int8|int4 quantizes an unquantized one)");
  if (method == "fp8")
    return readFp8Checkpoint(q);
  if (method == "compressed-tensors")
    return readCompressedTensors(q);
  int64_t bits, groupSize;
  LLMSERVE_TRY_ASSIGN(bits, q.integer("bits"));
  LLMSERVE_TRY_ASSIGN(groupSize, q.integer("group_size"));
  if (bits != 4)
    return q.error("bits " + llvm::Twine(bits) + " is not read: llmserve reads 4-bit " +
                   method + " checkpoints");
  if (groupSize != kInt4GroupColumns)
    return q.error("group_size " + llvm::Twine(groupSize) +
                   " is not read: llmserve reads groups of 128");
  if (method == "awq") {
    std::string version = llvm::StringRef(q.string("version", "gemm")).lower();
    if (version != "gemm")
      return q.error("version '" + version + "' is not read: llmserve reads AWQ's gemm layout");
    if (!q.boolean("zero_point", true))
      return q.error("zero_point false is not read: llmserve reads AWQ with zero points");
    return StoredQuantization{QuantizedCheckpoint::awq};
  }
  std::string format = q.string("checkpoint_format", "gptq");
  if (format != "gptq" && format != "gptq_v2")
    return q.error("checkpoint_format '" + format +
                   "' is not read (supported: gptq, gptq_v2)");
  return StoredQuantization{format == "gptq" ? QuantizedCheckpoint::gptq
                                             : QuantizedCheckpoint::gptq_v2,
                            q.boolean("desc_act", false)};
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::llmserve::importHuggingFace(MLIRContext *context, llvm::StringRef dir,
                                  const ImportOptions &options) {
  context->loadDialect<LlmserveDialect, func::FuncDialect>();
  llvm::SmallString<256> configPath(dir);
  llvm::sys::path::append(configPath, "config.json");
  auto configJson = readJson(configPath);
  if (!configJson)
    return configJson.takeError();
  const json::Object *object = configJson->getAsObject();
  if (!object)
    return makeError(configPath + ": not a JSON object");
  Config config(*object, configPath.str().str());
  auto quantized = readQuantizedCheckpoint(config);
  if (!quantized)
    return quantized.takeError();

  std::string modelType = config.string("model_type", "");
  auto read = familyOf(config, modelType);
  if (!read)
    return read.takeError();
  auto model = (*read)(config, modelType);
  if (!model)
    return model.takeError();

  auto names = readTensorNames(dir);
  if (!names)
    return names.takeError();
  (*model)->useTensorNames(*names);
  if (*quantized && names->empty() && (*quantized)->packedInt4 && (*quantized)->eightBit)
    return config.error("quantization_config mixes pack-quantized groups with 8-bit ones; "
                        "which linears each holds is read from the checkpoint's tensors, "
                        "and the directory has none");
  if (*quantized && (*quantized)->kvCacheScheme) {
    const ModelShape &shape = (*model)->shape();
    auto scales = readKvCacheScales(dir, *names, shape.layers,
                                    (*quantized)->kvCachePerHead ? shape.kvHeads : 1);
    if (!scales)
      return scales.takeError();
    (*quantized)->kvCacheScales = std::move(*scales);
  }

  const ModelShape &shape = (*model)->shape();
  auto module =
      GraphBuilder(context, shape, options, *names, *quantized).build(**model);
  if (!module)
    return module.takeError();
  Builder b(context);
  llvm::SmallString<256> absolute(dir);
  llvm::sys::fs::make_absolute(absolute);
  (**module)->setAttr(LlmserveDialect::kModelAttrName, modelAttr(b, shape, config));
  (**module)->setAttr(LlmserveDialect::kCheckpointAttrName, b.getStringAttr(absolute));
  return module;
}
