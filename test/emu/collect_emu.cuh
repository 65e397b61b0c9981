// CPU emulation of the CUDA subset the collection kernels use (included by collect_port.cuh when
// FOXHUNT_EMU is defined; never part of a GPU build). It exists so that the unit tests can run the
// very kernel source on a machine without a GPU and compare it with the TS reference.
//
// Model: blocks run one after another; the threads of a block are fibers (ucontext) scheduled
// round-robin, switching only at barriers (__syncthreads, warp shuffles, mma), which is a legal
// CUDA schedule, so a kernel that is correct here is correct under any schedule that respects the
// same barriers. A barrier that can never complete (divergent __syncthreads, a thread that returned
// while others wait) aborts with a message instead of hanging. mma.sync is emulated per warp: each
// lane deposits its fragments, the warp meets, each lane computes its own D from the assembled
// 16x8x8 product (f64 accumulation, then rounded: tensor cores differ only in the last bits).
#pragma once

#include <setjmp.h>
#include <ucontext.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define COLLECT_DEVICE static inline
#define COLLECT_FN static inline
#define COLLECT_MEMBER inline

struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(16) int4 {
  int x, y, z, w;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

static inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<uint64_t>(a) * b) >> 32);
}
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static inline int __float_as_int(float f) { return static_cast<int>(__float_as_uint(f)); }
static inline float __int_as_float(int i) { return __uint_as_float(static_cast<unsigned>(i)); }
template <class T>
static inline T __ldg(const T* p) {
  return *p;
}

