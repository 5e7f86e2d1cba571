#include "cpu/kernel_library.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fs::path;
using test::json;

std::string load_error(const path &dir) {
  try {
    KernelLibrary kernels{Bundle(dir.string())};
  } catch (const std::runtime_error &e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(KernelLibrary, ResolvesEveryKernelOfTheManifest) {
  const Bundle bundle(test::ops_bundle(test::fresh_dir()).string());
  const KernelLibrary kernels(bundle);
  // The kernels are the functions of the shared object: run one.
  const float a[] = {1, 2, 3, 4, 5}, b[] = {10, 20, 30, 40, 50};
  float out[5] = {};
  void *bindings[] = {const_cast<float *>(a), const_cast<float *>(b), out};
  const int64_t n = 5;
  kernels.kernel(0)(bindings, &n, 1, 0, 0); // the second tile: element 4
  EXPECT_THAT(out, ::testing::ElementsAre(0, 0, 0, 0, 55));
}

TEST(KernelLibrary, RefusesAMissingOrBrokenSharedObject) {
  const path dir = test::fresh_dir();
  test::write_bundle(dir, test::ops_manifest(), /*with_kernels=*/false);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  EXPECT_THAT(load_error(dir), HasSubstr("the bundle has no CPU kernels (no kernels.cpu.so)"));

  test::write_file(dir / "kernels.cpu.so", "not an ELF file");
  EXPECT_THAT(load_error(dir), HasSubstr("kernels.cpu.so: cannot load: "));
}

TEST(KernelLibrary, RefusesAMissingKernelSymbol) {
  const path dir = test::fresh_dir();
  json m = test::ops_manifest();
  m["kernels"][2]["symbol"] = "llmserve_not_there";
  test::write_bundle(dir, m);
  test::write_weights(dir / "weights.safetensors", test::ops_weights());
  EXPECT_THAT(load_error(dir),
              HasSubstr("kernels.cpu.so: no symbol 'llmserve_not_there' for kernel 'matmul'"));
}

} // namespace
} // namespace llmserve
