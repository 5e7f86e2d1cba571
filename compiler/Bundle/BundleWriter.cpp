//===- BundleWriter.cpp - The host program as manifest.json ---------------===//
//
// Serialises the entry functions left by llmserve-to-cpu-kernels (tensor ops
// annotated with `llmserve.dispatch`) into the bundle's dispatch program. Each
// SSA tensor is a buffer; shapes are expressions over the step symbols,
// derived from the step contract and propagated through the ops.
//
//===----------------------------------------------------------------------===//

#include "compiler/Bundle/BundleWriter.h"

#include "compiler/Conversion/Common/Dispatch.h"
#include "llmserve/IR/LlmserveOps.h"
#include "llmserve/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::llmserve;
namespace json = llvm::json;
namespace abi = ::llmserve::abi;

namespace {

/// A buffer's shape: each dimension an expression ("T", "S+1", "64").
using Shape = SmallVector<std::string>;

std::optional<std::string> dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  if (type.isInteger(8))
    return "i8";
  if (isa<Float8E4M3FNType>(type))
    return "f8_e4m3";
  return std::nullopt;
}

json::Value dimValue(const std::string &dim) {
  int64_t v;
  if (llvm::to_integer(dim, v, 10))
    return v;
  return dim;
}

json::Value attrToJson(Attribute attr) {
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getInt();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto s = dyn_cast<StringAttr>(attr))
    return s.str();
  if (auto b = dyn_cast<BoolAttr>(attr))
    return b.getValue();
  if (auto a = dyn_cast<ArrayAttr>(attr)) {
    json::Array values;
    for (Attribute e : a)
      values.push_back(attrToJson(e));
    return values;
  }
  if (auto d = dyn_cast<DictionaryAttr>(attr)) {
    json::Object object;
    for (NamedAttribute e : d)
      object[e.getName().str()] = attrToJson(e.getValue());
    return object;
  }
  return nullptr;
}

class ProgramWriter {
public:
  explicit ProgramWriter(ModuleOp module) : module(module) {}

  FailureOr<json::Object> write() {
    json::Array entries;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isPrivate() || func.isDeclaration())
        continue;
      FailureOr<json::Object> entry = writeEntry(func);
      if (failed(entry))
        return failure();
      entries.push_back(std::move(*entry));
    }
    if (entries.empty())
      return emitError(module.getLoc(), "the module has no entry function"),
             failure();
    json::Object manifest;
    manifest["buffers"] = std::move(buffers);
    manifest["kernels"] = std::move(kernels);
    manifest["entry_points"] = std::move(entries);
    if (kvCache)
      manifest["kv_cache"] = std::move(*kvCache);
    return manifest;
  }

