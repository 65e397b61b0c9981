// collect_cluster_plan.cuh: a piece of collect_dqn_cluster.cu (included by it, after its constants C
// CTAs per cluster, E episodes per cluster, T threads per CTA, EPC episodes a CTA owns, TF32): how a
// CTA's slices of the layers sit in shared memory (exact: f32 rows; TF32: rounded, padded to n8
// column tiles, the split-K warp plan of each layer) and the CTA's whole shared-memory plan, which
// the descriptor (src/kernels/collect_dqn.ts cudaClusterSharedBytes) computes the same way.
#pragma once

// Warp task plan of a tensor-core layer with NT column tiles and K16 k16 steps on `warps` warps: WN * 16 +
// KSPLIT of the cheapest (WN, KSPLIT) with every task on its own warp, cost = the per-lane chain
// (WN * K16 / KSPLIT weight loads and k steps) + 2 per slice (the partial sums the reduction adds).
// 0: no plan fits (fewer than NT / 4 warps).
__host__ __device__ constexpr int splitk_plan(int nt, int k16, int warps) {
  int best = 0, cost = 1 << 30;
  for (int wn = 1; wn <= 4; wn *= 2) {
    const int ng = (nt + wn - 1) / wn;
    for (int ks = 1; ks <= k16 && ks <= 8; ks++) {
      if (k16 % ks != 0 || ng * ks > warps) continue;
      const int c = wn * (k16 / ks) + 2 * ks;
      if (c < cost) {
        cost = c;
        best = wn * 16 + ks;
      }
    }
  }
  return best;
}

// A layer's slice in shared memory: SL rows of LDW floats (16-byte aligned rows; a stride that is not
// a multiple of 32 floats so lanes reading different rows hit different banks), then SL biases.
__host__ __device__ constexpr int slice_rows(int out) { return (out + C - 1) / C; }
__host__ __device__ constexpr int slice_ldw(int in) { return align4(in) % 32 == 0 ? align4(in) + 4 : align4(in); }
__host__ __device__ constexpr int slice_floats(int in, int out) {
  return slice_rows(out) * slice_ldw(in) + align4(slice_rows(out));
}
// TF32 build: the slice's rows padded with zero rows to whole n8 column tiles (NTP), each K = round16(In)
// TF32-rounded weights (zero past In), no padding: where K is a multiple of 32 floats, odd rows hold
// their float4s XOR 4 (the 8 lanes of one float4 load phase read rows g, g + 1 at 4 consecutive
// float4s: 8 distinct bank quads); then NTP biases.
__host__ __device__ constexpr int mma_rows(int out) { return (slice_rows(out) + 7) / 8 * 8; }
__host__ __device__ constexpr int mma_k(int in) { return (in + 15) / 16 * 16; }
__host__ __device__ constexpr int mma_floats(int in, int out) { return mma_rows(out) * mma_k(in) + mma_rows(out); }
// Float offset of weight (row r, input k) in a TF32 slice of K inputs per row.
__host__ __device__ constexpr int mma_at(int K, int r, int k) {
  return r * K + ((((k >> 2) ^ (K % 32 == 0 ? 4 * (r & 1) : 0)) << 2) | (k & 3));
}
__host__ __device__ constexpr int wslice_floats(int in, int out) { return TF32 ? mma_floats(in, out) : slice_floats(in, out); }

// Row groups of a layer task: the most (a power of two dividing E) that keep every (output, group)
// task on its own thread; a thread accumulates E / groups rows of one output.
__host__ __device__ constexpr int slice_groups(int out) {
  int g = 1;
  while (E % (2 * g) == 0 && 2 * g * slice_rows(out) <= T) g *= 2;
  return g;
}

// The fused layers: hidden = value.0 (outputs 0..127) ++ advantage.0 (128..255), both on the trunk
// row; exact build: out = value.1 (output 0, reading hidden 0..127) ++ advantage.1 (1..45, reading
// 128..255), sliced like the others. TF32 build: the sliced output layer is advantage.1 alone (45
// outputs over hidden 128..255, pushed into columns 1..45), and every CTA takes value.1 (128 -> 1)
// for every row itself (value_rows), so no slice holds a half of zero weights.
constexpr int OUT_Q = 1 + NUM_ACTIONS;
constexpr int OUT_IN = 128;
constexpr int OUT_L = TF32 ? NUM_ACTIONS : OUT_Q;

