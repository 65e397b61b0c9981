// foxhunt_cuda: the thin native layer of the CUDA backend. Each export mirrors one driver/NVRTC
// call (names and argument order follow the C API; src/backend/cuda/native.ts declares them one to
// one). Handles (device pointers, modules, functions, streams, events, graphs) cross into JS as
// bigint. Every failing CUresult/nvrtcResult becomes one JS Error: "<api>: <CUDA_ERROR_X> (<text>):
// <what to do>", with `code` and `api` properties so the TS side can tell a lost device apart.
#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "loader.h"

using namespace cuapi;

namespace {

Driver drv{};
void* drvLib = nullptr;
Nvrtc rtc{};
void* rtcLib = nullptr;
CUdevice device = 0;
int deviceOrdinal = -1;
CUcontext context = nullptr;
// init/shutdown pairs are counted: several backends in one process share the primary context.
int users = 0;

const char* kNoDriver =
    "no CUDA driver (libcuda.so.1 not found): install the NVIDIA driver or use --backend webgpu|cpu";
const char* kNoDevice =
    "no CUDA device: check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend webgpu|cpu";

// What a user can do about an error, by its name; the context-killing errors come first.
std::string hintFor(const std::string& name) {
  if (name == "CUDA_ERROR_ILLEGAL_ADDRESS" || name == "CUDA_ERROR_LAUNCH_FAILED" ||
      name == "CUDA_ERROR_ILLEGAL_INSTRUCTION" || name == "CUDA_ERROR_MISALIGNED_ADDRESS" ||
      name == "CUDA_ERROR_HARDWARE_STACK_ERROR" || name == "CUDA_ERROR_ECC_UNCORRECTABLE" ||
      name == "CUDA_ERROR_LAUNCH_TIMEOUT")
    return "the CUDA context is lost: restart the run (it resumes from its last checkpoint); if it "
           "repeats, run the kernel under compute-sanitizer";
  if (name == "CUDA_ERROR_OUT_OF_MEMORY")
    return "the GPU is out of memory: lower the batch size or the number of environments, or stop "
           "other processes on the GPU";
  if (name == "CUDA_ERROR_NO_DEVICE" || name == "CUDA_ERROR_INVALID_DEVICE")
    return "check nvidia-smi and CUDA_VISIBLE_DEVICES, or use --backend webgpu|cpu";
  if (name == "CUDA_ERROR_INSUFFICIENT_DRIVER" || name == "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" ||
      name == "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE" || name == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION")
    return "update the NVIDIA driver, or use --backend webgpu|cpu";
  if (name == "CUDA_ERROR_STUB_LIBRARY")
    return "the loaded libcuda.so.1 is the toolkit's stub: put the driver's library first on "
           "LD_LIBRARY_PATH or set FOXHUNT_LIBCUDA";
  if (name == "CUDA_ERROR_NO_BINARY_FOR_GPU" || name == "CUDA_ERROR_INVALID_PTX" ||
      name == "CUDA_ERROR_INVALID_IMAGE")
    return "the kernel binary does not fit this GPU: delete the kernel cache (FOXHUNT_CACHE_DIR) and rerun";
  if (name == "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
    return "the kernel needs more registers or shared memory than a block offers: use a smaller block";
  if (name == "CUDA_ERROR_NOT_FOUND")
    return "the module has no such kernel: cuda/<name>.cu must define extern \"C\" __global__ void "
           "<name>(KERNEL_ARGS)";
  if (name == "CUDA_ERROR_NOT_INITIALIZED" || name == "CUDA_ERROR_INVALID_CONTEXT")
    return "the CUDA backend was destroyed or never initialised: create a new backend";
  return "a foxhunt bug or a driver fault: report it with the output of `foxhunt doctor --json`";
}

Napi::Error cuError(Napi::Env env, const char* api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (drv.cuGetErrorName == nullptr || drv.cuGetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr)
    name = "CUDA_ERROR_UNKNOWN";
  if (drv.cuGetErrorString == nullptr || drv.cuGetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr)
    text = "unrecognised error code";
  std::string msg = std::string(api) + ": " + name + " (" + text + "): " + hintFor(name);
  Napi::Error err = Napi::Error::New(env, msg);
  err.Set("code", Napi::String::New(env, name));
  err.Set("api", Napi::String::New(env, api));
  return err;
}

void check(Napi::Env env, CUresult r, const char* api) {
  if (r != CUDA_SUCCESS) throw cuError(env, api, r);
}

Napi::Error plainError(Napi::Env env, const std::string& msg, const char* code) {
  Napi::Error err = Napi::Error::New(env, msg);
  err.Set("code", Napi::String::New(env, code));
  return err;
}

void requireReady(Napi::Env env) {
  if (users == 0) throw plainError(env, "CUDA is not initialised: call init() first", "FOXHUNT_NOT_INITIALISED");
}

uint64_t u64Arg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsBigInt())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a bigint handle");
  bool lossless = false;
  return info[i].As<Napi::BigInt>().Uint64Value(&lossless);
}

template <typename T>
T handleArg(const Napi::CallbackInfo& info, size_t i) {
  return reinterpret_cast<T>(static_cast<uintptr_t>(u64Arg(info, i)));
}

Napi::Value handleValue(Napi::Env env, const void* h) {
  return Napi::BigInt::New(env, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h)));
}

