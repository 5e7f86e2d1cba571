#include "cuda/cuda_driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace llmserve::cuda {

namespace {

// Sets `fn` to the library's `name`; throws naming it if it is missing.
template <typename Fn>
void resolve(void *library, const std::string &path, const char *name, Fn &fn) {
  void *symbol = dlsym(library, name);
  if (!symbol)
    throw CudaError(path + " has no entry point " + name +
                    ": the NVIDIA driver is too old (CUDA 12.8 or newer is needed)");
  fn = reinterpret_cast<Fn>(symbol);
}

CudaDriver load_driver() {
  const char *override_path = std::getenv("LLMSERVE_CUDA_DRIVER");
  const std::string path = override_path && *override_path ? override_path : "libcuda.so.1";
  // Never closed: the driver lives as long as the process.
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    throw CudaError("cannot load " + path + " (" + (why ? why : "unknown error") +
                    "): the bundle targets sm_90 and needs an NVIDIA driver");
  }
  CudaDriver d{};
#define RESOLVE(fn) resolve(library, path, #fn, d.fn)
  RESOLVE(cuInit);
  RESOLVE(cuDriverGetVersion);
  RESOLVE(cuGetErrorName);
  RESOLVE(cuGetErrorString);
  RESOLVE(cuDeviceGetCount);
  RESOLVE(cuDeviceGet);
  RESOLVE(cuDeviceGetName);
  RESOLVE(cuDeviceGetAttribute);
  RESOLVE(cuDeviceTotalMem_v2);
  RESOLVE(cuDevicePrimaryCtxRetain);
  RESOLVE(cuDevicePrimaryCtxRelease_v2);
  RESOLVE(cuCtxSetCurrent);
  RESOLVE(cuMemGetInfo_v2);
  RESOLVE(cuMemAlloc_v2);
  RESOLVE(cuMemFree_v2);
  RESOLVE(cuMemAllocHost_v2);
  RESOLVE(cuMemFreeHost);
  RESOLVE(cuMemcpyHtoDAsync_v2);
  RESOLVE(cuMemcpyDtoHAsync_v2);
  RESOLVE(cuMemcpyDtoDAsync_v2);
  RESOLVE(cuMemsetD8Async);
  RESOLVE(cuModuleLoadDataEx);
  RESOLVE(cuModuleUnload);
  RESOLVE(cuModuleGetFunction);
  RESOLVE(cuFuncSetAttribute);
  RESOLVE(cuLaunchKernelEx);
  RESOLVE(cuStreamCreate);
  RESOLVE(cuStreamDestroy_v2);
  RESOLVE(cuStreamSynchronize);
  RESOLVE(cuEventCreate);
  RESOLVE(cuEventDestroy_v2);
  RESOLVE(cuEventRecord);
  RESOLVE(cuEventSynchronize);
  RESOLVE(cuEventElapsedTime_v2);
  RESOLVE(cuStreamBeginCapture_v2);
  RESOLVE(cuStreamEndCapture);
  RESOLVE(cuGraphInstantiateWithFlags);
  RESOLVE(cuGraphLaunch);
  RESOLVE(cuGraphExecDestroy);
  RESOLVE(cuGraphDestroy);
#undef RESOLVE
  d.check(d.cuInit(0), "cuInit");
  return d;
}

} // namespace

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUresult " + std::to_string(result);
  std::string s = name;
  if (cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    s += std::string(" (") + text + ")";
  return s;
}

void CudaDriver::check(CUresult result, const char *call) const {
  if (result != CUDA_SUCCESS)
    throw CudaError(std::string(call) + ": " + describe(result));
}

const CudaDriver &cuda_driver() {
  // Loaded once; a failure is remembered and thrown again.
  static std::once_flag once;
  static CudaDriver driver;
  static std::string error;
  std::call_once(once, [] {
    try {
      driver = load_driver();
    } catch (const CudaError &e) {
      error = e.what();
    }
  });
  if (!error.empty())
    throw CudaError(error);
  return driver;
}

} // namespace llmserve::cuda