namespace emu {

struct Barrier {
  unsigned arrived = 0;
  unsigned generation = 0;
};

// A fiber's stack and its saved context. A thread that finishes parks its slot's fiber, and the
// thread of the same index in the next block resumes it (fiber_main loops).
struct Slot {
  ucontext_t ctx;
  jmp_buf jump;
  bool started = false;
  std::unique_ptr<char[]> stack;
};

struct Fiber {
  struct Slot* slot = nullptr;
  dim3 tid;
  bool done = false;
};

struct Block {
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  jmp_buf scheduler_jump;
  Fiber* current = nullptr;
  Barrier block_barrier;
  // bar.sync id, threads (id 1 .. 15): each barrier's participant count is fixed per use.
  std::map<unsigned, Barrier> named_barriers;
  std::vector<Barrier> warp_barriers;
  // Per-warp exchange slots for shuffles (one word per lane) and mma fragments.
  std::vector<uint32_t> shuffle;
  std::vector<uint32_t> mma_a, mma_b;
  // Per warp: the assembled A (16x8) and B (8x8) of its current mma, and that mma's barrier generation.
  std::vector<float> mma_ab;
  std::vector<unsigned> mma_ab_gen;
  std::vector<float> smem_storage;
  float* smem = nullptr;
  size_t smem_floats = 0;
  unsigned long long events = 0;
  unsigned rank = 0;
  dim3 idx;
};

// An mbarrier (PTX mbarrier object) of a cluster's shared memory: arrivals expected per phase, those
// still pending, the transaction bytes still due (negative while bytes arrive before their
// expect_tx), the phase count.
struct Mbar {
  int count = 0, pending = 0;
  long long tx = 0;
  unsigned phase = 0;
};

struct Cluster {
  std::vector<Block>* blocks = nullptr;
  Barrier barrier;
  std::map<const float*, Mbar> mbars;
};

inline Block* g_block = nullptr;
inline Cluster* g_cluster = nullptr;
inline dim3 g_block_idx, g_block_dim, g_grid_dim;
inline void (*g_entry)(void*) = nullptr;
inline void* g_entry_arg = nullptr;

// Fiber slots, made once per process and reused by every block of every launch: allocating (and
// zero-filling) 256 KiB per thread per block cost ~90 ms a block of 256 threads, and making a
// context per thread per block (getcontext and the first swapcontext each make a signal-mask system
// call) most of the time of the learner kernels' launches of many small blocks.
constexpr size_t kStackBytes = 256 * 1024;
inline std::vector<std::unique_ptr<Slot>> g_slots;
inline void fiber_main();
inline Slot* slot_for(size_t i) {
  while (g_slots.size() <= i) {
    auto slot = std::make_unique<Slot>();
    slot->stack.reset(new char[kStackBytes]);
    getcontext(&slot->ctx);
    slot->ctx.uc_stack.ss_sp = slot->stack.get();
    slot->ctx.uc_stack.ss_size = kStackBytes;
    slot->ctx.uc_link = nullptr;
    makecontext(&slot->ctx, fiber_main, 0);
    g_slots.push_back(std::move(slot));
  }
  return g_slots[i].get();
}

// Switches: a slot's first entry goes through swapcontext (it sets up the stack); every later
// switch is _setjmp/_longjmp, which saves no signal mask (swapcontext makes two system calls a
// switch, half of the emulator's time at barriers). The compile flags undefine _FORTIFY_SOURCE,
// whose checked longjmp refuses to jump between stacks.
inline void yield() {
  if (_setjmp(g_block->current->slot->jump) == 0) _longjmp(g_block->scheduler_jump, 1);
}

inline void wait(Barrier& b, unsigned participants) {
  const unsigned gen = b.generation;
  g_block->events++;
  if (++b.arrived == participants) {
    b.arrived = 0;
    b.generation++;
    return;
  }
  while (b.generation == gen) yield();
}

inline unsigned flat_tid() {
  const dim3& t = g_block->current->tid;
  return t.x + g_block_dim.x * (t.y + g_block_dim.y * t.z);
}

inline void warp_wait() {
  const unsigned threads = g_block_dim.x * g_block_dim.y * g_block_dim.z;
  const unsigned warp = flat_tid() / 32;
  const unsigned lanes = threads - warp * 32 < 32 ? threads - warp * 32 : 32;
  wait(g_block->warp_barriers[warp], lanes);
}

// A slot's fiber: runs the thread the scheduler resumed it for, then parks until the next one.
inline void fiber_main() {
  for (;;) {
    g_entry(g_entry_arg);
    g_block->current->done = true;
    g_block->events++;
    yield();
  }
}

// Runs `entry(arg)` as a kernel over grid x block with `smem_bytes` of dynamic shared memory, in
// clusters of `cluster_x` consecutive blocks along x (1: no clusters). The fibers of a cluster's
// blocks are scheduled together, so a cluster barrier can complete and a block can reach another's
// shared memory (cluster_map) while that block is alive.
inline void launch(dim3 grid, dim3 block, size_t smem_bytes, void (*entry)(void*), void* arg, unsigned cluster_x = 1) {
  const unsigned threads = block.x * block.y * block.z;
  const unsigned warps = (threads + 31) / 32;
  if (cluster_x == 0 || grid.x % cluster_x != 0) {
    std::fprintf(stderr, "emu: cluster size %u does not divide grid.x %u\n", cluster_x, grid.x);
    std::abort();
  }
  g_grid_dim = grid;
  g_block_dim = block;
  g_entry = entry;
  g_entry_arg = arg;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx0 = 0; bx0 < grid.x; bx0 += cluster_x) {
        std::vector<Block> blocks(cluster_x);
        Cluster cluster;
        cluster.blocks = &blocks;
        g_cluster = &cluster;
        for (unsigned rank = 0; rank < cluster_x; rank++) {
          Block& b = blocks[rank];
          b.rank = rank;
          b.idx = {bx0 + rank, by, bz};
          b.fibers.resize(threads);
          b.warp_barriers.resize(warps);
          b.shuffle.resize(warps * 32);
          b.mma_a.resize(warps * 32 * 4);
          b.mma_b.resize(warps * 32 * 2);
          b.mma_ab.resize(warps * 192);
          b.mma_ab_gen.assign(warps, 0);
          // Uninitialised shared memory on a GPU holds garbage: NaN here makes reads of it visible.
          b.smem_floats = (smem_bytes + 3) / 4;
          b.smem_storage.assign(b.smem_floats + 4, std::nanf(""));
          b.smem = b.smem_storage.data();
          while (reinterpret_cast<uintptr_t>(b.smem) % 16 != 0) b.smem++;
          for (unsigned i = 0; i < threads; i++) {
            Fiber& f = b.fibers[i];
            f.tid = {i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
            f.slot = slot_for(static_cast<size_t>(rank) * threads + i);
          }
        }
        for (;;) {
          bool all_done = true;
          unsigned long long before = 0, after = 0;
          for (Block& b : blocks) before += b.events;
          for (Block& b : blocks) {
            g_block = &b;
            g_block_idx = b.idx;
            for (Fiber& f : b.fibers) {
              if (f.done) continue;
              all_done = false;
              b.current = &f;
              if (_setjmp(b.scheduler_jump) == 0) {
                if (f.slot->started) _longjmp(f.slot->jump, 1);
                f.slot->started = true;
                swapcontext(&b.scheduler, &f.slot->ctx);
              }
            }
          }
          if (all_done) break;
          for (Block& b : blocks) after += b.events;
          if (after == before) {
            std::fprintf(stderr,
                         "emu: cluster of block (%u,%u,%u) deadlocked: a barrier can never complete "
                         "(divergent __syncthreads or an early return)\n",
                         bx0, by, bz);
            std::abort();
          }
        }
        g_block = nullptr;
        g_cluster = nullptr;
      }
}

// A warp shuffle: every lane deposits v, the warp meets, each lane takes lane src_of(its lane)'s.
template <class T, class Src>
inline T shfl(T v, Src src_of) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  const unsigned tid = flat_tid();
  const unsigned base = tid & ~31u;
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  g_block->shuffle[tid] = bits;
  warp_wait();
  bits = g_block->shuffle[base + (src_of(tid & 31u) & 31u)];
  warp_wait();
  std::memcpy(&v, &bits, 4);
  return v;
}
template <class T>
inline T shfl_xor(T v, int mask) {
  return shfl(v, [mask](unsigned lane) { return lane ^ static_cast<unsigned>(mask); });
}
template <class T>
inline T shfl_idx(T v, int src) {
  return shfl(v, [src](unsigned) { return static_cast<unsigned>(src); });
}

