/*
 * A stand-in for libcuda.so.1 and libnvrtc.so for the tests of machines without a GPU (built by
 * test/unit/cuda-mock.test.ts, loaded through FOXHUNT_LIBCUDA / FOXHUNT_NVRTC). It checks the
 * plumbing, not CUDA: "device memory" is host memory, and a launch does not run the kernel but
 * writes what it received into its first pointer argument:
 *   u32[0] 0x4b434f4d ('MOCK'), u32[1] launch sequence number, u32[2..4] grid, u32[5..7] block,
 *   u32[8] shared bytes, u32[9] parameter bytes, then the parameter block itself from byte 40.
 * Modules are the "cubin" the mock NVRTC returns: "MOCKCUBIN\n" + options + source, and a function
 * exists if its name appears as ` <name>(` in it. Events read a clock that advances 1 ms per
 * launch. Stream capture records launches and cuGraphLaunch performs them in issue order; a stream
 * that waits on an event recorded in the capture joins it, and ending the capture while a joined
 * stream has launches the capturing stream did not wait for fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNJOINED (904), as on a GPU. A launch asking for more
 * dynamic shared memory than its function's cuFuncSetAttribute allowance (48 KiB by default) fails
 * with CUDA_ERROR_INVALID_VALUE, as on a GPU. cuLaunchKernelEx takes one attribute: a cluster
 * dimension, or programmatic stream serialization (PDL) set to 1. It refuses a grid that is not a
 * multiple of the cluster, or a cluster of more than 8 blocks unless the function allows
 * non-portable sizes (then at most 16), and writes the cluster dimensions as three more u32 after
 * the parameter block; a PDL launch writes the u32 pair 6, 1 (the attribute and its value) there. Setting
 * FOXHUNT_MOCK_FAULT makes cuStreamSynchronize fail with CUDA_ERROR_ILLEGAL_ADDRESS. With
 * FOXHUNT_MOCK_LOG set to a path, the stream operations outside a capture append one line each to
 * that file, streams and events by number in creation order (s0: none): `launch s1`,
 * `record e1 s1`, `wait s2 e1`, `htod s1`, `dtod s1`, `dtoh s1`, `sync s1`, `graph s1`.
 * cuOccupancyMaxActiveClusters models 132 SMs in 8 GPCs of 18, 18, 18, 18, 16, 16, 16 and 12 SMs
 * (a made-up layout with the H200's count: 15 clusters of 8 blocks at one block per SM, 7 of 16), one
 * block per SM past 114 KiB of dynamic shared memory, else two.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700 };

typedef struct {
  char name[128];
  int max_dynamic_shared; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 48 KiB by default */
  int non_portable_cluster; /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
} Function;

enum { DEFAULT_DYNAMIC_SHARED = 48 * 1024, OPTIN_SHARED = 227 * 1024 };

typedef struct {
  Function* fn;
  unsigned dims[7];
  size_t size;
  unsigned char params[256];
  unsigned cluster[3]; /* all 0 for cuLaunchKernel */
  unsigned pdl;        /* 1: launched with programmatic stream serialization */
} Launch;

typedef struct Stream {
  int capturing;
  Launch* pending; /* the capture's launches in issue order (the capturing stream's) */
  size_t count;
  struct Stream* origin; /* while capturing: the stream that began the capture (itself there) */
  size_t ops;            /* launches of this stream in the capture */
  size_t joined;         /* of those, how many the origin has waited for */
  unsigned id;           /* creation order, from 1 (FOXHUNT_MOCK_LOG) */
} Stream;

/* An event: the clock at its record and, recorded during a capture, where it was recorded. */
typedef struct {
  unsigned clock;
  Stream* stream;
  size_t ops;
  unsigned id; /* creation order, from 1 (FOXHUNT_MOCK_LOG) */
} Event;

/* Streams that joined the current capture (waited on one of its events), for the unjoined check. */
enum { MAX_JOINED = 64 };
static Stream* joined_streams[MAX_JOINED];
static int joined_count = 0;

typedef struct {
  Launch* launches;
  size_t count;
} Graph;

static unsigned sequence = 0;