double numberArg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsNumber())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

unsigned u32Arg(const Napi::CallbackInfo& info, size_t i) {
  double v = numberArg(info, i);
  if (v < 0 || v > 4294967295.0 || v != static_cast<double>(static_cast<uint64_t>(v)))
    throw Napi::RangeError::New(info.Env(), "argument " + std::to_string(i) + " must be a u32");
  return static_cast<unsigned>(v);
}

size_t sizeArg(const Napi::CallbackInfo& info, size_t i) {
  double v = numberArg(info, i);
  if (v < 0 || v > 9007199254740991.0 || v != static_cast<double>(static_cast<uint64_t>(v)))
    throw Napi::RangeError::New(info.Env(), "argument " + std::to_string(i) + " must be a byte count");
  return static_cast<size_t>(v);
}

std::string stringArg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsString())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

std::vector<std::string> stringsArg(const Napi::CallbackInfo& info, size_t i) {
  if (!info[i].IsArray())
    throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a string[]");
  Napi::Array arr = info[i].As<Napi::Array>();
  std::vector<std::string> out;
  for (uint32_t k = 0; k < arr.Length(); k++) {
    Napi::Value v = arr.Get(k);
    if (!v.IsString())
      throw Napi::TypeError::New(info.Env(), "argument " + std::to_string(i) + " must be a string[]");
    out.push_back(v.As<Napi::String>().Utf8Value());
  }
  return out;
}

struct Bytes {
  uint8_t* data;
  size_t size;
};

Bytes bytesArg(const Napi::CallbackInfo& info, size_t i) {
  if (info[i].IsTypedArray()) {
    Napi::TypedArray ta = info[i].As<Napi::TypedArray>();
    return {static_cast<uint8_t*>(ta.ArrayBuffer().Data()) + ta.ByteOffset(), ta.ByteLength()};
  }
  if (info[i].IsDataView()) {
    Napi::DataView dv = info[i].As<Napi::DataView>();
    return {static_cast<uint8_t*>(dv.Data()), dv.ByteLength()};
  }
  if (info[i].IsArrayBuffer()) {
    Napi::ArrayBuffer ab = info[i].As<Napi::ArrayBuffer>();
    return {static_cast<uint8_t*>(ab.Data()), ab.ByteLength()};
  }
  throw Napi::TypeError::New(info.Env(),
                             "argument " + std::to_string(i) + " must be an ArrayBuffer or a view of one");
}

const char* const* cstrs(const std::vector<std::string>& v, std::vector<const char*>& storage) {
  storage.clear();
  for (const std::string& s : v) storage.push_back(s.c_str());
  return storage.empty() ? nullptr : storage.data();
}

// ---- driver, device ----

