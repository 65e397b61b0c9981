// The few device primitives the collection kernels use, in one place, so the same kernel source
// compiles three ways: nvcc / NVRTC for the GPU, and plain g++ with FOXHUNT_EMU defined, where
// cuda/collect_emu.cuh runs every thread of a block as a fiber on the CPU (the unit tests run
// the kernels that way against the TS reference, since CI has no GPU).
//
// Exact f32 arithmetic: the TS reference rounds every multiply and add to f32 separately, and
// NVRTC contracts a*b+c into an fma by default (--fmad=true), so the kernels spell each rounding
// point with fadd/fmul/... below; these compile to single add/mul instructions that are never
// fused. fdiv is IEEE division (div.rn), which the reference's f64 divide-then-round equals.
// No standard headers: NVRTC has none.
#pragma once

#ifdef FOXHUNT_EMU
#include "collect_emu.cuh"
#else
#define COLLECT_DEVICE __device__ __forceinline__
#define COLLECT_FN __device__
#define COLLECT_MEMBER __device__ __forceinline__

COLLECT_DEVICE float fadd(float a, float b) { return __fadd_rn(a, b); }
COLLECT_DEVICE float fsub(float a, float b) { return __fsub_rn(a, b); }
COLLECT_DEVICE float fmul(float a, float b) { return __fmul_rn(a, b); }
COLLECT_DEVICE float fdiv(float a, float b) { return __fdiv_rn(a, b); }

// The block's shared memory as one float array, 16-byte aligned for float4 accesses. Static (at
// most 48 KiB) unless the kernel defines COLLECT_DYN_SMEM: then it is the launch's dynamic shared
// memory (KernelSpec.sharedBytes, up to 227 KiB on sm_90), and the kernel checks its plan fits.
#ifdef COLLECT_DYN_SMEM
#define COLLECT_SMEM(name, floats) extern __shared__ __align__(16) float name[]
#else
#define COLLECT_SMEM(name, floats) __shared__ __align__(16) float name[floats]
#endif

COLLECT_DEVICE void block_sync() { __syncthreads(); }
// A barrier over `threads` threads (whole warps) of the block, hardware barrier `id` (1 .. 15; 0 is
// __syncthreads'): lets a group of warps meet while the others run something else.
COLLECT_DEVICE void named_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Lane src's v (every lane of the warp takes part).
COLLECT_DEVICE float warp_bcast(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
COLLECT_DEVICE float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Read-only global load through the non-coherent (texture) path; weights never change in a launch.
COLLECT_DEVICE float4 ldg4(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
COLLECT_DEVICE float ldg1(const float* p) { return __ldg(p); }
// An 8-byte read-only global load (p must be 8-byte aligned; the emulator checks).
COLLECT_DEVICE float2 ldg2(const float* p) { return __ldg(reinterpret_cast<const float2*>(p)); }
// A 16-byte shared-memory load (p must be 16-byte aligned; the emulator checks).
COLLECT_DEVICE float4 lds4(const float* p) { return *reinterpret_cast<const float4*>(p); }
// A 16-byte store to shared memory, this CTA's or a peer's (p 16-byte aligned; the emulator checks).
COLLECT_DEVICE void sts4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }
// Asks for the line holding p in L1 ahead of its load (a hint: no value, no fault).
COLLECT_DEVICE void prefetch_l1(const void* p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }

// f32 -> tf32 with round-to-nearest (ties away), as the tensor-core path feeds its operands.
COLLECT_DEVICE unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// D = A * B + C for one warp: m16n8k8, A row-major tf32, B column-major tf32, f32 accumulate.
// Fragment ownership (lane = 4 * g + t): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4);
// b0 (k = t, n = g), b1 (k = t + 4, n = g); c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1).
COLLECT_DEVICE void mma_tf32_16x8x8(float d[4], const unsigned a[4], const unsigned b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

COLLECT_DEVICE int lane_id() { return threadIdx.x & 31; }

// Thread-block clusters (sm_90, PTX ISA 7.8), for kernels that define COLLECT_CLUSTER: the CTA's rank
// in its cluster, a generic pointer to the same shared-memory location in the CTA of rank `rank`
// (distributed shared memory: plain loads and stores through it), and a barrier over every thread
// of the cluster whose release / acquire orders shared-memory writes before it with reads after it.
#ifdef COLLECT_CLUSTER
COLLECT_DEVICE unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
COLLECT_DEVICE float* cluster_map(float* p, unsigned rank) {
  float* q;
  asm volatile("mapa.u64 %0, %1, %2;" : "=l"(q) : "l"(p), "r"(rank));
  return q;
}
COLLECT_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Transaction barriers (mbarrier objects, 8 bytes of shared memory each) and asynchronous stores into
// a peer CTA's shared memory that complete bytes on the peer's mbarrier at the same offset: a CTA
// waits for exactly the data it receives instead of for a barrier over the whole cluster (whose
// release is a GPU-scope memory barrier). `bar` and `p` are this CTA's addresses; the peer's are
// its rank's mapping of them.
COLLECT_DEVICE unsigned smem_addr(const void* p) {
  unsigned r;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(r) : "l"(p));
  return r;
}
COLLECT_DEVICE unsigned cluster_addr(const void* p, unsigned rank) {
  unsigned r;
  asm("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
  return r;
}
COLLECT_DEVICE void mbar_init(float* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialised mbarriers visible to the cluster's asynchronous stores (then a cluster barrier).
COLLECT_DEVICE void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// One arrival, and `bytes` more transaction bytes due in the current phase.
COLLECT_DEVICE void mbar_expect(float* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
// Returns once the phase of parity `parity` has completed (its stores are then visible).
COLLECT_DEVICE void mbar_wait(float* bar, unsigned parity) {
  const unsigned a = smem_addr(bar);
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(a), "r"(parity)
                 : "memory");
}
COLLECT_DEVICE void st_async4(float* p, unsigned rank, float4 v, float* bar) {
  asm volatile("st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];" ::"r"(
                   cluster_addr(p, rank)),
               "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)), "r"(__float_as_uint(v.w)),
               "r"(cluster_addr(bar, rank))
               : "memory");
}
COLLECT_DEVICE void st_async1(float* p, unsigned rank, float v, float* bar) {
  asm volatile("st.async.weak.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];" ::"r"(
                   cluster_addr(p, rank)),
               "r"(__float_as_uint(v)), "r"(cluster_addr(bar, rank))
               : "memory");
}
#endif
#endif