/* One line of the stream-operation log (FOXHUNT_MOCK_LOG), if one is asked for. */
static void note(const char* fmt, ...) {
  const char* path = getenv("FOXHUNT_MOCK_LOG");
  if (!path) return;
  FILE* f = fopen(path, "a");
  if (!f) return;
  va_list args;
  va_start(args, fmt);
  vfprintf(f, fmt, args);
  va_end(args);
  fputc('\n', f);
  fclose(f);
}
static unsigned sid(const void* s) { return s ? ((const struct Stream*)s)->id : 0; }

CUresult cuGetErrorName(CUresult r, const char** s) {
  switch (r) {
    case OK: *s = "CUDA_SUCCESS"; return OK;
    case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
    case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
    case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
    case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
    default: return INVALID_VALUE;
  }
}

CUresult cuGetErrorString(CUresult r, const char** s) {
  switch (r) {
    case OUT_OF_MEMORY: *s = "out of memory"; return OK;
    case ILLEGAL_ADDRESS: *s = "an illegal memory access was encountered"; return OK;
    default: *s = "mock error"; return OK;
  }
}

CUresult cuInit(unsigned flags) { return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int* v) { *v = 13000; return OK; }
CUresult cuDeviceGetCount(int* n) { *n = 1; return OK; }
CUresult cuDeviceGet(int* d, int ordinal) { *d = ordinal; return ordinal == 0 ? OK : INVALID_VALUE; }
CUresult cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  strncpy(name, "foxhunt mock GPU", (size_t)len);
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  (void)dev;
  switch (attr) {
    case 75: *v = 9; return OK;   /* compute capability major */
    case 76: *v = 0; return OK;   /* minor */
    case 16: *v = 132; return OK; /* SMs */
    case 10: *v = 32; return OK;
    case 1: *v = 1024; return OK;
    case 8: *v = 49152; return OK;
    case 97: *v = 232448; return OK;
    case 38: *v = 52428800; return OK;
    case 37: *v = 6144; return OK;
    case 36: *v = 2619000; return OK;
    default: return INVALID_VALUE; /* as CUDA 13 does for retired attributes (clock rate) */
  }
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) { (void)dev; *bytes = (size_t)80 << 30; return OK; }
CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) { (void)dev; *ctx = (void*)0x1; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
CUresult cuCtxSetCurrent(void* ctx) { return ctx ? OK : INVALID_VALUE; }
CUresult cuMemGetInfo_v2(size_t* free_, size_t* total) { *free_ = (size_t)79 << 30; *total = (size_t)80 << 30; return OK; }

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
  if (bytes == 0) return INVALID_VALUE;
  if (bytes > ((size_t)1 << 40)) return OUT_OF_MEMORY;
  void* mem = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return OUT_OF_MEMORY;
  memset(mem, 0xAB, bytes); /* garbage, so a missing zero-fill shows */
  *p = (CUdeviceptr)(uintptr_t)mem;
  return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void*)(uintptr_t)p); return OK; }
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, void* s) {
  (void)s;
  memset((void*)(uintptr_t)p, v, n);
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, void* s) {
  note("htod s%u", sid(s));
  memcpy((void*)(uintptr_t)dst, src, n);
  return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, void* s) {
  note("dtoh s%u", sid(s));
  memcpy(dst, (const void*)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void* s) {
  note("dtod s%u", sid(s));
  memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n);
  return OK;
}

CUresult cuModuleLoadData(void** mod, const void* image) {
  if (strncmp((const char*)image, "MOCKCUBIN\n", 10) != 0) return INVALID_VALUE;
  *mod = strdup((const char*)image);
  return OK;
}
CUresult cuModuleUnload(void* mod) { free(mod); return OK; }
CUresult cuModuleGetFunction(Function** fn, void* mod, const char* name) {
  char pattern[160];
  snprintf(pattern, sizeof pattern, " %s(", name);
  if (!strstr((const char*)mod, pattern)) return NOT_FOUND;
  *fn = calloc(1, sizeof(Function)); /* leaked with the module: fine for a test double */
  strncpy((*fn)->name, name, sizeof((*fn)->name) - 1);
  (*fn)->max_dynamic_shared = DEFAULT_DYNAMIC_SHARED;
  return OK;
}

/* As the driver: attribute 8 (max dynamic shared bytes, at most the opt-in limit) and 14
 * (non-portable cluster sizes allowed, 0 or 1). */