// The lane's D = A B + C (its C the d it passes in). A and B are assembled once per warp and mma:
// the first lane past the barrier builds them from every lane's fragments (the barrier's
// generation marks the mma), the others read them.
inline void mma_tf32(float d[4], const unsigned a[4], const unsigned b[2]) {
  const unsigned tid = flat_tid();
  const unsigned warp = tid / 32, base = tid & ~31u;
  for (int i = 0; i < 4; i++) g_block->mma_a[tid * 4 + i] = a[i];
  for (int i = 0; i < 2; i++) g_block->mma_b[tid * 2 + i] = b[i];
  warp_wait();
  float(*A)[8] = reinterpret_cast<float(*)[8]>(&g_block->mma_ab[warp * 192]);
  float(*B)[8] = A + 16;
  const unsigned gen = g_block->warp_barriers[warp].generation;
  if (g_block->mma_ab_gen[warp] != gen) {
    g_block->mma_ab_gen[warp] = gen;
    for (unsigned lane = 0; lane < 32; lane++) {
      const unsigned g = lane >> 2, t = lane & 3, s = base + lane;
      A[g][t] = __uint_as_float(g_block->mma_a[s * 4 + 0]);
      A[g + 8][t] = __uint_as_float(g_block->mma_a[s * 4 + 1]);
      A[g][t + 4] = __uint_as_float(g_block->mma_a[s * 4 + 2]);
      A[g + 8][t + 4] = __uint_as_float(g_block->mma_a[s * 4 + 3]);
      B[t][g] = __uint_as_float(g_block->mma_b[s * 2 + 0]);
      B[t + 4][g] = __uint_as_float(g_block->mma_b[s * 2 + 1]);
    }
  }
  warp_wait();
  const unsigned g = (tid & 31u) >> 2, t = tid & 3u;
  const unsigned rows[4] = {g, g, g + 8, g + 8};
  const unsigned cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
  for (int i = 0; i < 4; i++) {
    double acc = d[i];
    for (int k = 0; k < 8; k++) acc += static_cast<double>(A[rows[i]][k]) * B[k][cols[i]];
    d[i] = static_cast<float>(acc);
  }
}

