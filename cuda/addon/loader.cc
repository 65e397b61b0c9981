// Opens libcuda / libnvrtc with dlopen and fills the function tables of cuda_api.h with dlsym, so
// the addon loads on machines without CUDA and the failure is a sentence instead of a link error.
#include "loader.h"

#include <dlfcn.h>

#include <initializer_list>

namespace cuapi {
namespace {

// First name that resolves wins: newer drivers export the versioned symbol, older ones only the plain one.
template <typename Fn>
bool bind(void* lib, Fn*& slot, std::initializer_list<const char*> names, std::string& missing) {
  for (const char* name : names) {
    if (void* sym = dlsym(lib, name)) {
      slot = reinterpret_cast<Fn*>(sym);
      return true;
    }
  }
  missing = *names.begin();
  return false;
}

}  // namespace

std::string loadDriver(const char* path, Driver& d, void*& handle) {
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) return std::string("cannot open ") + path + ": " + dlerror();
  std::string missing;
  bool ok = bind(handle, d.cuGetErrorName, {"cuGetErrorName"}, missing) &&
            bind(handle, d.cuGetErrorString, {"cuGetErrorString"}, missing) &&
            bind(handle, d.cuInit, {"cuInit"}, missing) &&
            bind(handle, d.cuDriverGetVersion, {"cuDriverGetVersion"}, missing) &&
            bind(handle, d.cuDeviceGetCount, {"cuDeviceGetCount"}, missing) &&
            bind(handle, d.cuDeviceGet, {"cuDeviceGet"}, missing) &&
            bind(handle, d.cuDeviceGetName, {"cuDeviceGetName"}, missing) &&
            bind(handle, d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"}, missing) &&
            bind(handle, d.cuDeviceTotalMem, {"cuDeviceTotalMem_v2"}, missing) &&
            bind(handle, d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"}, missing) &&
            bind(handle, d.cuDevicePrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2"}, missing) &&
            bind(handle, d.cuCtxSetCurrent, {"cuCtxSetCurrent"}, missing) &&
            bind(handle, d.cuMemGetInfo, {"cuMemGetInfo_v2"}, missing) &&
            bind(handle, d.cuMemAlloc, {"cuMemAlloc_v2"}, missing) &&
            bind(handle, d.cuMemFree, {"cuMemFree_v2"}, missing) &&
            bind(handle, d.cuMemsetD8Async, {"cuMemsetD8Async"}, missing) &&
            bind(handle, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"}, missing) &&
            bind(handle, d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"}, missing) &&
            bind(handle, d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"}, missing) &&
            bind(handle, d.cuModuleLoadData, {"cuModuleLoadData"}, missing) &&
            bind(handle, d.cuModuleUnload, {"cuModuleUnload"}, missing) &&
            bind(handle, d.cuModuleGetFunction, {"cuModuleGetFunction"}, missing) &&
            bind(handle, d.cuFuncSetAttribute, {"cuFuncSetAttribute"}, missing) &&
            bind(handle, d.cuLaunchKernel, {"cuLaunchKernel"}, missing) &&
            bind(handle, d.cuStreamCreate, {"cuStreamCreate"}, missing) &&
            bind(handle, d.cuStreamDestroy, {"cuStreamDestroy_v2"}, missing) &&
            bind(handle, d.cuStreamSynchronize, {"cuStreamSynchronize"}, missing) &&
            bind(handle, d.cuEventCreate, {"cuEventCreate"}, missing) &&
            bind(handle, d.cuEventDestroy, {"cuEventDestroy_v2"}, missing) &&
            bind(handle, d.cuEventRecord, {"cuEventRecord"}, missing) &&
            bind(handle, d.cuStreamWaitEvent, {"cuStreamWaitEvent"}, missing) &&
            bind(handle, d.cuEventSynchronize, {"cuEventSynchronize"}, missing) &&
            bind(handle, d.cuEventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, missing) &&
            bind(handle, d.cuStreamBeginCapture, {"cuStreamBeginCapture_v2"}, missing) &&
            bind(handle, d.cuStreamEndCapture, {"cuStreamEndCapture"}, missing) &&
            bind(handle, d.cuGraphInstantiate, {"cuGraphInstantiateWithFlags"}, missing) &&
            bind(handle, d.cuGraphLaunch, {"cuGraphLaunch"}, missing) &&
            bind(handle, d.cuGraphDestroy, {"cuGraphDestroy"}, missing) &&
            bind(handle, d.cuGraphExecDestroy, {"cuGraphExecDestroy"}, missing);
  if (ok) {
    // Optional: only cluster and PDL launches need it, so an older driver still runs everything else
    // (PDL launches fall back to cuLaunchKernel).
    std::string absent;
    if (!bind(handle, d.cuLaunchKernelEx, {"cuLaunchKernelEx"}, absent)) d.cuLaunchKernelEx = nullptr;
    if (!bind(handle, d.cuOccupancyMaxActiveClusters, {"cuOccupancyMaxActiveClusters"}, absent))
      d.cuOccupancyMaxActiveClusters = nullptr;
    return "";
  }
  dlclose(handle);
  handle = nullptr;
  return std::string(path) + " has no symbol " + missing + " (driver older than CUDA 12)";
}

std::string loadNvrtc(const char* path, Nvrtc& n, void*& handle) {
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) return std::string("cannot open ") + path + ": " + dlerror();
  std::string missing;
  bool ok = bind(handle, n.nvrtcGetErrorString, {"nvrtcGetErrorString"}, missing) &&
            bind(handle, n.nvrtcVersion, {"nvrtcVersion"}, missing) &&
            bind(handle, n.nvrtcCreateProgram, {"nvrtcCreateProgram"}, missing) &&
            bind(handle, n.nvrtcDestroyProgram, {"nvrtcDestroyProgram"}, missing) &&
            bind(handle, n.nvrtcCompileProgram, {"nvrtcCompileProgram"}, missing) &&
            bind(handle, n.nvrtcGetProgramLogSize, {"nvrtcGetProgramLogSize"}, missing) &&
            bind(handle, n.nvrtcGetProgramLog, {"nvrtcGetProgramLog"}, missing) &&
            bind(handle, n.nvrtcGetCUBINSize, {"nvrtcGetCUBINSize"}, missing) &&
            bind(handle, n.nvrtcGetCUBIN, {"nvrtcGetCUBIN"}, missing);
  if (ok) return "";
  dlclose(handle);
  handle = nullptr;
  return std::string(path) + " has no symbol " + missing + " (NVRTC older than CUDA 11.1)";
}

}  // namespace cuapi