// init(ordinal, libPath): opens the driver, retains the device's primary context, makes it current.
// Later calls (another backend in the same process) only count one more user of the context.
Napi::Value Init(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int ordinal = static_cast<int>(u32Arg(info, 0));
  std::string path = stringArg(info, 1);
  if (!drvLib) {
    std::string why = loadDriver(path.c_str(), drv, drvLib);
    if (!why.empty()) {
      if (why.rfind("cannot open", 0) == 0) {
        std::string msg = kNoDriver;
        if (path != "libcuda.so.1") msg += " (" + why + ")";
        throw plainError(env, msg, "FOXHUNT_NO_DRIVER");
      }
      throw plainError(env, "NVIDIA driver too old: " + why + ": update the driver or use --backend webgpu|cpu",
                       "FOXHUNT_OLD_DRIVER");
    }
  }
  if (users > 0) {
    if (ordinal != deviceOrdinal)
      throw plainError(env,
                       "CUDA is already in use on device " + std::to_string(deviceOrdinal) +
                           " in this process: one device per process",
                       "FOXHUNT_OTHER_DEVICE");
    users++;
    return env.Undefined();
  }
  CUresult r = drv.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) throw plainError(env, kNoDevice, "CUDA_ERROR_NO_DEVICE");
  check(env, r, "cuInit");
  int count = 0;
  check(env, drv.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0) throw plainError(env, kNoDevice, "CUDA_ERROR_NO_DEVICE");
  if (ordinal >= count)
    throw plainError(env,
                     "CUDA device " + std::to_string(ordinal) + " does not exist (" + std::to_string(count) +
                         " visible): choose a device below " + std::to_string(count),
                     "CUDA_ERROR_INVALID_DEVICE");
  check(env, drv.cuDeviceGet(&device, ordinal), "cuDeviceGet");
  check(env, drv.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(env, drv.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  deviceOrdinal = ordinal;
  users = 1;
  return env.Undefined();
}

// shutdown(): one user fewer; the last one releases the primary context, which invalidates every
// handle made in it.
Napi::Value Shutdown(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (users == 0 || --users > 0) return env.Undefined();
  deviceOrdinal = -1;
  check(env, drv.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  context = nullptr;
  return env.Undefined();
}

Napi::Value DeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  char name[256] = {0};
  check(env, drv.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName");
  int driverVersion = 0;
  check(env, drv.cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
  size_t total = 0;
  size_t free = 0;
  check(env, drv.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem");
  check(env, drv.cuMemGetInfo(&free, &total), "cuMemGetInfo");
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", Napi::String::New(env, name));
  out.Set("driverVersion", Napi::Number::New(env, driverVersion));
  out.Set("totalMemory", Napi::Number::New(env, static_cast<double>(total)));
  out.Set("freeMemory", Napi::Number::New(env, static_cast<double>(free)));
  struct Attr {
    const char* key;
    int id;
  };
  // Clock rates are deprecated in CUDA 13 and may be refused: those keys are then left out.
  const Attr attrs[] = {{"computeMajor", ATTR_COMPUTE_CAPABILITY_MAJOR},
                        {"computeMinor", ATTR_COMPUTE_CAPABILITY_MINOR},
                        {"smCount", ATTR_MULTIPROCESSOR_COUNT},
                        {"warpSize", ATTR_WARP_SIZE},
                        {"maxThreadsPerBlock", ATTR_MAX_THREADS_PER_BLOCK},
                        {"maxSharedPerBlock", ATTR_MAX_SHARED_MEMORY_PER_BLOCK},
                        {"maxSharedPerBlockOptin", ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
                        {"l2CacheBytes", ATTR_L2_CACHE_SIZE},
                        {"memoryBusWidthBits", ATTR_GLOBAL_MEMORY_BUS_WIDTH},
                        {"clockKHz", ATTR_CLOCK_RATE},
                        {"memoryClockKHz", ATTR_MEMORY_CLOCK_RATE}};
  for (const Attr& a : attrs) {
    int v = 0;
    if (drv.cuDeviceGetAttribute(&v, a.id, device) == CUDA_SUCCESS) out.Set(a.key, Napi::Number::New(env, v));
  }
  return out;
}

// ---- NVRTC ----

// loadNvrtc(path): returns [major, minor] of the NVRTC it opened; throws if it cannot be used.
Napi::Value LoadNvrtc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = stringArg(info, 0);
  if (!rtcLib) {
    std::string why = loadNvrtc(path.c_str(), rtc, rtcLib);
    if (!why.empty()) throw plainError(env, why, "FOXHUNT_NO_NVRTC");
  }
  int major = 0;
  int minor = 0;
  rtc.nvrtcVersion(&major, &minor);
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(0u, Napi::Number::New(env, major));
  out.Set(1u, Napi::Number::New(env, minor));
  return out;
}

void checkRtc(Napi::Env env, nvrtcResult r, const char* api) {
  if (r == NVRTC_SUCCESS) return;
  throw plainError(env, std::string(api) + ": " + rtc.nvrtcGetErrorString(r), "FOXHUNT_NVRTC");
}

// nvrtcCompile(source, name, headerSources, headerNames, options) -> cubin bytes. A compile error
// throws with the compiler log as the message tail and as `log`.
Napi::Value NvrtcCompile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (!rtcLib) throw plainError(env, "NVRTC is not loaded: call loadNvrtc() first", "FOXHUNT_NO_NVRTC");
  std::string source = stringArg(info, 0);
  std::string name = stringArg(info, 1);
  std::vector<std::string> headers = stringsArg(info, 2);
  std::vector<std::string> includeNames = stringsArg(info, 3);
  std::vector<std::string> options = stringsArg(info, 4);
  if (headers.size() != includeNames.size())
    throw Napi::TypeError::New(env, "headerSources and headerNames differ in length");
  std::vector<const char*> h;
  std::vector<const char*> n;
  std::vector<const char*> o;
  const char* const* hp = cstrs(headers, h);
  const char* const* np = cstrs(includeNames, n);
  const char* const* op = cstrs(options, o);
  nvrtcProgram prog = nullptr;
  checkRtc(env, rtc.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), static_cast<int>(h.size()), hp, np),
           "nvrtcCreateProgram");
  nvrtcResult compiled = rtc.nvrtcCompileProgram(prog, static_cast<int>(o.size()), op);
  size_t logSize = 0;
  std::string log;
  if (rtc.nvrtcGetProgramLogSize(prog, &logSize) == NVRTC_SUCCESS && logSize > 1) {
    log.resize(logSize);
    rtc.nvrtcGetProgramLog(prog, log.data());
    log.resize(logSize - 1);
  }
  if (compiled != NVRTC_SUCCESS) {
    rtc.nvrtcDestroyProgram(&prog);
    Napi::Error err = plainError(
        env, "nvrtcCompileProgram: " + std::string(rtc.nvrtcGetErrorString(compiled)) + "\n" + log, "FOXHUNT_NVRTC");
    err.Set("log", Napi::String::New(env, log));
    throw err;
  }
  size_t size = 0;
  nvrtcResult r = rtc.nvrtcGetCUBINSize(prog, &size);
  Napi::Buffer<uint8_t> cubin = Napi::Buffer<uint8_t>::New(env, r == NVRTC_SUCCESS ? size : 0);
  if (r == NVRTC_SUCCESS) r = rtc.nvrtcGetCUBIN(prog, reinterpret_cast<char*>(cubin.Data()));
  rtc.nvrtcDestroyProgram(&prog);
  checkRtc(env, r, "nvrtcGetCUBIN");
  return cubin;
}

// ---- modules ----

Napi::Value ModuleLoadData(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  Bytes image = bytesArg(info, 0);
  CUmodule mod = nullptr;
  check(env, drv.cuModuleLoadData(&mod, image.data), "cuModuleLoadData");
  return handleValue(env, mod);
}

Napi::Value ModuleUnload(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuModuleUnload(handleArg<CUmodule>(info, 0)), "cuModuleUnload");
  return info.Env().Undefined();
}

