// dense_forward: y[b, o] = act(bias[o] + sum_i W[o, i] * x[b, i]) for a batch of rows, W and bias
// read from a network's flat parameter buffer (src/nets/layout.ts).
// Bindings (declared by the preamble generated from src/kernels/dense_forward.ts):
//   params: const float*: W [outDim, inDim] row-major at wOffset, bias [outDim] at bOffset
//   x: const float*: [batch, inDim]
//   y: float*, written: [batch, outDim]
//   u: Uniforms { batch, inDim, outDim, wOffset, bOffset, act } (act: 0 none, 1 relu, 2 leaky 0.01)
// Block: WG_X x WG_Y threads own a TILE_OUT x TILE_BATCH tile of y (blockIdx.x over outputs, .y
// over rows); each thread keeps a MICRO_OUT x MICRO_BATCH block in registers, strided by WG_X /
// WG_Y so that neighbouring threads write neighbouring outputs. TILE_K inputs of W and x are
// staged in shared memory per step, k-major so the inner loop reads without bank conflicts.
// Numerics: f32; each accumulator starts at the bias and adds products in increasing i, like the
// TS reference; nvcc/NVRTC fuse multiply-adds (tolerance, not bit-exactness). Only the valid k of
// the last tile are accumulated, so padding never touches a sum.
#define MICRO_OUT (TILE_OUT / WG_X)
#define MICRO_BATCH (TILE_BATCH / WG_Y)
#define THREADS (WG_X * WG_Y)

__device__ __forceinline__ float activate(float a, unsigned int act) {
  // `a < 0` (not max) so that NaN and -0 pass through exactly as in the twins.
  if (act == 1u) return a < 0.0f ? 0.0f : a;
  if (act == 2u) return a < 0.0f ? a * 0.01f : a;
  return a;
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dense_forward(KERNEL_ARGS) {
  __shared__ float w_tile[TILE_K * TILE_OUT];
  __shared__ float x_tile[TILE_K * TILE_BATCH];
  const unsigned int out0 = blockIdx.x * TILE_OUT;
  const unsigned int row0 = blockIdx.y * TILE_BATCH;
  const unsigned int tid = threadIdx.x + WG_X * threadIdx.y;
  float acc[MICRO_OUT * MICRO_BATCH];
#pragma unroll
  for (unsigned int r = 0; r < MICRO_OUT; r++) {
    const unsigned int o = out0 + threadIdx.x + r * WG_X;
    const float bias = o < u.outDim ? params[u.bOffset + o] : 0.0f;
#pragma unroll
    for (unsigned int c = 0; c < MICRO_BATCH; c++) acc[r * MICRO_BATCH + c] = bias;
  }

  for (unsigned int k0 = 0; k0 < u.inDim; k0 += TILE_K) {
    for (unsigned int e = tid; e < TILE_K * TILE_OUT; e += THREADS) {
      const unsigned int o = out0 + e / TILE_K;
      const unsigned int k = k0 + e % TILE_K;
      w_tile[(e % TILE_K) * TILE_OUT + e / TILE_K] =
          o < u.outDim && k < u.inDim ? params[u.wOffset + o * u.inDim + k] : 0.0f;
    }
    for (unsigned int e = tid; e < TILE_K * TILE_BATCH; e += THREADS) {
      const unsigned int b = row0 + e / TILE_K;
      const unsigned int k = k0 + e % TILE_K;
      x_tile[(e % TILE_K) * TILE_BATCH + e / TILE_K] = b < u.batch && k < u.inDim ? x[b * u.inDim + k] : 0.0f;
    }
    __syncthreads();
    const unsigned int valid = min((unsigned int)TILE_K, u.inDim - k0);
    for (unsigned int k = 0; k < valid; k++) {
      float xv[MICRO_BATCH];
#pragma unroll
      for (unsigned int c = 0; c < MICRO_BATCH; c++) xv[c] = x_tile[k * TILE_BATCH + threadIdx.y + c * WG_Y];
#pragma unroll
      for (unsigned int r = 0; r < MICRO_OUT; r++) {
        const float wv = w_tile[k * TILE_OUT + threadIdx.x + r * WG_X];
#pragma unroll
        for (unsigned int c = 0; c < MICRO_BATCH; c++) acc[r * MICRO_BATCH + c] += wv * xv[c];
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (unsigned int c = 0; c < MICRO_BATCH; c++) {
    const unsigned int b = row0 + threadIdx.y + c * WG_Y;
#pragma unroll
    for (unsigned int r = 0; r < MICRO_OUT; r++) {
      const unsigned int o = out0 + threadIdx.x + r * WG_X;
      if (b < u.batch && o < u.outDim) y[b * u.outDim + o] = activate(acc[r * MICRO_BATCH + c], u.act);
    }
  }
}