CUresult cuFuncSetAttribute(Function* fn, int attr, int value) {
  if (attr == 14 && (value == 0 || value == 1)) {
    fn->non_portable_cluster = value;
    return OK;
  }
  if (attr != 8 || value < 0 || value > OPTIN_SHARED) return INVALID_VALUE;
  fn->max_dynamic_shared = value;
  return OK;
}

static void perform(const Launch* l) {
  sequence++;
  if (l->size < 8) return;
  CUdeviceptr first;
  memcpy(&first, l->params, 8);
  uint32_t* out = (uint32_t*)(uintptr_t)first;
  out[0] = 0x4b434f4d;
  out[1] = sequence;
  memcpy(out + 2, l->dims, sizeof l->dims);
  out[9] = (uint32_t)l->size;
  memcpy(out + 10, l->params, l->size);
  if (l->cluster[0] != 0) memcpy((unsigned char*)(out + 10) + l->size, l->cluster, sizeof l->cluster);
  if (l->pdl) {
    const unsigned mark[2] = {6, 1};
    memcpy((unsigned char*)(out + 10) + l->size, mark, sizeof mark);
  }
}

CUresult cuLaunchKernel(Function* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, Stream* s, void** kernelParams, void** extra) {
  if (kernelParams != NULL) return INVALID_VALUE; /* foxhunt passes one packed block via `extra` */
  if (shared > (unsigned)fn->max_dynamic_shared) return INVALID_VALUE;
  Launch l = {fn, {gx, gy, gz, bx, by, bz, shared}, 0, {0}, {0, 0, 0}, 0};
  if (extra) {
    if (extra[0] != (void*)1 || extra[2] != (void*)2 || extra[4] != (void*)0) return INVALID_VALUE;
    l.size = *(size_t*)extra[3];
    if (l.size > sizeof l.params) return INVALID_VALUE;
    memcpy(l.params, extra[1], l.size);
  }
  if (s && s->capturing) {
    Stream* o = s->origin;
    o->pending = realloc(o->pending, (o->count + 1) * sizeof(Launch));
    o->pending[o->count++] = l;
    s->ops++;
    return OK;
  }
  note("launch s%u", sid(s));
  perform(&l);
  return OK;
}

/* cuda.h's CUlaunchAttribute (id, 4 bytes of padding, a 64-byte value) and CUlaunchConfig. */
typedef struct {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
    int programmaticStreamSerializationAllowed;
  } value;
} LaunchAttribute;
typedef struct {
  unsigned grid[3], block[3], shared;
  Stream* stream;
  LaunchAttribute* attrs;
  unsigned numAttrs;
} LaunchConfig;

CUresult cuLaunchKernelEx(const LaunchConfig* c, Function* fn, void** kernelParams, void** extra) {
  if (c->numAttrs != 1) return INVALID_VALUE;
  const unsigned seq = sequence;
  if (c->attrs[0].id == 6) { /* CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION */
    if (c->attrs[0].value.programmaticStreamSerializationAllowed != 1) return INVALID_VALUE;
    CUresult r = cuLaunchKernel(fn, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2],
                                c->shared, c->stream, kernelParams, extra);
    if (r != OK) return r;
    if (c->stream && c->stream->capturing) {
      c->stream->origin->pending[c->stream->origin->count - 1].pdl = 1;
    } else if (sequence != seq && extra && *(size_t*)extra[3] >= 8) {
      const unsigned mark[2] = {6, 1};
      CUdeviceptr first;
      memcpy(&first, extra[1], 8);
      memcpy((unsigned char*)(uintptr_t)first + 40 + *(size_t*)extra[3], mark, sizeof mark);
    }
    return OK;
  }
  if (c->attrs[0].id != 4) return INVALID_VALUE; /* CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION */
  const unsigned* cl = &c->attrs[0].value.clusterDim.x;
  const unsigned size = cl[0] * cl[1] * cl[2];
  if (size == 0 || size > (fn->non_portable_cluster ? 16u : 8u)) return INVALID_VALUE;
  for (int i = 0; i < 3; i++)
    if (c->grid[i] % cl[i] != 0) return INVALID_VALUE;
  /* Everything else as cuLaunchKernel, with the cluster recorded. */
  CUresult r = cuLaunchKernel(fn, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2], c->shared,
                              c->stream, kernelParams, extra);
  if (r != OK) return r;
  if (c->stream && c->stream->capturing) {
    memcpy(c->stream->origin->pending[c->stream->origin->count - 1].cluster, cl, sizeof(unsigned) * 3);
  } else if (sequence != seq && extra && *(size_t*)extra[3] >= 8) {
    /* Already performed: append the cluster after the parameter block. */
    CUdeviceptr first;
    memcpy(&first, extra[1], 8);
    const size_t size_bytes = *(size_t*)extra[3];
    memcpy((unsigned char*)(uintptr_t)first + 40 + size_bytes, cl, sizeof(unsigned) * 3);
  }
  return OK;
}