private:
  int64_t addBuffer(json::Object buffer) {
    buffers.push_back(std::move(buffer));
    return buffers.size() - 1;
  }

  LogicalResult bindValue(Value value, Shape shape, json::Object buffer) {
    auto type = cast<RankedTensorType>(value.getType());
    std::optional<std::string> dtype = dtypeName(type.getElementType());
    // int4 values are stored two a byte: an i8 buffer of half the columns.
    if (type.getElementType().isInteger(4) && type.hasStaticShape() &&
        type.getShape().back() % 2 == 0) {
      dtype = "i8";
      shape.back() = std::to_string(type.getShape().back() / 2);
    }
    if (!dtype)
      return emitError(value.getLoc(), "unsupported element type ")
             << type.getElementType();
    json::Array dims;
    for (const std::string &d : shape)
      dims.push_back(dimValue(d));
    buffer["dtype"] = *dtype;
    buffer["shape"] = std::move(dims);
    bufferOf[value] = addBuffer(std::move(buffer));
    shapeOf[value] = std::move(shape);
    return success();
  }

  /// The shape of a value from its type, taking dynamic dims from `dynamic`.
  static FailureOr<Shape> shapeFrom(Value value, ArrayRef<std::string> dynamic) {
    auto type = cast<RankedTensorType>(value.getType());
    Shape shape;
    size_t next = 0;
    for (int64_t d : type.getShape()) {
      if (!ShapedType::isDynamic(d)) {
        shape.push_back(std::to_string(d));
        continue;
      }
      if (next == dynamic.size())
        return emitError(value.getLoc(),
                         "cannot tell the size of a dynamic dimension of ")
                   << type,
               failure();
      shape.push_back(dynamic[next++]);
    }
    return shape;
  }

  /// Binds the function's arguments: step-contract arrays (named by a
  /// `llmserve.contract` attribute), KV caches (`llmserve.kv_cache`, shared by
  /// all entry points) and, otherwise, statically shaped inputs.
  LogicalResult bindArguments(func::FuncOp func, json::Array &arguments) {
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto type = cast<RankedTensorType>(arg.getType());
      if (auto name = func.getArgAttrOfType<StringAttr>(
              i, LlmserveDialect::kContractAttrName)) {
        const abi::ContractArray *contract = findContractArray(name);
        SmallVector<std::string> dims;
        if (contract)
          for (StringRef d : llvm::split(contract->shape, ','))
            dims.push_back(d.str());
        if (!contract || type.getRank() != static_cast<int64_t>(dims.size()) ||
            dtypeName(type.getElementType()) != contract->dtype)
          return func.emitOpError("argument #")
                 << i << " is not the step-contract array " << name;
        json::Object buffer;
        buffer["kind"] = "argument";
        buffer["name"] = name.str();
        if (failed(bindValue(arg, Shape(dims), std::move(buffer))))
          return failure();
        arguments.push_back(bufferOf[arg]);
        continue;
      }
      if (auto kv = func.getArgAttrOfType<DictionaryAttr>(
              i, LlmserveDialect::kKvCacheAttrName)) {
        if (failed(bindKvCache(func, arg, kv)))
          return failure();
        continue;
      }
      json::Object buffer;
      buffer["kind"] = "argument";
      buffer["name"] = ("arg" + Twine(i)).str();
      FailureOr<Shape> shape = shapeFrom(arg, {});
      if (failed(shape) || failed(bindValue(arg, *shape, std::move(buffer))))
        return failure();
      arguments.push_back(bufferOf[arg]);
    }
    return success();
  }

  static const abi::ContractArray *findContractArray(StringAttr name) {
    for (const abi::ContractArray &c : abi::kStepArguments)
      if (name.getValue() == c.name)
        return &c;
    return nullptr;
  }

  LogicalResult bindKvCache(func::FuncOp func, BlockArgument arg,
                            DictionaryAttr kv) {
    auto layer = kv.getAs<IntegerAttr>("layer");
    auto role = kv.getAs<StringAttr>("role");
    auto type = cast<RankedTensorType>(arg.getType());
    bool cacheShape = type.getRank() == 4 && type.isDynamicDim(0) &&
                      type.getNumDynamicDims() == 1;
    if (!layer || !role || (role.getValue() != "k" && role.getValue() != "v") ||
        !cacheShape)
      return func.emitOpError("argument #")
             << arg.getArgNumber() << ": " << LlmserveDialect::kKvCacheAttrName
             << " needs {layer, role = \"k\" | \"v\"} on a [?, block_size, "
                "kv_heads, head_dim] tensor";
    std::string name =
        ("layers." + Twine(layer.getInt()) + "." + role.getValue()).str();
    auto it = kvCacheBuffers.find(name);
    if (it != kvCacheBuffers.end()) {
      bufferOf[arg] = it->second;
      shapeOf[arg] = *shapeFrom(arg, {abi::kSymNumKvBlocks});
      return success();
    }
    json::Object buffer;
    buffer["kind"] = "kv_cache";
    buffer["name"] = name;
    buffer["layer"] = layer.getInt();
    buffer["role"] = role.str();
    noteKvCache(type, role.getValue());
    FailureOr<Shape> shape = shapeFrom(arg, {abi::kSymNumKvBlocks});
    if (failed(shape) || failed(bindValue(arg, *shape, std::move(buffer))))
      return failure();
    kvCacheBuffers[name] = bufferOf[arg];
    return success();
  }

  void noteKvCache(RankedTensorType type, StringRef role) {
    if (role == "k")
      ++numKvLayers;
    int64_t heads = type.getDimSize(2), dim = type.getDimSize(3);
    json::Object cache;
    cache["block_size"] = type.getDimSize(1);
    cache["dtype"] = *dtypeName(type.getElementType());
    cache["layout"] = "block,slot,head,dim";
    cache["num_layers"] = numKvLayers;
    cache["num_kv_heads"] = heads;
    cache["head_dim"] = dim;
    cache["bytes_per_token"] =
        2 * numKvLayers * heads * dim *
        static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
    kvCache = std::move(cache);
  }

  LogicalResult bindWeight(WeightOp op) {
    // One buffer per distinct (tensor, transform, rows).
    std::string key =
        op.getTensorName().str() + (op.getTransposed() ? "^T" : "");
    std::optional<ArrayRef<int64_t>> rows = op.getRows();
    if (rows)
      key += llvm::formatv("[{0}:{1}]", (*rows)[0], (*rows)[1]).str();
    auto layout =
        op->getAttrOfType<StringAttr>(LlmserveDialect::kLayoutAttrName);
    if (layout)
      key += "#" + layout.str();
    std::optional<WeightQuantization> quantization = op.getQuantization();
    if (quantization)
      key += llvm::formatv("#{0}.{1}",
                           stringifyWeightQuantization(*quantization),
                           stringifyQuantizedPart(*op.getPart()))
                 .str();
    std::optional<QuantizedCheckpoint> from = op.getCheckpoint();
    if (from)
      key += "#" + stringifyQuantizedCheckpoint(*from).str();
    auto it = weightBuffers.find(key);
    if (it != weightBuffers.end()) {
      // One buffer serves every read of the tensor, so all read one type.
      Type element = cast<RankedTensorType>(op.getType()).getElementType();
      if (Type first = weightElements.lookup(key); first != element)
        return op.emitOpError() << "reads '" << key << "' as " << element
                                << ", which another weight op reads as " << first;
      bufferOf[op.getResult()] = it->second;
      shapeOf[op.getResult()] = *shapeFrom(op.getResult(), {});
      return success();
    }
    json::Object buffer;
    buffer["kind"] = "weight";
    buffer["name"] = key;
    buffer["tensor"] = op.getTensorName().str();
    if (std::optional<int64_t> stacked = op.getStacked())
      buffer["stacked"] = *stacked;
    buffer["transform"] = op.getTransposed() ? "transpose" : "none";
    if (rows)
      buffer["rows"] = json::Array{(*rows)[0], (*rows)[1]};
    if (layout)
      buffer["layout"] = layout.str();
    if (quantization) {
      buffer["quantization"] = stringifyWeightQuantization(*quantization);
      buffer["part"] = stringifyQuantizedPart(*op.getPart());
    }
    if (from)
      buffer["from"] = stringifyQuantizedCheckpoint(*from);
    FailureOr<Shape> shape = shapeFrom(op.getResult(), {});
    if (failed(shape) ||
        failed(bindValue(op.getResult(), *shape, std::move(buffer))))
      return failure();
    weightBuffers[key] = bufferOf[op.getResult()];
    weightElements[key] = cast<RankedTensorType>(op.getType()).getElementType();
    return success();
  }

  /// The operand whose leading dimension a result's leading dimension is.
  static Value rowSource(Operation *op) {
    if (auto o = dyn_cast<EmbeddingOp>(op))
      return o.getIds();
    if (auto o = dyn_cast<GatherRowsOp>(op))
      return o.getRows();
    if (auto o = dyn_cast<ExpertLinearOp>(op))
      return o.getExperts();
    if (auto o = dyn_cast<MoeCombineOp>(op))
      return o.getWeights();
    return op->getOperand(0);
  }

  /// The size expression of the leading dimension of `op`'s results: its
  /// row source's, or for expert_linear one row per (token, slot) pair.
  std::string resultRows(Operation *op) const {
    std::string rows = shapeOf.at(rowSource(op)).front();
    if (auto o = dyn_cast<ExpertLinearOp>(op))
      return "(" + rows + ")*" + shapeOf.at(o.getExperts())[1];
    return rows;
  }

  /// Whether `a` is one kernel's dispatch: {kernel, symbol, grid of 3}.
  static bool isKernelDispatch(Attribute a) {
    auto d = dyn_cast<DictionaryAttr>(a);
    if (!d || !d.getAs<StringAttr>("kernel") || !d.getAs<StringAttr>("symbol"))
      return false;
    auto grid = d.getAs<ArrayAttr>("grid");
    return grid && grid.size() == 3 &&
           llvm::all_of(grid, [](Attribute g) { return isa<StringAttr>(g); });
  }

  /// The kernels of `op`'s `llmserve.dispatch`: one dictionary or an array.
  static FailureOr<SmallVector<DictionaryAttr>> dispatchKernels(Operation *op) {
    Attribute attr = op->getAttr(LlmserveDialect::kDispatchAttrName);
    SmallVector<Attribute> kernels = {attr};
    if (auto array = dyn_cast<ArrayAttr>(attr))
      kernels.assign(array.begin(), array.end());
    if (kernels.empty() || !llvm::all_of(kernels, isKernelDispatch))
      return op->emitOpError("has a malformed ")
                 << LlmserveDialect::kDispatchAttrName
                 << " (expected a {kernel, symbol, grid} dictionary or a "
                    "non-empty array of them)",
             failure();
    return llvm::map_to_vector(
        kernels, [](Attribute a) { return cast<DictionaryAttr>(a); });
  }

  LogicalResult bindDispatch(Operation *op, ArrayRef<DictionaryAttr> kernelAttrs,
                             json::Array &dispatches) {
    DictionaryAttr first = kernelAttrs.front();
    // Results: fresh activations, except caches updated in place.
    for (OpResult result : op->getResults()) {
      if (Value updated = inPlaceOperand(result)) {
        // Copies first: inserting may rehash the maps under a reference.
        int64_t cache = bufferOf.at(updated);
        Shape shape = shapeOf.at(updated);
        bufferOf[result] = cache;
        shapeOf[result] = std::move(shape);
        continue;
      }
      json::Object buffer;
      buffer["kind"] = "activation";
      buffer["name"] = (first.getAs<StringAttr>("kernel").getValue() + "." +
                        Twine(result.getResultNumber()))
                           .str();
      FailureOr<Shape> shape = shapeFrom(result, {resultRows(op)});
      if (failed(shape) || failed(bindValue(result, *shape, std::move(buffer))))
        return failure();
    }

    SmallVector<Value> bound = dispatchOperands(op);
    llvm::append_range(bound, freshResults(op));
    json::Array bindings, constants;
    SmallVector<std::string> constantExprs;
    for (Value v : bound) {
      auto it = bufferOf.find(v);
      if (it == bufferOf.end())
        return op->emitOpError("reads a value that is not a buffer");
      bindings.push_back(it->second);
      auto type = cast<RankedTensorType>(v.getType());
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.isDynamicDim(d))
          constantExprs.push_back(shapeOf.at(v)[d]);
    }
    for (const std::string &c : constantExprs)
      constants.push_back(dimValue(c));
    if (failed(bindScratch(op, first.getAs<StringAttr>("kernel").getValue(),
                           constantExprs, bindings)))
      return failure();

    for (DictionaryAttr dispatch : kernelAttrs)
      if (failed(writeKernel(op, dispatch, bindings, constants, constantExprs,
                             dispatches)))
        return failure();
    return success();
  }

  /// `text` (a grid or scratch size) with `$k` replaced by push constant k's
  /// expression.
  static FailureOr<std::string>
  substituteConstants(Operation *op, StringRef text,
                      ArrayRef<std::string> constantExprs) {
    std::string expr;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '$') {
        expr += text[i];
        continue;
      }
      size_t j = i + 1;
      while (j < text.size() && llvm::isDigit(text[j]))
        ++j;
      unsigned k;
      if (text.substr(i + 1, j - i - 1).getAsInteger(10, k) ||
          k >= constantExprs.size())
        return op->emitOpError("malformed size expression ") << text, failure();
      expr += "(" + constantExprs[k] + ")";
      i = j - 1;
    }
    return expr;
  }

  /// The scratch buffers of `op`'s kernels (`llmserve.scratch`): fresh f32
  /// activations that no SSA value names, bound after the op's values.
  LogicalResult bindScratch(Operation *op, StringRef kernelName,
                            ArrayRef<std::string> constantExprs,
                            json::Array &bindings) {
    auto scratch =
        op->getAttrOfType<ArrayAttr>(LlmserveDialect::kScratchAttrName);
    if (!scratch)
      return success();
    for (auto [i, entry] : llvm::enumerate(scratch)) {
      auto sizes = dyn_cast<ArrayAttr>(entry);
      if (!sizes || sizes.empty() ||
          !llvm::all_of(sizes, [](Attribute a) { return isa<StringAttr>(a); }))
        return op->emitOpError("has a malformed ")
                   << LlmserveDialect::kScratchAttrName
                   << " (expected arrays of size strings)",
               failure();
      json::Array shape;
      for (Attribute size : sizes) {
        FailureOr<std::string> expr = substituteConstants(
            op, cast<StringAttr>(size).getValue(), constantExprs);
        if (failed(expr))
          return failure();
        shape.push_back(dimValue(*expr));
      }
      json::Object buffer;
      buffer["kind"] = "activation";
      buffer["name"] = (kernelName + ".scratch" + Twine(i)).str();
      buffer["dtype"] = "f32";
      buffer["shape"] = std::move(shape);
      bindings.push_back(addBuffer(std::move(buffer)));
    }
    return success();
  }

  /// The kernel and dispatch entries of one kernel of `op`'s dispatch.
  LogicalResult writeKernel(Operation *op, DictionaryAttr dispatch,
                            const json::Array &bindings,
                            const json::Array &constants,
                            ArrayRef<std::string> constantExprs,
                            json::Array &dispatches) {
    json::Array grid;
    for (Attribute g : dispatch.getAs<ArrayAttr>("grid")) {
      FailureOr<std::string> expr = substituteConstants(
          op, cast<StringAttr>(g).getValue(), constantExprs);
      if (failed(expr))
        return failure();
      grid.push_back(dimValue(*expr));
    }

    std::string name = dispatch.getAs<StringAttr>("kernel").str();
    json::Object kernel;
    kernel["name"] = name;
    kernel["symbol"] = dispatch.getAs<StringAttr>("symbol").str();
    // GPU kernels carry their launch shape (docs/bundle.md).
    if (auto block = dispatch.getAs<DenseI64ArrayAttr>("block")) {
      json::Array dims;
      for (int64_t d : block.asArrayRef())
        dims.push_back(d);
      kernel["block"] = std::move(dims);
      auto shared = dispatch.getAs<IntegerAttr>("shared_bytes");
      kernel["shared_bytes"] = shared ? shared.getInt() : 0;
      if (auto programmatic = dispatch.getAs<BoolAttr>("programmatic_launch"))
        kernel["programmatic_launch"] = programmatic.getValue();
    }
    kernels.push_back(std::move(kernel));

    json::Object d;
    d["kernel"] = name;
    d["bindings"] = json::Array(bindings);
    d["push_constants"] = json::Array(constants);
    d["grid"] = std::move(grid);
    dispatches.push_back(std::move(d));
    return success();
  }

  FailureOr<json::Object> writeEntry(func::FuncOp func) {
    json::Array arguments, results, dispatches;
    if (failed(bindArguments(func, arguments)))
      return failure();
    for (Operation &op : func.getBody().front()) {
      if (auto weight = dyn_cast<WeightOp>(op)) {
        if (failed(bindWeight(weight)))
          return failure();
        continue;
      }
      if (op.hasAttr(LlmserveDialect::kDispatchAttrName)) {
        FailureOr<SmallVector<DictionaryAttr>> kernelAttrs = dispatchKernels(&op);
        if (failed(kernelAttrs) || failed(bindDispatch(&op, *kernelAttrs, dispatches)))
          return failure();
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
          // A returned value is a result buffer of the entry point, named by
          // its step-contract attribute if it has one.
          int64_t id = bufferOf.at(v);
          json::Object *object = buffers[id].getAsObject();
          if (object->getString("kind") != "activation" ||
              llvm::is_contained(results, json::Value(id)))
            return ret.emitOpError("result #")
                   << i << " must be computed by the function, once",
                   failure();
          (*object)["kind"] = "result";
          auto name = func.getResultAttrOfType<StringAttr>(
              i, LlmserveDialect::kContractAttrName);
          (*object)["name"] = name ? name.str() : ("result" + Twine(i)).str();
          results.push_back(id);
        }
        continue;
      }
      return op.emitOpError("cannot run in the host program (not outlined "
                            "into a kernel)"),
             failure();
    }
    json::Object entry;
    entry["name"] = func.getSymName().str();
    entry["arguments"] = std::move(arguments);
    entry["results"] = std::move(results);
    entry["dispatches"] = std::move(dispatches);
    return entry;
  }

  ModuleOp module;
  json::Array buffers, kernels;
  std::optional<json::Object> kvCache;
  int64_t numKvLayers = 0;
  DenseMap<Value, int64_t> bufferOf;
  DenseMap<Value, Shape> shapeOf;
  llvm::StringMap<int64_t> weightBuffers, kvCacheBuffers;
  llvm::StringMap<Type> weightElements; // by weightBuffers' key
};

} // namespace