// The cluster primitives of collect_port.cuh: a barrier over every thread of every block of the
// cluster, and the address of the same shared-memory location in the block of another rank.
inline void cluster_sync() {
  const unsigned threads = g_block_dim.x * g_block_dim.y * g_block_dim.z;
  wait(g_cluster->barrier, threads * static_cast<unsigned>(g_cluster->blocks->size()));
}

inline float* cluster_map(float* p, unsigned rank) {
  Block& own = *g_block;
  if (rank >= g_cluster->blocks->size()) {
    std::fprintf(stderr, "emu: cluster_map to rank %u of a cluster of %zu\n", rank, g_cluster->blocks->size());
    std::abort();
  }
  const ptrdiff_t at = p - own.smem;
  if (at < 0 || static_cast<size_t>(at) >= own.smem_floats) {
    std::fprintf(stderr, "emu: cluster_map of a pointer outside shared memory\n");
    std::abort();
  }
  return (*g_cluster->blocks)[rank].smem + at;
}

inline Mbar& mbar_at(const float* bar) {
  auto it = g_cluster->mbars.find(bar);
  if (it == g_cluster->mbars.end()) {
    std::fprintf(stderr, "emu: mbarrier at %p used before mbarrier.init\n", static_cast<const void*>(bar));
    std::abort();
  }
  return it->second;
}
inline void mbar_check(Mbar& m) {
  if (m.pending == 0 && m.tx == 0) {
    m.phase++;
    m.pending = m.count;
  }
}
inline void mbar_init(float* bar, unsigned count) {
  Mbar& m = g_cluster->mbars[bar];
  m = Mbar();
  m.count = m.pending = static_cast<int>(count);
}
inline void mbar_expect(float* bar, unsigned bytes) {
  Mbar& m = mbar_at(bar);
  if (m.pending <= 0) {
    std::fprintf(stderr, "emu: mbarrier arrive with no arrival pending\n");
    std::abort();
  }
  g_block->events++;
  m.tx += bytes;
  m.pending--;
  mbar_check(m);
}
// try_wait.parity in a loop: returns once the phase of that parity has completed.
inline void mbar_wait(float* bar, unsigned parity) {
  while ((mbar_at(bar).phase & 1u) == (parity & 1u)) yield();
}
// st.async: the bytes land in the peer's shared memory and complete that many transaction bytes of the
// peer's mbarrier (same offsets in the peer's shared memory).
inline void st_async(float* p, unsigned rank, const float* v, int n, float* bar) {
  float* dst = cluster_map(p, rank);
  if (reinterpret_cast<uintptr_t>(dst) % (4u * static_cast<unsigned>(n)) != 0) {
    std::fprintf(stderr, "emu: misaligned %d-byte st.async at %p\n", 4 * n, static_cast<const void*>(dst));
    std::abort();
  }
  std::memcpy(dst, v, 4u * static_cast<unsigned>(n));
  g_block->events++;
  Mbar& m = mbar_at(cluster_map(bar, rank));
  m.tx -= 4 * n;
  mbar_check(m);
}

}  // namespace emu

#define threadIdx (emu::g_block->current->tid)
#define blockIdx (emu::g_block_idx)
#define blockDim (emu::g_block_dim)
#define gridDim (emu::g_grid_dim)
#define COLLECT_SMEM(name, floats)                                     \
  float* name = emu::g_block->smem;                                    \
  if (static_cast<size_t>(floats) > emu::g_block->smem_floats) {       \
    std::fprintf(stderr, "emu: kernel needs %d floats of shared memory\n", (int)(floats)); \
    std::abort();                                                      \
  }