CUresult cuOccupancyMaxActiveClusters(int* n, Function* fn, const LaunchConfig* c) {
  static const int gpcs[8] = {18, 18, 18, 18, 16, 16, 16, 12};
  if (c->numAttrs != 1 || c->attrs[0].id != 4) return INVALID_VALUE;
  const unsigned* cl = &c->attrs[0].value.clusterDim.x;
  const unsigned size = cl[0] * cl[1] * cl[2];
  if (size == 0 || size > (fn->non_portable_cluster ? 16u : 8u)) return INVALID_VALUE;
  if (c->shared > (unsigned)fn->max_dynamic_shared) return INVALID_VALUE;
  const int per_sm = c->shared > 114 * 1024 ? 1 : 2;
  *n = 0;
  for (int g = 0; g < 8; g++) *n += gpcs[g] * per_sm / (int)size;
  return OK;
}

static unsigned streams_made = 0, events_made = 0;
CUresult cuStreamCreate(Stream** s, unsigned flags) {
  (void)flags;
  *s = calloc(1, sizeof(Stream));
  (*s)->id = ++streams_made;
  return OK;
}
CUresult cuStreamDestroy_v2(Stream* s) { free(s->pending); free(s); return OK; }
CUresult cuStreamSynchronize(Stream* s) {
  note("sync s%u", sid(s));
  return getenv("FOXHUNT_MOCK_FAULT") ? ILLEGAL_ADDRESS : OK;
}

CUresult cuEventCreate(Event** ev, unsigned flags) {
  (void)flags;
  *ev = calloc(1, sizeof(Event));
  (*ev)->id = ++events_made;
  return OK;
}
CUresult cuEventDestroy_v2(Event* ev) { free(ev); return OK; }
CUresult cuEventRecord(Event* ev, Stream* s) {
  if (!(s && s->capturing)) note("record e%u s%u", ev->id, sid(s));
  ev->clock = sequence;
  ev->stream = s && s->capturing ? s : NULL;
  ev->ops = s ? s->ops : 0;
  return OK;
}
CUresult cuEventSynchronize(Event* ev) { (void)ev; return OK; }
CUresult cuEventElapsedTime(float* ms, Event* start, Event* end) { *ms = (float)(end->clock - start->clock); return OK; }
/* Waiting on an event recorded in a capture pulls the stream into it (the fork of parallel
 * branches); the capturing stream waiting on another stream's last launch joins that branch. */
CUresult cuStreamWaitEvent(Stream* s, Event* ev, unsigned flags) {
  if (flags != 0) return INVALID_VALUE;
  if (ev->stream == NULL) {
    note("wait s%u e%u", sid(s), ev->id);
    return OK;
  }
  Stream* o = ev->stream->origin;
  if (!s->capturing) {
    if (joined_count == MAX_JOINED) return INVALID_VALUE;
    joined_streams[joined_count++] = s;
    s->capturing = 1;
    s->origin = o;
    s->ops = 0;
    s->joined = 0;
  } else if (s->origin != o) {
    return INVALID_VALUE;
  }
  if (s == o && ev->ops > ev->stream->joined) ev->stream->joined = ev->ops;
  return OK;
}

CUresult cuStreamBeginCapture_v2(Stream* s, int mode) {
  if (s->capturing || mode != 1) return INVALID_VALUE;
  s->capturing = 1;
  s->count = 0;
  s->origin = s;
  s->ops = 0;
  joined_count = 0;
  return OK;
}
/* CUDA_ERROR_STREAM_CAPTURE_UNJOINED where a stream that joined the capture has launches the
 * capturing stream did not wait for. */