Napi::Value ModuleGetFunction(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  std::string name = stringArg(info, 1);
  CUfunction fn = nullptr;
  check(env, drv.cuModuleGetFunction(&fn, handleArg<CUmodule>(info, 0), name.c_str()), "cuModuleGetFunction");
  return handleValue(env, fn);
}

// funcSetMaxDynamicShared(fn, bytes): lets launches of `fn` ask for `bytes` of dynamic shared
// memory (the driver refuses more than 48 KiB per block without it).
Napi::Value FuncSetMaxDynamicShared(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  check(env,
        drv.cuFuncSetAttribute(handleArg<CUfunction>(info, 0), cuapi::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               static_cast<int>(u32Arg(info, 1))),
        "cuFuncSetAttribute");
  return env.Undefined();
}

// funcAllowNonPortableCluster(fn): lets launches of `fn` use clusters of more than 8 blocks.
Napi::Value FuncAllowNonPortableCluster(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  check(env,
        drv.cuFuncSetAttribute(handleArg<CUfunction>(info, 0),
                               cuapi::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
        "cuFuncSetAttribute");
  return env.Undefined();
}

// maxActiveClusters(fn, bx, by, bz, sharedBytes, cx, cy, cz): the most clusters of cx x cy x cz
// blocks of this shape that the device can hold at once (cuOccupancyMaxActiveClusters), or -1 where
// the driver has no such query. A grid of more clusters runs in waves.
Napi::Value MaxActiveClusters(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  if (drv.cuOccupancyMaxActiveClusters == nullptr) return Napi::Number::New(env, -1);
  cuapi::CUlaunchAttribute attr = {};
  attr.id = cuapi::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = u32Arg(info, 5);
  attr.value.clusterDim.y = u32Arg(info, 6);
  attr.value.clusterDim.z = u32Arg(info, 7);
  cuapi::CUlaunchConfig config = {attr.value.clusterDim.x,
                                  attr.value.clusterDim.y,
                                  attr.value.clusterDim.z,
                                  u32Arg(info, 1),
                                  u32Arg(info, 2),
                                  u32Arg(info, 3),
                                  u32Arg(info, 4),
                                  nullptr,
                                  &attr,
                                  1};
  int clusters = 0;
  check(env, drv.cuOccupancyMaxActiveClusters(&clusters, handleArg<CUfunction>(info, 0), &config),
        "cuOccupancyMaxActiveClusters");
  return Napi::Number::New(env, clusters);
}

// ---- memory ----

Napi::Value MemAlloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  CUdeviceptr ptr = 0;
  check(env, drv.cuMemAlloc(&ptr, sizeArg(info, 0)), "cuMemAlloc");
  return Napi::BigInt::New(env, static_cast<uint64_t>(ptr));
}