#if TF32
static_assert(E <= 16, "collect_dqn_cluster TF32: at most 16 episodes per cluster (one m16 tile of rows)");
// A layer on tensor cores: this CTA's NTP slice rows over K inputs, split-K plan for its warps.
template <int In, int Out>
struct ClusterMma {
  static constexpr int K = mma_k(In), NTP = mma_rows(Out), SL = slice_rows(Out);
  static constexpr int NT = NTP / 8, K16 = K / 16, WARPS = T / 32;
  static constexpr int PLAN = splitk_plan(NT, K16, WARPS);
  static_assert(PLAN != 0, "collect_dqn_cluster TF32: too few warps for a slice's column tiles (more threads)");
  static constexpr int WN = PLAN / 16, KSPLIT = PLAN % 16, NG = (NT + WN - 1) / WN, KS = K16 / KSPLIT;
  static constexpr int PART = KSPLIT * E * NTP;
};
__host__ __device__ constexpr int max2(int a, int b) { return a > b ? a : b; }
constexpr int PART_MAX =
    max2(max2(ClusterMma<STATE_DIM, 256>::PART, ClusterMma<256, 256>::PART), ClusterMma<OUT_IN, OUT_L>::PART);
#else
constexpr int PART_MAX = 0;
#endif

// Shared-memory plan (floats). Weight slices of the online dueling net (trunk 0, trunk 1, hidden, out).
constexpr int NW_S0 = 0;
constexpr int NW_S1 = NW_S0 + wslice_floats(STATE_DIM, 256);
constexpr int NW_H = NW_S1 + wslice_floats(256, 256);
constexpr int NW_O = NW_H + wslice_floats(256, 256);
constexpr int NW_SIZE = NW_O + wslice_floats(OUT_IN, OUT_L);
constexpr int SM_WQ = 0;
constexpr int SM_END_W = SM_WQ + NW_SIZE;
// Activations of all E episodes, complete in every CTA: states, two ping-pong trunk buffers, value
// ++ advantages; then the next states (each owner's rows only), curiosity input, hidden and output
// (local).
constexpr int LD_VQ = LD_Q;
constexpr int LD_CH = tile_stride(CNet::HIDDEN);
constexpr int LD_CO = tile_stride(CNet::OUT);
static_assert(OUT_Q <= LD_VQ, "value ++ advantages fit a Q row");
// Online net: states X0 -> A -> B -> A -> VA. XT: the next state s' of each step (row i of cluster
// episode i, written by its owner: the step's output and the curiosity bonus's target).
constexpr int SM_X0 = SM_END_W;
constexpr int SM_A = align4(SM_X0 + E * LD_STATE);
constexpr int SM_B = align4(SM_A + E * LD_TRUNK);
constexpr int SM_VA = align4(SM_B + E * LD_TRUNK);
constexpr int SM_XT = align4(SM_VA + E * LD_VQ);
// The curiosity model's input, hidden and output rows of the CTA's owned episodes (slot s: episode
// s * C + rank).
constexpr int SM_CI = align4(SM_XT + E * LD_STATE);
constexpr int SM_CH = align4(SM_CI + EPC * LD_CURIOSITY);
constexpr int SM_CO = align4(SM_CH + EPC * LD_CH);
// Each episode's action (an integer in a float slot; local).
constexpr int SM_ACTION = align4(SM_CO + EPC * LD_CO);
// TF32 build: the partial sums of a layer phase.
constexpr int SM_PART = align4(SM_ACTION + E);
// The exchanges' transaction barriers (8 bytes each): the states, then dueling layer k.
constexpr int MB_STATES = 0, MB_LAYER0 = 1, MB_COUNT = 5;
constexpr int SM_MBAR = align4(SM_PART + PART_MAX);
// The curiosity model's weights, where they fit beside the rest (CUR_SMEM): layer 0's rows of IN
// floats, its biases, layer 1's rows, its biases; each row stride odd (a warp reading one weight of 32
// consecutive rows hits 32 banks).
__host__ __device__ constexpr int odd_stride(int in) { return in % 2 ? in : in + 1; }
constexpr int CW_W0 = 0, CW_B0 = CW_W0 + CNet::HIDDEN * odd_stride(CNet::IN), CW_W1 = CW_B0 + CNet::HIDDEN,
              CW_B1 = CW_W1 + CNet::OUT * odd_stride(CNet::HIDDEN), CW_FLOATS = CW_B1 + CNet::OUT;
constexpr int SM_CW = align4(SM_MBAR + 2 * MB_COUNT);
constexpr int EP_WORDS = (int)(sizeof(Episode) / 4);
constexpr bool CUR_SMEM = align4(align4(SM_CW + CW_FLOATS) + EPC * EP_WORDS) * 4 <= 227 * 1024;
constexpr int SM_EPISODES = align4(SM_CW + (CUR_SMEM ? CW_FLOATS : 0));
constexpr int SM_FLOATS = align4(SM_EPISODES + EPC * EP_WORDS);
static_assert(sizeof(Episode) % 4 == 0, "Episode is 4-byte fields");
// The descriptor (src/kernels/collect_dqn.ts cudaClusterSharedBytes) sizes the launch from the same plan.
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "collect_dqn_cluster: DYN_SMEM_BYTES differs from the shared-memory plan");
#ifndef FOXHUNT_EMU
static_assert(DYN_SMEM_BYTES <= 227 * 1024,
              "collect_dqn_cluster: the plan exceeds 227 KiB of shared memory (more CTAs per cluster or fewer episodes)");
#endif
