// The slice of the CUDA driver API and NVRTC that foxhunt calls, declared here so the addon builds
// without CUDA headers and never links libcuda: both libraries are opened at run time (loader.cc).
// Types and values are copied from cuda.h / nvrtc.h (CUDA 12-13, 64-bit); the driver ABI keeps them
// stable. Every symbol is resolved by its exported name, which for some verbs carries a `_v2` suffix
// (cuda.h hides it behind macros).
#pragma once

#include <cstddef>

namespace cuapi {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUevent = struct CUevent_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;

// CUdevice_attribute values used by deviceInfo.
constexpr int ATTR_MAX_THREADS_PER_BLOCK = 1;
constexpr int ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int ATTR_WARP_SIZE = 10;
constexpr int ATTR_CLOCK_RATE = 13;
constexpr int ATTR_MULTIPROCESSOR_COUNT = 16;
constexpr int ATTR_MEMORY_CLOCK_RATE = 36;
constexpr int ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37;
constexpr int ATTR_L2_CACHE_SIZE = 38;
constexpr int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
// CUfunction_attribute: the dynamic shared memory a launch may ask for (above 48 KiB needs it).
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
// CUfunction_attribute: clusters of more than 8 blocks (sm_90: up to 16) are refused without it.
constexpr int CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14;

// cuLaunchKernelEx's configuration (CUDA 12+), laid out as cuda.h's CUlaunchConfig /
// CUlaunchAttribute: a 4-byte id, 4 bytes of padding, a 64-byte value union. Only the cluster
// dimension and programmatic stream serialization (PDL: the launch may begin while the previous
// kernel of the stream finishes; the kernel waits with griddepcontrol.wait) attributes are used.
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
constexpr int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;
struct CUlaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout differs from cuda.h");
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute* attrs;
  unsigned numAttrs;
};

constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

// cuLaunchKernel's `extra` keys: the kernel parameters as one packed buffer.
#define FOXHUNT_CU_LAUNCH_PARAM_END reinterpret_cast<void*>(0x00)
#define FOXHUNT_CU_LAUNCH_PARAM_BUFFER_POINTER reinterpret_cast<void*>(0x01)
#define FOXHUNT_CU_LAUNCH_PARAM_BUFFER_SIZE reinterpret_cast<void*>(0x02)

struct Driver {
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuMemGetInfo)(size_t*, size_t*);
  CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuStreamCreate)(CUstream*, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
  CUresult (*cuGraphInstantiate)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphDestroy)(CUgraph);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  // Optional (null on drivers without it): thread-block cluster and PDL launches.
  CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
  // Optional too (CUDA 12+): how many clusters of a launch's shape can be resident at once.
  CUresult (*cuOccupancyMaxActiveClusters)(int*, CUfunction, const CUlaunchConfig*);
};

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult NVRTC_SUCCESS = 0;

struct Nvrtc {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
};

}  // namespace cuapi