Napi::Value MemFree(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuMemFree(u64Arg(info, 0)), "cuMemFree");
  return info.Env().Undefined();
}

Napi::Value MemsetD8Async(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(),
        drv.cuMemsetD8Async(u64Arg(info, 0), static_cast<unsigned char>(u32Arg(info, 1) & 0xff), sizeArg(info, 2),
                            handleArg<CUstream>(info, 3)),
        "cuMemsetD8Async");
  return info.Env().Undefined();
}

// memcpyHtoDAsync(dst, src, stream): from pageable memory the driver stages the bytes before it
// returns, so the caller may reuse `src` at once.
Napi::Value MemcpyHtoDAsync(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  Bytes src = bytesArg(info, 1);
  check(info.Env(), drv.cuMemcpyHtoDAsync(u64Arg(info, 0), src.data, src.size, handleArg<CUstream>(info, 2)),
        "cuMemcpyHtoDAsync");
  return info.Env().Undefined();
}

// memcpyDtoH(dst, src, stream): ordered on the stream, returns when `dst` holds the bytes (the JS
// view must not be touched by the GPU after the call returns, so this one cannot stay async).
Napi::Value MemcpyDtoH(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  Bytes dst = bytesArg(info, 0);
  CUstream stream = handleArg<CUstream>(info, 2);
  check(env, drv.cuMemcpyDtoHAsync(dst.data, u64Arg(info, 1), dst.size, stream), "cuMemcpyDtoHAsync");
  check(env, drv.cuStreamSynchronize(stream), "cuStreamSynchronize");
  return env.Undefined();
}

Napi::Value MemcpyDtoDAsync(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(),
        drv.cuMemcpyDtoDAsync(u64Arg(info, 0), u64Arg(info, 1), sizeArg(info, 2), handleArg<CUstream>(info, 3)),
        "cuMemcpyDtoDAsync");
  return info.Env().Undefined();
}

// ---- launch ----

// The launches' common arguments (fn, gx, gy, gz, bx, by, bz, sharedBytes, stream, params):
// through cuLaunchKernelEx with one attribute, or through cuLaunchKernel when `attr` is null.
void launchWith(const Napi::CallbackInfo& info, const cuapi::CUlaunchAttribute* attr) {
  Napi::Env env = info.Env();
  CUfunction fn = handleArg<CUfunction>(info, 0);
  unsigned dims[7];
  for (size_t i = 0; i < 7; i++) dims[i] = u32Arg(info, i + 1);
  CUstream stream = handleArg<CUstream>(info, 8);
  Bytes params = bytesArg(info, 9);
  size_t paramSize = params.size;
  void* extra[] = {FOXHUNT_CU_LAUNCH_PARAM_BUFFER_POINTER, params.data, FOXHUNT_CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &paramSize, FOXHUNT_CU_LAUNCH_PARAM_END};
  if (attr == nullptr) {
    check(env,
          drv.cuLaunchKernel(fn, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream, nullptr,
                             paramSize > 0 ? extra : nullptr),
          "cuLaunchKernel");
    return;
  }
  cuapi::CUlaunchAttribute copy = *attr;
  cuapi::CUlaunchConfig config = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], stream, &copy, 1};
  check(env, drv.cuLaunchKernelEx(&config, fn, nullptr, paramSize > 0 ? extra : nullptr), "cuLaunchKernelEx");
}

