// llmrun choosing the executor from the bundle's target and --device, and
// failing cleanly where there is no NVIDIA driver. Runs llmrun as a child
// process; needs no GPU (the driver is pointed at a file that is not there).
#include "cuda/cuda_executor.h"

#include "support/test_bundle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace llmserve {
namespace {

using ::testing::HasSubstr;
using test::fs::path;

struct Outcome {
  int exit_code;
  std::string output; // stdout and stderr
};

Outcome run_llmrun(const std::string &command) {
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return {-1, "popen failed"};
  std::string output;
  char chunk[4096];
  for (size_t n; (n = fread(chunk, 1, sizeof chunk, pipe)) > 0;)
    output.append(chunk, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// The toy step model (test_bundle.h) for the CPU, and the same for sm_90.
path cpu_bundle() {
  const path dir = test::fresh_dir();
  return test::step_bundle(dir / "cpu.llmb", test::step_checkpoint(dir / "ckpt"));
}

path sm90_bundle() {
  const path dir = test::fresh_dir("_sm90");
  test::json m = test::for_sm90(test::step_manifest());
  m["weights"]["checkpoint"] = test::step_checkpoint(dir / "ckpt").string();
  test::write_bundle(dir / "gpu.llmb", m, /*with_kernels=*/false);
  test::fs::copy_file(LLMSERVE_TEST_KERNELS_PTX, dir / "gpu.llmb" / abi::kCudaPtxFile);
  return dir / "gpu.llmb";
}

const std::string kLlmrun = LLMSERVE_LLMRUN;
const std::string kNoDriver = "LLMSERVE_CUDA_DRIVER=/nonexistent/libcuda.so.1 ";

TEST(LlmrunDevice, Sm90BundleWithoutADriverIsAClearError) {
  const std::string bundle = sm90_bundle().string();
  const std::string want =
      "cannot load /nonexistent/libcuda.so.1 (/nonexistent/libcuda.so.1: cannot open shared "
      "object file: No such file or directory): the bundle targets sm_90 and needs an NVIDIA "
      "driver";
  for (const std::string &command :
       {"generate " + bundle + " --prompt hi", "serve " + bundle + " --port 0",
        "bench offline " + bundle + " --num-prompts 1",
        "bench ppl " + bundle + " --text " + bundle + "/manifest.json",
        "call " + bundle + " --entry step --output-dir /tmp"}) {
    SCOPED_TRACE(command);
    const Outcome r = run_llmrun(kNoDriver + kLlmrun + " " + command);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output, HasSubstr(want));
  }
}

TEST(LlmrunDevice, ALibraryThatIsNotTheDriverIsAClearError) {
  const Outcome r = run_llmrun("LLMSERVE_CUDA_DRIVER=libm.so.6 " + kLlmrun + " generate " +
                    sm90_bundle().string() + " --prompt hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("libm.so.6 has no entry point cuInit"));
}

TEST(LlmrunDevice, RefusesADeviceTheBundleWasNotCompiledFor) {
  Outcome r = run_llmrun(kLlmrun + " generate " + sm90_bundle().string() + " --prompt hi --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("gpu.llmb targets sm_90 (NVIDIA GPUs): it cannot run on "
                                  "--device cpu; compile the model without --target"));

  const std::string cpu = cpu_bundle().string();
  for (const std::string &command :
       {"generate " + cpu + " --prompt hi --device cuda", "serve " + cpu + " --device cuda",
        "bench offline " + cpu + " --device cuda",
        "call " + cpu + " --entry step --output-dir /tmp --device cuda"}) {
    SCOPED_TRACE(command);
    r = run_llmrun(kNoDriver + kLlmrun + " " + command);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.output, HasSubstr("cpu.llmb targets cpu: it cannot run on --device cuda; "
                                    "compile the model with llmc compile --target sm_90"));
  }

  r = run_llmrun(kLlmrun + " serve " + cpu + " --device tpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--device 'tpu': expected cpu or cuda"));
}

// In this process the driver is never found either: the executor throws the
// same error, and again on a second try.
TEST(CudaExecutor, ThrowsTheDriverErrorWithoutADriver) {
  setenv("LLMSERVE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      cuda::CudaExecutor executor(Bundle(sm90_bundle().string()), {});
      ADD_FAILURE() << "loaded without a driver";
    } catch (const cuda::CudaError &e) {
      EXPECT_THAT(e.what(), HasSubstr("the bundle targets sm_90 and needs an NVIDIA driver"));
    }
  }
}

} // namespace
} // namespace llmserve
