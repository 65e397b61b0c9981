// per_sample: prioritized replay on the device (the twin of src/kernels/per_sample.ts, which states
// the contract).
// phase 0 (one block): Philox stratified thresholds, sum-tree descent, importance weights
//          normalised by their max; rows -> batchI[batch + j], weights -> batchF[batch * ROW_F + j].
// phase 1 (grid): gather of the sampled ring rows and actions into batchF[0 ..) and batchI[0 ..).
// phase 2 (one block): priorities from td, last duplicate wins, state[0] = running max, then the
//          written leaves' ancestors level by level (__syncthreads between levels; it orders the
//          block's global writes too), the top TOP_NODES nodes through shared memory.
// Threshold, descent and tree sums use the _rn intrinsics: no fused multiply-add, a correctly
// rounded division, the same f32 bits as the TS reference.
// Bindings (declared by the preamble generated from src/kernels/per_sample.ts):
//   ringF: const float*; ringI: const int*; tree: float*; state: unsigned int* ([0] max priority
//   bits, [1] first step); batchF: float*; batchI: int*; td: const float*
#include "grid.cuh"
#include "philox.cuh"

__device__ float per_workgroup_max(float* partial, unsigned int lid, float v) {
  partial[lid] = v;
  __syncthreads();
  for (unsigned int s = WG_X / 2u; s > 0u; s /= 2u) {
    if (lid < s) partial[lid] = fmaxf(partial[lid], partial[lid + s]);
    __syncthreads();
  }
  const float m = partial[0];
  __syncthreads();
  return m;
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) per_sample(KERNEL_ARGS) {
  __shared__ float partial[WG_X];
  // Phase 2's sampled rows in shared memory (batches up to SHARED_ROWS; larger ones read batchI):
  // each sample scans the later ones for its row, four rows a load.
  static_assert(SHARED_ROWS % 4 == 0, "phase 2 reads its rows as int4");
  __shared__ __align__(16) int shared_rows[SHARED_ROWS];
  // Phase 2's top of the tree (nodes 1 .. TOP_NODES - 1).
  __shared__ float tree_top[TOP_NODES];
  const unsigned int lid = threadIdx.x;
  const unsigned int B = u.batch;
  if (u.phase == 1u) {
    const unsigned long long t = flat_thread_id();
    if (t < (unsigned long long)B * ROW_F) {
      const unsigned int j = (unsigned int)(t / ROW_F);
      batchF[t] = ringF[(unsigned long long)batchI[B + j] * ROW_F + (t - (unsigned long long)j * ROW_F)];
    } else if (t < (unsigned long long)B * (ROW_F + 1u)) {
      const unsigned int j = (unsigned int)(t - (unsigned long long)B * ROW_F);
      batchI[j] = ringI[batchI[B + j]];
    }
    return;
  }
  if (u.phase == 2u) {
    const bool in_shared = B <= SHARED_ROWS;
    for (unsigned int j = lid; j < min(B, (unsigned int)SHARED_ROWS); j += WG_X) shared_rows[j] = batchI[B + j];
    __syncthreads();
    auto sampled_row = [&](unsigned int q) { return in_shared ? shared_rows[q] : batchI[B + q]; };
    float m = 0.0f;
    for (unsigned int j = lid; j < B; j += WG_X) {
      const float p = __fadd_rn(fabsf(td[j]), u.eps);
      m = fmaxf(m, p);
      const int row = sampled_row(j);
      bool later = false;
      if (in_shared) {
        // The warp's lanes scan the same rows (one broadcast int4 a step, no early exit), from its
        // first sample on; each lane counts the rows after its own.
        const unsigned int first = (j - (lid & 31u)) & ~3u;
        for (unsigned int q = first; q < B; q += 4u) {
          const int4 r4 = *reinterpret_cast<const int4*>(shared_rows + q);
          later |= (q > j && r4.x == row) | (q + 1u > j && q + 1u < B && r4.y == row) |
                   (q + 2u > j && q + 2u < B && r4.z == row) | (q + 3u > j && q + 3u < B && r4.w == row);
        }
      } else {
        for (unsigned int q = j + 1u; q < B; q++) {
          if (batchI[B + q] == row) {
            later = true;
            break;
          }
        }
      }
      if (!later) tree[u.leaves + (unsigned int)row] = powf(p, u.alpha);
    }
    const float most = per_workgroup_max(partial, lid, m);
    if (lid == 0u) state[0] = __float_as_uint(fmaxf(__uint_as_float(state[0]), most));
    __syncthreads();
    // The written leaves' ancestors in global memory while a level has more than TOP_NODES / 2
    // nodes; then that level into shared memory and every node above it from there (an unchanged
    // node gets the same sum again), one shared barrier a level instead of a global round trip.
    unsigned int level = 0u;
    while ((u.leaves >> level) > TOP_NODES / 2u) {
      level++;
      for (unsigned int j = lid; j < B; j += WG_X) {
        const unsigned int k = (u.leaves + (unsigned int)sampled_row(j)) >> level;
        tree[k] = __fadd_rn(tree[2u * k], tree[2u * k + 1u]);
      }
      __syncthreads();
    }
    const unsigned int c = u.leaves >> level;
    for (unsigned int i = lid; i < c; i += WG_X) tree_top[c + i] = tree[c + i];
    __syncthreads();
    for (unsigned int n = c / 2u; n >= 1u; n /= 2u) {
      for (unsigned int k = n + lid; k < 2u * n; k += WG_X) {
        const float v = __fadd_rn(tree_top[2u * k], tree_top[2u * k + 1u]);
        tree_top[k] = v;
        tree[k] = v;
      }
      __syncthreads();
    }
    return;
  }
  const unsigned int step = state[1] + u.stepSlot;
  const float total = tree[1];
  const float progress = u.betaSteps > 0u ? fminf(1.0f, __fdiv_rn((float)step, (float)u.betaSteps)) : 1.0f;
  const float beta = u.betaStart + (u.betaEnd - u.betaStart) * progress;
  const float seg = __fdiv_rn(total, (float)B);
  float mw = 0.0f;
  // Samples j and j + WG_X descend together (their loads overlap); past the batch, the second
  // walks the tree from 0 and is dropped.
  for (unsigned int j0 = lid; j0 < B; j0 += 2u * WG_X) {
    unsigned int js[2] = {j0, j0 + WG_X};
    float x[2];
    unsigned int node[2] = {1u, 1u};
    for (int h = 0; h < 2; h++) {
      const unsigned int j = js[h];
      const uint4 w4 = philox4x32_10(make_uint4(REPLAY_STREAM, step, j >> 2u, 0u), u.key0, u.key1);
      const unsigned int word = (j & 3u) == 0u ? w4.x : (j & 3u) == 1u ? w4.y : (j & 3u) == 2u ? w4.z : w4.w;
      x[h] = j < B ? __fmul_rn(__fadd_rn((float)j, philox_unit_float(word)), seg) : 0.0f;
    }
    while (node[0] < u.leaves) {
      float left[2], right[2];
      for (int h = 0; h < 2; h++) {
        left[h] = tree[2u * node[h]];
        right[h] = tree[2u * node[h] + 1u];
      }
      for (int h = 0; h < 2; h++) {
        if (x[h] < left[h] || right[h] == 0.0f) {
          node[h] = 2u * node[h];
        } else {
          x[h] = __fsub_rn(x[h], left[h]);
          node[h] = 2u * node[h] + 1u;
        }
      }
    }
    for (int h = 0; h < 2; h++) {
      const unsigned int j = js[h];
      if (j >= B) break;
      batchI[B + j] = (int)(node[h] - u.leaves);
      const float prob = __fdiv_rn(tree[node[h]], total);
      const float wj = powf((float)u.size * prob, -beta);
      batchF[(unsigned long long)B * ROW_F + j] = wj;
      mw = fmaxf(mw, wj);
    }
  }
  const float most = per_workgroup_max(partial, lid, mw);
  for (unsigned int j = lid; j < B; j += WG_X) {
    const unsigned long long at = (unsigned long long)B * ROW_F + j;
    batchF[at] = batchF[at] / most;
  }
}
