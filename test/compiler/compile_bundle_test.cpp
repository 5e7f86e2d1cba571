//===- compile_bundle_test.cpp - The compile pipelines as a library -------===//
//
// compileBundle without llmc: a small module compiled for the CPU and for
// sm_90 (PTX needs no GPU) into a temporary directory, and the errors it
// reports as diagnostics.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipeline/CompileBundle.h"
#include "llmserve/abi.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace mlir;
using mlir::llmserve::compileBundle;
using mlir::llmserve::CompileOptions;
using mlir::llmserve::verifyCompileOptions;
namespace abi = ::llmserve::abi;
namespace json = llvm::json;

// One entry point of three dispatches: a gather, an elementwise op and a
// linear whose f32 result may stay f32 on sm_90 (logits).
constexpr const char *kModel = R"mlir(
func.func @logits(%ids: tensor<?xi32> {llmserve.contract = "token_ids"})
    -> tensor<?x32xf32> {
  %table = llmserve.weight "embed" : tensor<32x16xf32>
  %w = llmserve.weight "up" : tensor<32x16xf32>
  %x = llmserve.embedding %table, %ids
      : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %h = llmserve.gelu %x : tensor<?x16xf32>
  %y = llmserve.linear %h, %w
      : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}
)mlir";

DialectRegistry compilerRegistry() {
  DialectRegistry registry;
  mlir::llmserve::registerCompilerDialects(registry);
  return registry;
}

struct Reported {
  std::string message;
  Location loc;
};

class CompileBundle : public ::testing::Test {
protected:
  CompileBundle()
      : context(compilerRegistry()),
        handler(&context, [this](Diagnostic &diag) {
          if (diag.getSeverity() == DiagnosticSeverity::Error)
            errors.push_back({diag.str(), diag.getLocation()});
        }) {
    EXPECT_FALSE(
        llvm::sys::fs::createUniqueDirectory("llmserve-bundle-test", tempDir));
    bundleDir = path(tempDir, "out/model.llmb");
  }
  ~CompileBundle() override { llvm::sys::fs::remove_directories(tempDir); }

  static std::string path(StringRef dir, StringRef name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return p.str().str();
  }
  std::string inBundle(StringRef name) const { return path(bundleDir, name); }

  OwningOpRef<ModuleOp> parse(StringRef text) {
    return parseSourceString<ModuleOp>(text, &context);
  }

  json::Object manifest() const {
    auto buffer = llvm::MemoryBuffer::getFile(inBundle(abi::kManifestFile));
    if (!buffer)
      return {};
    llvm::Expected<json::Value> value = json::parse((*buffer)->getBuffer());
    if (!value) {
      llvm::consumeError(value.takeError());
      return {};
    }
    json::Object *object = value->getAsObject();
    return object ? std::move(*object) : json::Object();
  }

  /// The names of the manifest's entry points.
  static std::vector<std::string> entryPoints(const json::Object &manifest) {
    std::vector<std::string> names;
    if (const json::Array *entries = manifest.getArray("entry_points"))
      for (const json::Value &entry : *entries)
        if (const json::Object *object = entry.getAsObject())
          if (std::optional<StringRef> name = object->getString("name"))
            names.push_back(name->str());
    return names;
  }

  MLIRContext context;
  ScopedDiagnosticHandler handler;
  std::vector<Reported> errors;
  llvm::SmallString<128> tempDir;
  std::string bundleDir;
};

TEST_F(CompileBundle, WritesACpuBundle) {
  OwningOpRef<ModuleOp> module = parse(kModel);
  ASSERT_TRUE(module);
  EXPECT_TRUE(succeeded(compileBundle(*module, bundleDir, CompileOptions())));
  EXPECT_TRUE(errors.empty());

  json::Object m = manifest();
  EXPECT_EQ(m.getString("target"), std::optional<StringRef>("cpu"));
  EXPECT_EQ(entryPoints(m), std::vector<std::string>{"logits"});
  const json::Array *kernels = m.getArray("kernels");
  ASSERT_TRUE(kernels);
  EXPECT_EQ(kernels->size(), 3u);
  uint64_t size = 0;
  EXPECT_FALSE(llvm::sys::fs::file_size(inBundle(abi::kCpuKernelsFile), size));
  EXPECT_GT(size, 0u);
}

TEST_F(CompileBundle, WritesAnSm90BundleOfPtx) {
  OwningOpRef<ModuleOp> module = parse(kModel);
  ASSERT_TRUE(module);
  CompileOptions options;
  options.target = abi::kCudaTarget;
  EXPECT_TRUE(succeeded(compileBundle(*module, bundleDir, options)));
  EXPECT_TRUE(errors.empty());

  json::Object m = manifest();
  EXPECT_EQ(m.getString("target"), std::optional<StringRef>("sm_90"));
  EXPECT_EQ(entryPoints(m), std::vector<std::string>{"logits"});
  auto ptx = llvm::MemoryBuffer::getFile(inBundle(abi::kCudaPtxFile));
  ASSERT_TRUE(ptx);
  EXPECT_TRUE((*ptx)->getBuffer().contains(".target sm_90"));
  EXPECT_FALSE(llvm::sys::fs::exists(inBundle(abi::kCpuKernelsFile)));
}

TEST_F(CompileBundle, RefusesAnUnknownTarget) {
  OwningOpRef<ModuleOp> module = parse(kModel);
  ASSERT_TRUE(module);
  CompileOptions options;
  options.target = "sm_80";
  EXPECT_TRUE(failed(compileBundle(*module, bundleDir, options)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "unknown target 'sm_80' (supported: cpu, sm_90)");
  EXPECT_TRUE(isa<UnknownLoc>(errors[0].loc));
  EXPECT_FALSE(llvm::sys::fs::exists(bundleDir));
}

TEST_F(CompileBundle, RefusesAnUnknownDtype) {
  CompileOptions options;
  options.target = abi::kCudaTarget;
  options.dtype = "fp8";
  EXPECT_TRUE(failed(verifyCompileOptions(&context, options)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message,
            "unknown --dtype 'fp8' (supported: bf16, f16, f32)");
}

TEST_F(CompileBundle, RefusesAnUnknownDtypeForTheCpu) {
  CompileOptions options;
  options.dtype = "fp8";
  EXPECT_TRUE(failed(verifyCompileOptions(&context, options)));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "unknown --dtype 'fp8' (supported: bf16, f16, f32)");
}

TEST_F(CompileBundle, LocatesAnErrorInTheIr) {
  OwningOpRef<ModuleOp> module = parse(R"mlir(
func.func @f(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %y = llmserve.silu_mul %x, %x : tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}
)mlir");
  ASSERT_TRUE(module);
  EXPECT_TRUE(failed(compileBundle(*module, bundleDir, CompileOptions())));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "'llmserve.silu_mul' op CPU kernels compute in "
                               "f32; got 'tensor<4x8xf16>'");
  auto loc = dyn_cast<FileLineColLoc>(errors[0].loc);
  ASSERT_TRUE(loc);
  EXPECT_EQ(loc.getLine(), 3u);
  EXPECT_FALSE(llvm::sys::fs::exists(inBundle(abi::kManifestFile)));
}

} // namespace
