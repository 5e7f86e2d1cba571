// The CUDA driver API entry points the CUDA executor uses, loaded at run time
// from libcuda.so.1, so llmrun builds without CUDA and runs where no driver
// is installed. Types and constants are our own minimal copies; their values
// match /usr/local/cuda/include/cuda.h (CUDA 13).
#ifndef LLMSERVE_CUDA_CUDA_DRIVER_H
#define LLMSERVE_CUDA_CUDA_DRIVER_H

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace llmserve::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUevent = struct CUevent_st *;
using CUjit_option = int;
using CUdevice_attribute = int;
using CUfunction_attribute = int;
using CUstreamCaptureMode = int;
using CUlaunchAttributeID = int;

// cuLaunchKernelEx's arguments, laid out as cuda.h lays them out.
union CUlaunchAttributeValue {
  char pad[64];
  int programmaticStreamSerializationAllowed;
};
struct CUlaunchAttribute {
  CUlaunchAttributeID id;
  char pad[8 - sizeof(CUlaunchAttributeID)];
  CUlaunchAttributeValue value;
};
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(CUlaunchAttribute) == 72 && sizeof(CUlaunchConfig) == 56 &&
                  offsetof(CUlaunchConfig, hStream) == 32 && offsetof(CUlaunchConfig, attrs) == 40,
              "cuda.h's layout");

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
inline constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr CUjit_option CU_JIT_LOG_VERBOSE = 12;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DEFAULT = 0x0;
inline constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
inline constexpr CUlaunchAttributeID CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

// A failed driver call: "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of
// memory)", or the driver that could not be loaded.
class CudaError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The loaded driver: one function pointer per entry point, named as the
// library exports it (the versioned name where cuda.h maps one).
struct CudaDriver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attribute, CUdevice device);
  CUresult (*cuDeviceTotalMem_v2)(size_t *bytes, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease_v2)(CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuMemGetInfo_v2)(size_t *free, size_t *total);
  CUresult (*cuMemAlloc_v2)(CUdeviceptr *pointer, size_t bytes);
  CUresult (*cuMemFree_v2)(CUdeviceptr pointer);
  CUresult (*cuMemAllocHost_v2)(void **pointer, size_t bytes);
  CUresult (*cuMemFreeHost)(void *pointer);
  CUresult (*cuMemcpyHtoDAsync_v2)(CUdeviceptr to, const void *from, size_t bytes,
                                   CUstream stream);
  CUresult (*cuMemcpyDtoHAsync_v2)(void *to, CUdeviceptr from, size_t bytes,
                                   CUstream stream);
  CUresult (*cuMemcpyDtoDAsync_v2)(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                                   CUstream stream);
  CUresult (*cuMemsetD8Async)(CUdeviceptr to, unsigned char value, size_t bytes,
                              CUstream stream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned num_options,
                                 CUjit_option *options, void **option_values);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, CUfunction_attribute attribute,
                                 int value);
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction function,
                               void **params, void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy_v2)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventDestroy_v2)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime_v2)(float *milliseconds, CUevent start, CUevent end);
  CUresult (*cuStreamBeginCapture_v2)(CUstream stream, CUstreamCaptureMode mode);
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);

  // "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)".
  std::string describe(CUresult result) const;
  // Throws CudaError "<call>: <describe(result)>" unless result is success.
  void check(CUresult result, const char *call) const;
};

// The driver, loaded and cuInit'ed on the first call; later calls return the
// same one, or throw the same error. The library is libcuda.so.1, or the
// file the LLMSERVE_CUDA_DRIVER environment variable names. Throws CudaError:
// "cannot load libcuda.so.1 (<dlerror>): the bundle targets sm_90 and needs
// an NVIDIA driver", or naming the missing entry point or the failed cuInit.
const CudaDriver &cuda_driver();

// Calls `fn` of the loaded driver and throws CudaError naming it on failure:
// CU_CALL(cuMemAlloc_v2, &pointer, bytes).
#define CU_CALL(fn, ...)                                                       \
  do {                                                                         \
    const ::llmserve::cuda::CudaDriver &cu_call_driver_ = ::llmserve::cuda::cuda_driver(); \
    cu_call_driver_.check(cu_call_driver_.fn(__VA_ARGS__), #fn);               \
  } while (0)

} // namespace llmserve::cuda

#endif // LLMSERVE_CUDA_CUDA_DRIVER_H