// launchKernel(fn, gx, gy, gz, bx, by, bz, sharedBytes, stream, params): `params` is the kernel's
// argument list already laid out by the caller (pointers, then the uniform struct); the driver
// copies it at launch, so the view may be reused.
Napi::Value LaunchKernel(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  launchWith(info, nullptr);
  return info.Env().Undefined();
}

// launchKernelCluster(fn, gx, gy, gz, bx, by, bz, sharedBytes, stream, params, cx, cy, cz): as
// launchKernel, in thread-block clusters of cx x cy x cz blocks (cuLaunchKernelEx, sm_90+).
Napi::Value LaunchKernelCluster(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  if (drv.cuLaunchKernelEx == nullptr)
    throw plainError(env, "this CUDA driver has no cuLaunchKernelEx: cluster kernels need a CUDA 12 or newer driver",
                     "FOXHUNT_NO_CLUSTER_LAUNCH");
  cuapi::CUlaunchAttribute attr = {};
  attr.id = cuapi::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = u32Arg(info, 10);
  attr.value.clusterDim.y = u32Arg(info, 11);
  attr.value.clusterDim.z = u32Arg(info, 12);
  launchWith(info, &attr);
  return env.Undefined();
}

// launchKernelPdl(fn, gx, gy, gz, bx, by, bz, sharedBytes, stream, params): as launchKernel, with
// programmatic stream serialization (cuLaunchKernelEx, sm_90+): the grid may start while the
// previous kernel of the stream finishes, so the kernel must begin with griddepcontrol.wait. A
// driver without cuLaunchKernelEx gets a plain launch, which the wait makes equivalent.
Napi::Value LaunchKernelPdl(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  cuapi::CUlaunchAttribute attr = {};
  attr.id = cuapi::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  launchWith(info, drv.cuLaunchKernelEx == nullptr ? nullptr : &attr);
  return env.Undefined();
}

// ---- streams, events ----

Napi::Value StreamCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  CUstream s = nullptr;
  check(env, drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  return handleValue(env, s);
}

Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuStreamDestroy(handleArg<CUstream>(info, 0)), "cuStreamDestroy");
  return info.Env().Undefined();
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuStreamSynchronize(handleArg<CUstream>(info, 0)), "cuStreamSynchronize");
  return info.Env().Undefined();
}

// Waits on a worker thread so a long GPU phase does not block the event loop.
class StreamSyncWorker : public Napi::AsyncWorker {
 public:
  StreamSyncWorker(Napi::Env env, CUstream stream)
      : Napi::AsyncWorker(env), stream_(stream), deferred_(Napi::Promise::Deferred::New(env)) {}
  Napi::Promise Promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    result_ = drv.cuCtxSetCurrent(context);
    if (result_ == CUDA_SUCCESS) result_ = drv.cuStreamSynchronize(stream_);
  }
  void OnOK() override {
    if (result_ == CUDA_SUCCESS)
      deferred_.Resolve(Env().Undefined());
    else
      deferred_.Reject(cuError(Env(), "cuStreamSynchronize", result_).Value());
  }

 private:
  CUstream stream_;
  Napi::Promise::Deferred deferred_;
  CUresult result_ = CUDA_SUCCESS;
};

Napi::Value StreamSynchronizeAsync(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  auto* worker = new StreamSyncWorker(info.Env(), handleArg<CUstream>(info, 0));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

Napi::Value EventCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  CUevent ev = nullptr;
  check(env, drv.cuEventCreate(&ev, CU_EVENT_DEFAULT), "cuEventCreate");
  return handleValue(env, ev);
}

Napi::Value EventDestroy(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuEventDestroy(handleArg<CUevent>(info, 0)), "cuEventDestroy");
  return info.Env().Undefined();
}

Napi::Value EventRecord(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuEventRecord(handleArg<CUevent>(info, 0), handleArg<CUstream>(info, 1)), "cuEventRecord");
  return info.Env().Undefined();
}