CUresult cuStreamEndCapture(Stream* s, Graph** g) {
  if (!s->capturing || s->origin != s) return INVALID_VALUE;
  int unjoined = 0;
  for (int k = 0; k < joined_count; k++) {
    if (joined_streams[k]->ops > joined_streams[k]->joined) unjoined = 1;
    joined_streams[k]->capturing = 0;
  }
  joined_count = 0;
  s->capturing = 0;
  if (unjoined) {
    free(s->pending);
    s->pending = NULL;
    s->count = 0;
    return 904;
  }
  *g = calloc(1, sizeof(Graph));
  (*g)->launches = s->pending;
  (*g)->count = s->count;
  s->pending = NULL;
  s->count = 0;
  return OK;
}
CUresult cuGraphInstantiateWithFlags(Graph** exec, Graph* g, unsigned long long flags) {
  (void)flags;
  *exec = calloc(1, sizeof(Graph));
  (*exec)->count = g->count;
  (*exec)->launches = malloc(g->count * sizeof(Launch) + 1);
  memcpy((*exec)->launches, g->launches, g->count * sizeof(Launch));
  return OK;
}
CUresult cuGraphLaunch(Graph* exec, Stream* s) {
  note("graph s%u", sid(s));
  for (size_t i = 0; i < exec->count; i++) perform(&exec->launches[i]);
  return OK;
}
CUresult cuGraphDestroy(Graph* g) { free(g->launches); free(g); return OK; }
CUresult cuGraphExecDestroy(Graph* g) { return cuGraphDestroy(g); }

/* ---- NVRTC ---- */

typedef struct {
  char* image;
  char* log;
} Program;

const char* nvrtcGetErrorString(int r) { return r == 6 ? "NVRTC_ERROR_COMPILATION" : "NVRTC_ERROR_MOCK"; }
int nvrtcVersion(int* major, int* minor) { *major = 13; *minor = 0; return 0; }
int nvrtcCreateProgram(Program** p, const char* src, const char* name, int nh, const char* const* headers,
                       const char* const* names) {
  (void)name;
  size_t size = strlen(src) + 1;
  for (int i = 0; i < nh; i++) size += strlen(names[i]) + strlen(headers[i]) + 16;
  *p = calloc(1, sizeof(Program));
  (*p)->image = calloc(1, size + 1);
  strcpy((*p)->image, src);
  /* Headers ride along so tests can see every one arrived under its include name. */
  for (int i = 0; i < nh; i++) {
    strcat((*p)->image, "\n//header ");
    strcat((*p)->image, names[i]);
    strcat((*p)->image, "\n");
    strcat((*p)->image, headers[i]);
  }
  return 0;
}
int nvrtcCompileProgram(Program* p, int n, const char* const* options) {
  if (strstr(p->image, "#error")) {
    p->log = strdup("kernel.cu(1): error: mock compile error");
    return 6;
  }
  size_t size = strlen(p->image) + 16;
  for (int i = 0; i < n; i++) size += strlen(options[i]) + 1;
  char* cubin = calloc(1, size);
  strcpy(cubin, "MOCKCUBIN\n");
  for (int i = 0; i < n; i++) {
    strcat(cubin, options[i]);
    strcat(cubin, "\n");
  }
  strcat(cubin, p->image);
  free(p->image);
  p->image = cubin;
  p->log = strdup("");
  return 0;
}
int nvrtcGetProgramLogSize(Program* p, size_t* n) { *n = strlen(p->log) + 1; return 0; }
int nvrtcGetProgramLog(Program* p, char* out) { strcpy(out, p->log); return 0; }
int nvrtcGetCUBINSize(Program* p, size_t* n) { *n = strlen(p->image) + 1; return 0; }
int nvrtcGetCUBIN(Program* p, char* out) { memcpy(out, p->image, strlen(p->image) + 1); return 0; }
int nvrtcDestroyProgram(Program** p) {
  free((*p)->image);
  free((*p)->log);
  free(*p);
  *p = NULL;
  return 0;
}