FailureOr<std::string>
mlir::llmserve::writeManifest(ModuleOp module, StringRef target,
                              ArrayRef<CpuKernelSet> cpuKernels) {
  FailureOr<json::Object> program = ProgramWriter(module).write();
  if (failed(program))
    return failure();
  json::Object manifest = std::move(*program);
  manifest["format"] = abi::kFormatName;
  manifest["format_version"] = abi::kBundleFormatVersion;
  manifest["kernel_abi_version"] = abi::kKernelAbiVersion;
  manifest["target"] = target.str();
  if (!cpuKernels.empty()) {
    assert(cpuKernels.front().file == abi::kCpuKernelsFile &&
           "the preferred kernels are kernels.cpu.so");
    manifest["cpu"] = cpuKernels.front().cpu;
    manifest["cpu_features"] = json::Array(cpuKernels.front().features);
  }
  if (cpuKernels.size() > 1) {
    json::Array fallbacks;
    for (const CpuKernelSet &set : cpuKernels.drop_front())
      fallbacks.push_back(json::Object{{"cpu", set.cpu},
                                       {"kernels", set.file},
                                       {"cpu_features", json::Array(set.features)}});
    manifest["cpu_fallbacks"] = std::move(fallbacks);
  }
  if (auto model = module->getAttrOfType<DictionaryAttr>(
          LlmserveDialect::kModelAttrName))
    manifest["model"] = attrToJson(model);
  json::Object weights;
  if (auto checkpoint = module->getAttrOfType<StringAttr>(
          LlmserveDialect::kCheckpointAttrName))
    weights["checkpoint"] = checkpoint.str();
  manifest["weights"] = std::move(weights);

  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  return text;
}