// The stream's later work waits for the event's (in a capture: a dependency edge of the graph).
Napi::Value StreamWaitEvent(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuStreamWaitEvent(handleArg<CUstream>(info, 0), handleArg<CUevent>(info, 1), 0),
        "cuStreamWaitEvent");
  return info.Env().Undefined();
}

Napi::Value EventSynchronize(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuEventSynchronize(handleArg<CUevent>(info, 0)), "cuEventSynchronize");
  return info.Env().Undefined();
}

Napi::Value EventElapsedTime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  float ms = 0;
  check(env, drv.cuEventElapsedTime(&ms, handleArg<CUevent>(info, 0), handleArg<CUevent>(info, 1)),
        "cuEventElapsedTime");
  return Napi::Number::New(env, ms);
}

// ---- graphs ----

Napi::Value StreamBeginCapture(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuStreamBeginCapture(handleArg<CUstream>(info, 0), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture");
  return info.Env().Undefined();
}

Napi::Value StreamEndCapture(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  CUgraph graph = nullptr;
  check(env, drv.cuStreamEndCapture(handleArg<CUstream>(info, 0), &graph), "cuStreamEndCapture");
  return handleValue(env, graph);
}

Napi::Value GraphInstantiate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  requireReady(env);
  CUgraphExec exec = nullptr;
  check(env, drv.cuGraphInstantiate(&exec, handleArg<CUgraph>(info, 0), 0), "cuGraphInstantiate");
  return handleValue(env, exec);
}

Napi::Value GraphLaunch(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuGraphLaunch(handleArg<CUgraphExec>(info, 0), handleArg<CUstream>(info, 1)),
        "cuGraphLaunch");
  return info.Env().Undefined();
}

Napi::Value GraphDestroy(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuGraphDestroy(handleArg<CUgraph>(info, 0)), "cuGraphDestroy");
  return info.Env().Undefined();
}

Napi::Value GraphExecDestroy(const Napi::CallbackInfo& info) {
  requireReady(info.Env());
  check(info.Env(), drv.cuGraphExecDestroy(handleArg<CUgraphExec>(info, 0)), "cuGraphExecDestroy");
  return info.Env().Undefined();
}

Napi::Object Register(Napi::Env env, Napi::Object exports) {
  const std::pair<const char*, Napi::Function::Callback> verbs[] = {
      {"init", Init},
      {"shutdown", Shutdown},
      {"deviceInfo", DeviceInfo},
      {"loadNvrtc", LoadNvrtc},
      {"nvrtcCompile", NvrtcCompile},
      {"moduleLoadData", ModuleLoadData},
      {"moduleUnload", ModuleUnload},
      {"moduleGetFunction", ModuleGetFunction},
      {"funcSetMaxDynamicShared", FuncSetMaxDynamicShared},
      {"funcAllowNonPortableCluster", FuncAllowNonPortableCluster},
      {"maxActiveClusters", MaxActiveClusters},
      {"launchKernelCluster", LaunchKernelCluster},
      {"launchKernelPdl", LaunchKernelPdl},
      {"memAlloc", MemAlloc},
      {"memFree", MemFree},
      {"memsetD8Async", MemsetD8Async},
      {"memcpyHtoDAsync", MemcpyHtoDAsync},
      {"memcpyDtoH", MemcpyDtoH},
      {"memcpyDtoDAsync", MemcpyDtoDAsync},
      {"launchKernel", LaunchKernel},
      {"streamCreate", StreamCreate},
      {"streamDestroy", StreamDestroy},
      {"streamSynchronize", StreamSynchronize},
      {"streamSynchronizeAsync", StreamSynchronizeAsync},
      {"eventCreate", EventCreate},
      {"eventDestroy", EventDestroy},
      {"eventRecord", EventRecord},
      {"eventSynchronize", EventSynchronize},
      {"streamWaitEvent", StreamWaitEvent},
      {"eventElapsedTime", EventElapsedTime},
      {"streamBeginCapture", StreamBeginCapture},
      {"streamEndCapture", StreamEndCapture},
      {"graphInstantiate", GraphInstantiate},
      {"graphLaunch", GraphLaunch},
      {"graphDestroy", GraphDestroy},
      {"graphExecDestroy", GraphExecDestroy},
  };
  for (const auto& [name, fn] : verbs) exports.Set(name, Napi::Function::New(env, fn, name));
  return exports;
}

}  // namespace

NODE_API_MODULE(foxhunt_cuda, Register)