static inline void __syncthreads() {
  emu::wait(emu::g_block->block_barrier, emu::g_block_dim.x * emu::g_block_dim.y * emu::g_block_dim.z);
}
static inline void __syncwarp(unsigned = 0xffffffffu) { emu::warp_wait(); }
template <class T>
static inline T __shfl_xor_sync(unsigned, T v, int mask) {
  return emu::shfl_xor(v, mask);
}
template <class T>
static inline T __shfl_sync(unsigned, T v, int src) {
  return emu::shfl_idx(v, src);
}

static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }

COLLECT_DEVICE float fadd(float a, float b) { return a + b; }
COLLECT_DEVICE float fsub(float a, float b) { return a - b; }
COLLECT_DEVICE float fmul(float a, float b) { return a * b; }
COLLECT_DEVICE float fdiv(float a, float b) { return a / b; }
COLLECT_DEVICE void block_sync() { __syncthreads(); }
COLLECT_DEVICE void named_sync(unsigned id, unsigned threads) {
  if (id == 0 || id > 15 || threads % 32 != 0 || threads == 0) {
    std::fprintf(stderr, "emu: named barrier %u over %u threads (ids 1..15, whole warps)\n", id, threads);
    std::abort();
  }
  emu::wait(emu::g_block->named_barriers[id], threads);
}
COLLECT_DEVICE float warp_bcast(float v, int src) { return emu::shfl_idx(v, src); }
COLLECT_DEVICE float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v = v + emu::shfl_xor(v, o);
  return v;
}
// A misaligned 16-byte load faults on the GPU: fail loudly here instead.
COLLECT_DEVICE float4 load16(const float* p, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "emu: misaligned 16-byte %s load at %p\n", what, static_cast<const void*>(p));
    std::abort();
  }
  float4 v;
  std::memcpy(&v, p, 16);
  return v;
}
COLLECT_DEVICE float4 ldg4(const float* p) { return load16(p, "global"); }
COLLECT_DEVICE float4 lds4(const float* p) { return load16(p, "shared"); }
COLLECT_DEVICE float ldg1(const float* p) { return *p; }
COLLECT_DEVICE void sts4(float* p, float4 v) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "emu: misaligned 16-byte shared store at %p\n", static_cast<const void*>(p));
    std::abort();
  }
  std::memcpy(p, &v, 16);
}
COLLECT_DEVICE void prefetch_l1(const void*) {}
COLLECT_DEVICE float2 ldg2(const float* p) {
  if (reinterpret_cast<uintptr_t>(p) % 8 != 0) {
    std::fprintf(stderr, "emu: misaligned 8-byte global load at %p\n", static_cast<const void*>(p));
    std::abort();
  }
  float2 v;
  std::memcpy(&v, p, 8);
  return v;
}
COLLECT_DEVICE unsigned to_tf32(float x) {
  const unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;
  return (u + 0x1000u) & ~0x1fffu;
}
COLLECT_DEVICE void mma_tf32_16x8x8(float d[4], const unsigned a[4], const unsigned b[2]) {
  emu::mma_tf32(d, a, b);
}
COLLECT_DEVICE int lane_id() { return static_cast<int>(emu::flat_tid() & 31u); }
COLLECT_DEVICE unsigned cluster_rank() { return emu::g_block->rank; }
COLLECT_DEVICE float* cluster_map(float* p, unsigned rank) { return emu::cluster_map(p, rank); }
COLLECT_DEVICE void cluster_sync() { emu::cluster_sync(); }
COLLECT_DEVICE void mbar_init(float* bar, unsigned count) { emu::mbar_init(bar, count); }
COLLECT_DEVICE void mbar_init_fence() {}
COLLECT_DEVICE void mbar_expect(float* bar, unsigned bytes) { emu::mbar_expect(bar, bytes); }
COLLECT_DEVICE void mbar_wait(float* bar, unsigned parity) { emu::mbar_wait(bar, parity); }
COLLECT_DEVICE void st_async4(float* p, unsigned rank, float4 v, float* bar) {
  const float w[4] = {v.x, v.y, v.z, v.w};
  emu::st_async(p, rank, w, 4, bar);
}
COLLECT_DEVICE void st_async1(float* p, unsigned rank, float v, float* bar) { emu::st_async(p, rank, &v, 1, bar); }
