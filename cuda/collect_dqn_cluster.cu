// collect_dqn_cluster: the DQN collection kernel (src/collect/dqn.ts, plain dueling head) for small N
// on sm_90 thread-block clusters (descriptor: src/kernels/collect_dqn.ts, variant `cluster`). Same
// bindings, uniforms, outputs and episode state as collect_dqn.cu; only the work split differs.
//
// Why: at N = 128 the tiled kernel runs 128 blocks of one episode and each block streams all 1.2 MB of
// online + target weights from L2 every step. Here a cluster of CLUSTER CTAs owns TILE_E episodes and
// every CTA keeps a 1/CLUSTER slice of every layer's OUTPUT neurons (weights + bias of the online and
// target nets) in its shared memory, loaded once per launch: no weight traffic per step. The
// curiosity model (17 KB) runs in each CTA on its own episodes only, its weights in shared memory
// where the plan leaves room (CUR_SMEM), else read through the cache.
//
// Per layer: CTA c computes outputs [c * SL, c * SL + SL) (SL = ceil(Out / CLUSTER)) for all TILE_E
// episodes from the full input rows in its own shared memory, pushes them into every CTA's output
// buffer through distributed shared memory, then waits until every CTA's columns are in (the
// exchange, CLUSTER_MBAR below). Layers ping-pong between two buffers: a CTA's pushes of a layer
// follow its reads of that layer's input, and no peer computes the next layer before it has them,
// so a buffer is rewritten only after its last read. The two dueling streams' hidden layers run as
// one 256-output layer; exact build: their output layers as one 46-output layer (column 0 value,
// 1..45 advantages, each reading its own half of the hidden row); TF32 build: the 45 advantages are
// the sliced layer and every CTA takes the value column (128 -> 1) for every row itself. Every CTA
// has every episode's value and advantages, so each computes all Q values and actions itself (one
// warp per episode, Q in registers; same arithmetic, same bits) instead of waiting for another
// exchange.
//
// Pipeline: the target net on step t's next states and the online net on step t + 1's states
// need only the simulator step, so they run in the same phases: right after its step an owner
// restarts a finished episode (restart_if_ended reads only the step's outcome) and broadcasts both
// the next state s' (target input) and the state the next decision sees (online input; s' unless
// the episode restarted). Exchanges per step: 1 (states) + 4 (both nets) = 5; one online forward
// before the loop (5 exchanges), and the last step's online forward is spare.
//
// Episodes: episode i of the cluster lives in CTA i % CLUSTER (slot i / CLUSTER), with its simulator
// state in that CTA's shared memory: the serial simulator work is spread over the cluster's SMs
// instead of queueing on one. The simulator phase of a step runs three things at once on different
// warps (HELPERS, with enough warps): each owned slot's warp steps its episode (lane 0) and builds its
// state rows (all lanes), other warps run the curiosity model on the CTA's rows, and the last warps
// take the previous step's TD errors; the owner adds the curiosity bonus and writes the step's
// outputs inside the next layer phase, while the peers' outputs travel. The whole CTA copies the
// state rows to the peers and the outputs.
//
// How many episodes per cluster: the descriptor's default fills ~128 CTAs, and the collector raises
// it (cuOccupancyMaxActiveClusters) until the clusters fit on the GPU at once: an H200 holds 15
// 8-CTA clusters, so N = 128 runs as 15 clusters of 9 in one wave instead of 16 of 8 in two.
//
// Bindings, uniforms and outputs: as collect_dqn.cu. Launch: 1-D grid of CLUSTER * ceil(N /
// TILE_E) blocks of WG_X threads in clusters of (CLUSTER, 1, 1), DYN_SMEM_BYTES of dynamic shared
// memory (the plan below; the descriptor computes the same number).
//
// Exchange (constant CLUSTER_PULL): 0 (default) a CTA pushes each output it computes into every
// CTA's buffer (16-byte remote stores where its slice is whole quads, else 4-byte ones); 1 it writes
// its outputs locally and, after the phase's cluster barrier, every CTA pulls the other CTAs'
// columns with 16-byte remote loads (a local barrier more). Same values either way.
//
// Numerics (constant TF32): 0 (default) f32 exact: acc = bias, then acc = f32(acc + f32(w * x)) for i
// ascending, exactly the exact path of mlp_tile.cuh, so every output is bit-identical to the TS
// reference. 1: tensor cores (mma.sync m16n8k8, TF32 operands, f32 sums; at most 16 episodes per
// cluster, one m16 tile): each CTA keeps its slices TF32-rounded, zero-padded to 8-row column tiles
// and 16-input steps; a layer's column tiles and K steps are split over the CTA's warps as the split-K
// engine does (mlp_splitk.cuh splitk_plan), the partial sums meet in shared memory (SM_PART) and are
// added in slice order with the bias before the push. ~1e-3 relative error per layer, as the tiled
// TF32 build.
//
// SKIP_NETS 1 (bench only, TF32 build): every layer phase keeps its barriers but computes and pushes
// nothing, so a launch times the simulator, the states, the outputs and the cluster barriers alone;
// TIMING 1 (bench only) prints cycles per step segment.
#ifndef TF32
#define TF32 0
#endif
#ifndef SKIP_NETS
#define SKIP_NETS 0
#endif
// Further bench-only knobs on top of SKIP_NETS, to split what the rest of a step costs: PHASE_BLOCK 1
// ends the layer phases with a block barrier instead of the cluster barrier (nothing is exchanged
// there; with CLUSTER_MBAR 0), SKIP_ENV 1 leaves out the simulator step and the restart, SKIP_SHARE 1
// the copies of the state rows to the peers and the outputs.
#ifndef PHASE_BLOCK
#define PHASE_BLOCK 0
#endif
#ifndef SKIP_ENV
#define SKIP_ENV 0
#endif
#ifndef SKIP_SHARE
#define SKIP_SHARE 0
#endif
// TIMING 1 (bench only, GPU builds): some threads of the first cluster's CTAs sum clock64() cycles per
// step segment (TSEG below) and print the per-step means with printf at the end of the launch.
#ifndef TIMING
#define TIMING 0
#endif
static_assert(SKIP_NETS || (!PHASE_BLOCK && !SKIP_ENV && !SKIP_SHARE),
              "PHASE_BLOCK, SKIP_ENV and SKIP_SHARE time the SKIP_NETS build only");
#define COLLECT_TF32 TF32
#define COLLECT_THREADS WG_X
#define COLLECT_DYN_SMEM
#define COLLECT_CLUSTER
#ifndef CLUSTER_PULL
#define CLUSTER_PULL 0
#endif
// Exchange completion (constant CLUSTER_MBAR): 1 (the default in push mode) the pushes are
// asynchronous stores (st.async) that count their bytes on the receiver's transaction barrier
// (mbarrier), one per exchange (the states, each dueling layer), and each CTA waits only until all
// the bytes it receives have landed: no GPU-scope memory barrier, no wait for the slowest CTA's
// unrelated work (H200, N = 128, TF32: 5.03M env-steps/s against 4.43M); 0 every exchange ends with
// a barrier over the whole cluster (the pull mode's only way).
#ifndef CLUSTER_MBAR
#define CLUSTER_MBAR (!CLUSTER_PULL)
#endif
static_assert(!(CLUSTER_MBAR && CLUSTER_PULL), "CLUSTER_MBAR pushes: it excludes CLUSTER_PULL");
static_assert(!(CLUSTER_MBAR && PHASE_BLOCK), "PHASE_BLOCK times the cluster-barrier exchange");

#include "collect_io.cuh"
#include "collect_dqn_step.cuh"
#include "collect_nets.cuh"
#include "mlp_splitk.cuh"
#include "grid.cuh"

static_assert(HEAD == HEAD_PLAIN, "collect_dqn_cluster implements the plain dueling head");
static_assert(WG_X % 32 == 0 && WG_Y == 1 && WG_Z == 1, "collect_dqn_cluster runs on 1-D blocks of whole warps");

using QNet = Dueling<HEAD_PLAIN, NET_Q_BASE>;
using TNet = Dueling<HEAD_PLAIN, NET_T_BASE>;
using CNet = Curiosity<NET_C_BASE>;
static_assert(QNet::S0_W == NET_Q_0_W && QNet::SIZE == NET_Q_SIZE && TNet::SIZE == NET_T_SIZE,
              "collect_nets.cuh dueling layout differs from src/nets/layout.ts");
static_assert(CNet::L1_B == NET_C_1_B && CNet::SIZE == NET_C_SIZE,
              "collect_nets.cuh curiosity layout differs from src/nets/layout.ts");

constexpr int C = CLUSTER;
constexpr int E = TILE_E;
constexpr int T = WG_X;
// Episodes one CTA owns (one thread each).
constexpr int EPC = (E + C - 1) / C;
static_assert(EPC <= T, "collect_dqn_cluster: one thread per owned episode");


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

// Shared-memory plan (floats). Weight slices: one dueling net (trunk 0, trunk 1, hidden, out).
constexpr int NW_S0 = 0;
constexpr int NW_S1 = NW_S0 + wslice_floats(STATE_DIM, 256);
constexpr int NW_H = NW_S1 + wslice_floats(256, 256);
constexpr int NW_O = NW_H + wslice_floats(256, 256);
constexpr int NW_SIZE = NW_O + wslice_floats(OUT_IN, OUT_L);
constexpr int SM_WQ = 0;
constexpr int SM_WT = SM_WQ + NW_SIZE;
constexpr int SM_END_W = SM_WT + NW_SIZE;
// Activations of all E episodes, complete in every CTA: states, two ping-pong trunk buffers, value
// ++ advantages, Q (local), curiosity input (local), hidden and output.
constexpr int LD_VQ = LD_Q;
constexpr int LD_CH = tile_stride(CNet::HIDDEN);
constexpr int LD_CO = tile_stride(CNet::OUT);
static_assert(OUT_Q <= LD_VQ, "value ++ advantages fit a Q row");
// Online net: states X0 -> A -> B -> A -> VA; target net: next states XT -> AT -> BT -> AT -> VT.
constexpr int SM_X0 = SM_END_W;
constexpr int SM_A = align4(SM_X0 + E * LD_STATE);
constexpr int SM_B = align4(SM_A + E * LD_TRUNK);
constexpr int SM_VA = align4(SM_B + E * LD_TRUNK);
constexpr int SM_XT = align4(SM_VA + E * LD_VQ);
constexpr int SM_AT = align4(SM_XT + E * LD_STATE);
constexpr int SM_BT = align4(SM_AT + E * LD_TRUNK);
constexpr int SM_VT = align4(SM_BT + E * LD_TRUNK);
// Each episode's Q(s, a) of its decision (local).
constexpr int SM_QSEL = align4(SM_VT + E * LD_VQ);
// The curiosity model's input, hidden and output rows of the CTA's owned episodes (slot s: episode
// s * C + rank).
constexpr int SM_CI = align4(SM_QSEL + E);
constexpr int SM_CH = align4(SM_CI + EPC * LD_CURIOSITY);
constexpr int SM_CO = align4(SM_CH + EPC * LD_CH);
// Each episode's action (an integer in a float slot; local).
constexpr int SM_ACTION = align4(SM_CO + EPC * LD_CO);
// What the TD error of an owned episode's step needs from its owner (slot s: total reward, done, the
// chosen action's Q; written in the step's layer phases, read in the next step's simulator phase).
constexpr int SM_TDIN = align4(SM_ACTION + E);
// TF32 build: the partial sums of the online and the target layer of a phase.
constexpr int SM_PART = align4(SM_TDIN + 4 * EPC);
// The exchanges' transaction barriers (CLUSTER_MBAR; 8 bytes each): the states, then dueling layer k.
constexpr int MB_STATES = 0, MB_LAYER0 = 1, MB_COUNT = 5;
constexpr int SM_MBAR = align4(SM_PART + 2 * PART_MAX);
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

// Copies this CTA's slice of a layer: rows j < SPLIT from W1/B1 (IN1 inputs from column K1), the rest
// from W2/B2 at j - SPLIT (IN2 inputs from column K2); exact: In inputs per row from column 0. Each
// thread keeps 32 loads in flight before it stores them (the copy runs once per launch).
template <int In, int Out, int SPLIT, int W1, int B1, int W2, int B2, int IN1 = In, int K1 = 0, int IN2 = In,
          int K2 = 0>
COLLECT_FN void load_slice(const float* __restrict__ nets, float* ws, unsigned rank) {
  constexpr int SL = slice_rows(Out);
#if TF32
  constexpr int ROWS = mma_rows(Out), K = mma_k(In);
#else
  constexpr int ROWS = SL, K = In;
#endif
  constexpr int B = 32;
  const int j0 = (int)rank * SL;
  for (int t0 = threadIdx.x; t0 < ROWS * K; t0 += B * T) {
    float v[B];
#pragma unroll
    for (int b = 0; b < B; b++) {
      const int task = t0 + b * T, jj = task / K, k = task % K, j = j0 + jj;
      v[b] = 0.0f;
      if (task < ROWS * K && jj < SL && j < Out) {
        const bool first = j < SPLIT;
        const int lo = first ? K1 : K2, len = first ? IN1 : IN2;
        if (k >= lo && k < lo + len) v[b] = ldg1(nets + (first ? W1 + j * IN1 : W2 + (j - SPLIT) * IN2) + k - lo);
      }
    }
#pragma unroll
    for (int b = 0; b < B; b++) {
      const int task = t0 + b * T;
      if (task >= ROWS * K) break;
#if TF32
      ws[mma_at(K, task / K, task % K)] = tf32_round(v[b]);
#else
      ws[task / K * slice_ldw(In) + task % K] = v[b];
#endif
    }
  }
#if TF32
  float* bias = ws + ROWS * K;
#else
  float* bias = ws + SL * slice_ldw(In);
#endif
  for (int jj = threadIdx.x; jj < ROWS; jj += T) {
    const int j = j0 + jj;
    bias[jj] = jj < SL && j < Out ? ldg1(nets + (j < SPLIT ? B1 + j : B2 + j - SPLIT)) : 0.0f;
  }
}

template <int Base>
COLLECT_FN void load_dueling(const float* __restrict__ nets, float* ws, unsigned rank) {
  using L = Dueling<HEAD_PLAIN, Base>;
  load_slice<STATE_DIM, 256, 256, L::S0_W, L::S0_B, 0, 0>(nets, ws + NW_S0, rank);
  load_slice<256, 256, 256, L::S1_W, L::S1_B, 0, 0>(nets, ws + NW_S1, rank);
  load_slice<256, 256, 128, L::V0_W, L::V0_B, L::A0_W, L::A0_B>(nets, ws + NW_H, rank);
  if (TF32)
    load_slice<OUT_IN, OUT_L, 0, 0, 0, L::A1_W, L::A1_B>(nets, ws + NW_O, rank);
  else
    load_slice<OUT_IN, OUT_L, 1, L::V1_W, L::V1_B, L::A1_W, L::A1_B>(nets, ws + NW_O, rank);
}

// One output value into column j of row r of y in every CTA (pull mode: this CTA's y only), starting
// with a different peer per CTA so the pushes spread over the cluster.
// With CLUSTER_MBAR each store is asynchronous and counts its bytes on the receiver's mbarrier `bar`.
COLLECT_DEVICE void put(float* y, int at, float v, unsigned rank, float* bar) {
#if CLUSTER_PULL
  (void)rank;
  (void)bar;
  y[at] = v;
#elif CLUSTER_MBAR
  for (int k = 0; k < C; k++) st_async1(y + at, (rank + (unsigned)k) % C, v, bar);
#else
  (void)bar;
  for (int k = 0; k < C; k++) cluster_map(y, (rank + (unsigned)k) % C)[at] = v;
#endif
}
// Four consecutive values (16-byte aligned) the same way.
COLLECT_DEVICE void put4(float* y, int at, float4 v, unsigned rank, float* bar) {
#if CLUSTER_PULL
  (void)rank;
  (void)bar;
  sts4(y + at, v);
#elif CLUSTER_MBAR
  for (int k = 0; k < C; k++) st_async4(y + at, (rank + (unsigned)k) % C, v, bar);
#else
  (void)bar;
  for (int k = 0; k < C; k++) sts4(cluster_map(y, (rank + (unsigned)k) % C) + at, v);
#endif
}

#if TF32
// This warp's share of a tensor-core layer: its column tiles x K slice of x [E, ldx] (zero-padded
// columns up to K) times the slice ws, partial sums into part [KSPLIT][E][NTP]. Two accumulator sets
// (even and odd k16 steps) halve the dependent mma chain; they are added before the store.
template <int In, int Out>
COLLECT_FN void mma_compute(const float* ws, const float* x, int ldx, float* part) {
  using L = ClusterMma<In, Out>;
  const int warp = (int)(threadIdx.x >> 5);
  if (SKIP_NETS || warp >= L::NG * L::KSPLIT) return;
  const int ng = warp % L::NG, ks = warp / L::NG;
  const int n0 = ng * L::WN * 8;
  const int lane = lane_id();
  const int g = lane >> 2, t = lane & 3;
  float c[2][L::WN][4];
#pragma unroll
  for (int h = 0; h < 2; h++)
#pragma unroll
    for (int n = 0; n < L::WN; n++)
#pragma unroll
      for (int i = 0; i < 4; i++) c[h][n][i] = 0.0f;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
  for (int s = 0; s < L::KS; s++) {
    const int kk = (ks * L::KS + s) * 16 + 4 * t;
    const float4 lo = g < E ? lds4(x + g * ldx + kk) : zero;
    const float4 hi = g + 8 < E ? lds4(x + (g + 8) * ldx + kk) : zero;
    const unsigned a0[4] = {tf32_operand(lo.x), tf32_operand(hi.x), tf32_operand(lo.y), tf32_operand(hi.y)};
    const unsigned a1[4] = {tf32_operand(lo.z), tf32_operand(hi.z), tf32_operand(lo.w), tf32_operand(hi.w)};
#pragma unroll
    for (int n = 0; n < L::WN; n++) {
      const int row = n0 + n * 8 + g;
      if (n0 + n * 8 >= L::NTP) break;
      const float4 w = lds4(ws + mma_at(L::K, row, kk));
      const unsigned b0[2] = {__float_as_uint(w.x), __float_as_uint(w.y)};
      const unsigned b1[2] = {__float_as_uint(w.z), __float_as_uint(w.w)};
      mma_tf32_16x8x8(c[s & 1][n], a0, b0);
      mma_tf32_16x8x8(c[s & 1][n], a1, b1);
    }
  }
#pragma unroll
  for (int n = 0; n < L::WN; n++)
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const int row = g + (i >= 2 ? 8 : 0);
      const int col = n0 + n * 8 + 2 * t + (i & 1);
      if (row < E && col < L::NTP) part[(ks * E + row) * L::NTP + col] = c[0][n][i] + c[1][n][i];
    }
}

// After the barrier that completes part: slices added in order, bias, activation, pushed as column
// rank * SL + jj of every CTA's y.
template <int In, int Out, int Act>
COLLECT_FN void mma_store(const float* ws, const float* part, float* y, int ldy, unsigned rank, float* bar) {
  using L = ClusterMma<In, Out>;
  if (SKIP_NETS) return;
  const float* bias = ws + L::NTP * L::K;
  const int j0 = (int)rank * L::SL;
  if constexpr (L::SL % 4 == 0 && Out % L::SL == 0) {
    // Whole quads (the 256-wide layers): 4 consecutive outputs a task, one 16-byte store per CTA.
    constexpr int Q = L::SL / 4;
    for (int task = threadIdx.x; task < E * Q; task += T) {
      const int r = task / Q, jj = task % Q * 4;
      float v[4];
#pragma unroll
      for (int c = 0; c < 4; c++) {
        float s = part[r * L::NTP + jj + c];
#pragma unroll
        for (int k = 1; k < L::KSPLIT; k++) s += part[(k * E + r) * L::NTP + jj + c];
        v[c] = activate<Act>(s + bias[jj + c]);
      }
      put4(y, r * ldy + j0 + jj, make_float4(v[0], v[1], v[2], v[3]), rank, bar);
    }
  } else {
    for (int task = threadIdx.x; task < E * L::SL; task += T) {
      const int r = task / L::SL, jj = task % L::SL, j = j0 + jj;
      if (j >= Out) continue;
      float s = part[r * L::NTP + jj];
#pragma unroll
      for (int k = 1; k < L::KSPLIT; k++) s += part[(k * E + r) * L::NTP + jj];
      put(y, r * ldy + j, activate<Act>(s + bias[jj]), rank, bar);
    }
  }
}
#endif

// One layer over the cluster: this CTA's outputs for all E rows of x (rows j >= SPLIT read the
// input from column XOFF2), pushed into y of every CTA (pull mode: into its own y only). The caller
// ends the phase with end_phase.
template <int In, int Out, int Act, int SPLIT, int XOFF2>
COLLECT_FN void cluster_layer(const float* ws, const float* x, int ldx, float* y, int ldy, unsigned rank, float* bar) {
  constexpr int SL = slice_rows(Out), LDW = slice_ldw(In);
  constexpr int G = slice_groups(Out), RPG = E / G;
  constexpr int IN4 = In / 4 * 4;
  const int j0 = (int)rank * SL;
  const float* bias = ws + SL * LDW;
  // Consecutive threads share an output (its weight row is a broadcast) and read different rows.
  for (int task = threadIdx.x; task < SL * G; task += T) {
    const int jj = task / G, r0 = (task % G) * RPG, j = j0 + jj;
    if (j >= Out) break;
    const float* w = ws + jj * LDW;
    const float* xr = x + r0 * ldx + (j < SPLIT ? 0 : XOFF2);
    float acc[RPG];
#pragma unroll
    for (int r = 0; r < RPG; r++) acc[r] = bias[jj];
    for (int i = 0; i < IN4; i += 4) {
      const float4 w4 = lds4(w + i);
#pragma unroll
      for (int r = 0; r < RPG; r++) {
        const float4 x4 = lds4(xr + r * ldx + i);
        acc[r] = fadd(acc[r], fmul(w4.x, x4.x));
        acc[r] = fadd(acc[r], fmul(w4.y, x4.y));
        acc[r] = fadd(acc[r], fmul(w4.z, x4.z));
        acc[r] = fadd(acc[r], fmul(w4.w, x4.w));
      }
    }
    for (int i = IN4; i < In; i++) {
#pragma unroll
      for (int r = 0; r < RPG; r++) acc[r] = fadd(acc[r], fmul(w[i], xr[r * ldx + i]));
    }
#pragma unroll
    for (int r = 0; r < RPG; r++) put(y, (r0 + r) * ldy + j, activate<Act>(acc[r]), rank, bar);
  }
}

// Pull mode, after the phase's cluster barrier: copies the other CTAs' output columns of y (all E
// rows) into this CTA's y, as float4 where every slice is whole quads. A peer rewrites its y only
// two layers on, after a cluster barrier this CTA reaches only after this copy.
template <int Out>
COLLECT_FN void gather(float* y, int ldy, unsigned rank) {
  constexpr int SL = slice_rows(Out);
  if constexpr (SL % 4 == 0 && Out % SL == 0) {
    constexpr int Q = SL / 4;
    for (int task = threadIdx.x; task < (C - 1) * E * Q; task += T) {
      const int c = ((int)rank + 1 + task / (E * Q)) % C, r = task / Q % E, at = r * ldy + c * SL + task % Q * 4;
      const float4 v = lds4(cluster_map(y, (unsigned)c) + at);
      y[at] = v.x;
      y[at + 1] = v.y;
      y[at + 2] = v.z;
      y[at + 3] = v.w;
    }
  } else {
    for (int task = threadIdx.x; task < (C - 1) * E * SL; task += T) {
      const int c = ((int)rank + 1 + task / (E * SL)) % C, r = task / SL % E, j = c * SL + task % SL;
      if (j < Out) y[r * ldy + j] = *(cluster_map(y, (unsigned)c) + r * ldy + j);
    }
  }
}

// Ends a layer phase: the cluster barrier, then in pull mode the copy of the peers' outputs.
template <int Out>
COLLECT_FN void end_phase(float* y, int ldy, unsigned rank, float* y2 = nullptr) {
  if (PHASE_BLOCK)
    block_sync();
  else
    cluster_sync();
#if CLUSTER_PULL
  gather<Out>(y, ldy, rank);
  if (y2) gather<Out>(y2, ldy, rank);
  block_sync();
#endif
}

// One exact f32 layer on the CTA's EPC own rows (x [EPC, ldx] -> y [EPC, ldy]), one output a thread
// (thread t of nt): bias, then f32(acc + f32(w * x)) in input order, as the reference. Weights w
// (rows of LDW floats) and biases b in shared memory (CUR_SMEM) or the nets buffer.
template <int In, int Out, int Act, int LDW>
COLLECT_FN void local_layer(const float* __restrict__ w, const float* __restrict__ b, const float* x, int ldx, float* y,
                            int ldy, int t, int nt) {
  for (int task = t; task < EPC * Out; task += nt) {
    const int s = task / Out, j = task % Out;
    const float* wj = w + j * LDW;
    float acc = CUR_SMEM ? b[j] : ldg1(b + j);
#pragma unroll
    for (int i = 0; i < In; i++) acc = fadd(acc, fmul(CUR_SMEM ? wj[i] : ldg1(wj + i), x[s * ldx + i]));
    y[s * ldy + j] = activate<Act>(acc);
  }
}

// CUR_SMEM: the curiosity model's weights into SM_CW (once per launch, whole CTA).
COLLECT_FN void load_curiosity(const float* __restrict__ nets, float* cw) {
  constexpr int L0 = CNet::HIDDEN * CNet::IN, L1 = CNet::OUT * CNet::HIDDEN;
  for (int k = threadIdx.x; k < CNet::SIZE; k += T) {
    const float v = ldg1(nets + CNet::L0_W + k);
    if (k < L0)
      cw[CW_W0 + k / CNet::IN * odd_stride(CNet::IN) + k % CNet::IN] = v;
    else if (k < L0 + CNet::HIDDEN)
      cw[CW_B0 + k - L0] = v;
    else if (k < L0 + CNet::HIDDEN + L1)
      cw[CW_W1 + (k - L0 - CNet::HIDDEN) / CNet::HIDDEN * odd_stride(CNet::HIDDEN) +
         (k - L0 - CNet::HIDDEN) % CNet::HIDDEN] = v;
    else
      cw[CW_B1 + k - L0 - CNet::HIDDEN - L1] = v;
  }
}
static_assert(CNet::L0_B == CNet::L0_W + CNet::HIDDEN * CNet::IN && CNet::L1_W == CNet::L0_B + CNet::HIDDEN &&
                  CNet::L1_B == CNet::L1_W + CNet::OUT * CNet::HIDDEN,
              "the curiosity model is W0, B0, W1, B1 in the nets buffer");

// The curiosity model on the CTA's owned rows (SM_CI -> SM_CH -> SM_CO) by threads t of nt, `sync`
// between its two layers (a barrier over exactly those threads); its outputs are complete once the
// caller's next barrier over them has passed. Weights from SM_CW (CUR_SMEM) or the nets buffer (17 KB
// that every CTA reads: cache hits, but each warp load touches 32 rows); no cluster exchange, as only
// an episode's owner needs its prediction. Exact f32 in both builds (the TF32 build's tolerance covers
// it; the model is 0.7% of a step's multiply-adds), and off the step's critical path: it runs on
// helper warps while the owners step the simulator (see the step loop).
template <class Sync>
COLLECT_FN void curiosity_model(const float* __restrict__ nets, float* smem, int t, int nt, Sync sync) {
  constexpr int LD0 = CUR_SMEM ? odd_stride(CNet::IN) : CNet::IN;
  constexpr int LD1 = CUR_SMEM ? odd_stride(CNet::HIDDEN) : CNet::HIDDEN;
  const float* w0 = CUR_SMEM ? smem + SM_CW + CW_W0 : nets + CNet::L0_W;
  const float* b0 = CUR_SMEM ? smem + SM_CW + CW_B0 : nets + CNet::L0_B;
  const float* w1 = CUR_SMEM ? smem + SM_CW + CW_W1 : nets + CNet::L1_W;
  const float* b1 = CUR_SMEM ? smem + SM_CW + CW_B1 : nets + CNet::L1_B;
  local_layer<CNet::IN, CNet::HIDDEN, ACT_LEAKY, LD0>(w0, b0, smem + SM_CI, LD_CURIOSITY, smem + SM_CH, LD_CH, t, nt);
  sync();
  local_layer<CNet::HIDDEN, CNet::OUT, ACT_NONE, LD1>(w1, b1, smem + SM_CH, LD_CH, smem + SM_CO, LD_CO, t, nt);
}

#if TIMING
#define TMARK(k)                         \
  do {                                   \
    const long long now_ = clock64();    \
    tsum[k] += now_ - tlast;             \
    tlast = now_;                        \
  } while (0)
// The same, the delta also added to segment j (a layer phase's total).
#define TMARK2(k, j)                     \
  do {                                   \
    const long long now_ = clock64();    \
    tsum[k] += now_ - tlast;             \
    tsum[j] += now_ - tlast;             \
    tlast = now_;                        \
  } while (0)
#define TIMING_ARGS , long long *tsum, long long &tlast
#define TIMING_PASS , tsum, tlast
// Segments: decisions, simulator phase, states exchange, layer phases 0-3, the rest; then, summed over
// the four layer phases, their partial sums (with the block barrier), their pushes, the phase's extra
// work and the wait for the peers' bytes.
// Segment 12: the thread's own work in the simulator phase (thread 0: the owner's step; the first
// curiosity warp's thread 0: the curiosity model; thread WG_X - 32: the TD errors), before the phase's
// closing barrier.
// 13: the thread's own decisions (before their closing barrier); 14, 15: the curiosity model's first
// layer and the wait at the barrier after it (its second layer is then segment 12).
constexpr int TSEG = 16;
#else
#define TMARK(k) \
  do {           \
  } while (0)
#define TMARK2(k, j) \
  do {               \
  } while (0)
#define TIMING_ARGS
#define TIMING_PASS
#endif

// One layer phase of up to two layers with the same shape (the online net and, if ws2, the target
// net), ended by the cluster barrier (CLUSTER_MBAR: the wait for this phase's bytes): exact, each
// thread's outputs pushed as it finishes them; TF32, both layers' partial sums, one block barrier,
// both layers' sums pushed. `extra(layer)` runs between the pushes and the wait (work that reads no
// output of this phase: it overlaps the exchange).
template <int In, int Out, int Act, int SPLIT, int XOFF2, class Extra>
COLLECT_FN void layer_phase(const float* ws, const float* x, int ldx, float* y, int ldy, const float* ws2,
                            const float* x2, float* y2, float* smem, unsigned rank, int layer, unsigned& phases,
                            Extra& extra TIMING_ARGS) {
  float* bar = smem + SM_MBAR + 2 * (MB_LAYER0 + layer);
#if CLUSTER_MBAR
  // Every CTA receives every row's Out columns of each net: this phase's bytes.
  if (threadIdx.x == 0) mbar_expect(bar, SKIP_NETS ? 0u : (unsigned)(E * Out * 4 * (ws2 ? 2 : 1)));
#endif
#if TF32
  mma_compute<In, Out>(ws, x, ldx, smem + SM_PART);
  if (ws2) mma_compute<In, Out>(ws2, x2, ldx, smem + SM_PART + PART_MAX);
  block_sync();
  TMARK2(8, 3 + layer);
  mma_store<In, Out, Act>(ws, smem + SM_PART, y, ldy, rank, bar);
  if (ws2) mma_store<In, Out, Act>(ws2, smem + SM_PART + PART_MAX, y2, ldy, rank, bar);
#else
  if (ws2) cluster_layer<In, Out, Act, SPLIT, XOFF2>(ws2, x2, ldx, y2, ldy, rank, bar);
  cluster_layer<In, Out, Act, SPLIT, XOFF2>(ws, x, ldx, y, ldy, rank, bar);
#endif
  TMARK2(9, 3 + layer);
  extra(layer);
  TMARK2(10, 3 + layer);
#if CLUSTER_MBAR
  // Each thread waits for the phase itself: past it, every row is complete here.
  mbar_wait(bar, (phases >> (MB_LAYER0 + layer)) & 1u);
  phases ^= 1u << (MB_LAYER0 + layer);
#else
  (void)phases;
  end_phase<Out>(y, ldy, rank, ws2 ? y2 : nullptr);
#endif
  TMARK2(11, 3 + layer);
}

// TF32 build: a lane's share of value.1 (inputs lane, lane + 32, lane + 64, lane + 96) and its bias,
// held in registers for the whole launch.
struct ValueLane {
  float w[4];
  float b;
};
template <int Base>
COLLECT_DEVICE ValueLane value_lane(const float* __restrict__ nets) {
  using L = Dueling<HEAD_PLAIN, Base>;
  ValueLane v;
  for (int k = 0; k < 4; k++) v.w[k] = TF32 ? ldg1(nets + L::V1_W + 32 * k + lane_id()) : 0.0f;
  v.b = TF32 ? ldg1(nets + L::V1_B) : 0.0f;
  return v;
}

// TF32 build: value.1 of every row, column 0 of va, from the hidden rows a (columns 0..127) by this
// CTA itself: one warp per row (row r on warp r % WARPS, the warp that takes its decision), f32 sum
// over lanes.
COLLECT_FN void value_rows(const ValueLane& v, const float* a, float* va) {
  if (SKIP_NETS) return;
  const int lane = lane_id();
  for (int r = (int)(threadIdx.x >> 5); r < E; r += T / 32) {
    const float* x = a + r * LD_TRUNK;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; k++) acc = __fmaf_rn(v.w[k], x[32 * k + lane], acc);
    acc = warp_sum(acc);
    if (lane == 0) va[r * LD_VQ] = fadd(v.b, acc);
    __syncwarp();
  }
}

// The online net on SM_X0 -> SM_VA and, if `target`, the target net on SM_XT -> SM_VT, phase by
// phase (4 exchanges): states x -> a -> b -> a -> value ++ advantages va, every row in every CTA once
// the phase's exchange has completed (TF32: the value column by the row's warp); `extra(k)` inside
// layer phase k (layer_phase).
template <class Extra>
COLLECT_FN void dueling_va(float* s, bool target, unsigned rank, unsigned& ph, const ValueLane& vq,
                           const ValueLane& vt, Extra& extra TIMING_ARGS) {
  const float* wt = target ? s + SM_WT : nullptr;
  // TF32: the value column while the advantages travel.
  auto extra3 = [&](int layer) {
    extra(layer);
    if (TF32 && layer == 3) {
      value_rows(vq, s + SM_A, s + SM_VA);
      if (target) value_rows(vt, s + SM_AT, s + SM_VT);
    }
  };
  layer_phase<STATE_DIM, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_S0, s + SM_X0, LD_STATE, s + SM_A, LD_TRUNK,
                                                 wt ? wt + NW_S0 : nullptr, s + SM_XT, s + SM_AT, s, rank, 0, ph,
                                                 extra3 TIMING_PASS);
  layer_phase<256, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_S1, s + SM_A, LD_TRUNK, s + SM_B, LD_TRUNK,
                                           wt ? wt + NW_S1 : nullptr, s + SM_AT, s + SM_BT, s, rank, 1, ph,
                                           extra3 TIMING_PASS);
  layer_phase<256, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_H, s + SM_B, LD_TRUNK, s + SM_A, LD_TRUNK,
                                           wt ? wt + NW_H : nullptr, s + SM_BT, s + SM_AT, s, rank, 2, ph,
                                           extra3 TIMING_PASS);
  // TF32: advantages from hidden columns 128..255 into columns 1..45; exact: value ++ advantages.
  constexpr int XO = TF32 ? 128 : 0, YO = TF32 ? 1 : 0;
  layer_phase<OUT_IN, OUT_L, ACT_NONE, TF32 ? 0 : 1, 128>(s + SM_WQ + NW_O, s + SM_A + XO, LD_TRUNK, s + SM_VA + YO,
                                                          LD_VQ, wt ? wt + NW_O : nullptr, s + SM_AT + XO,
                                                          s + SM_VT + YO, s, rank, 3, ph, extra3 TIMING_PASS);
}

// mean(A) of a value ++ advantages row (collect_nets.cuh advantage_mean: the same sum in action order),
// every load issued before the first add.
COLLECT_DEVICE float row_mean(const float* a) {
  float v[NUM_ACTIONS];
#pragma unroll
  for (int k = 0; k < NUM_ACTIONS; k++) v[k] = a[k];
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < NUM_ACTIONS; k++) sum = fadd(sum, v[k]);
  return fdiv(sum, (float)NUM_ACTIONS);
}

// Q of value ++ advantages row va held by the 32 lanes of a warp (forward.ts forwardDueling:
// f32(f32(V + A[a]) - mean(A)); every lane takes the mean itself, the same bits): lane k has Q[k] in
// lo and, where k + 32 < NUM_ACTIONS, Q[k + 32] in hi.
static_assert(NUM_ACTIONS > 32 && NUM_ACTIONS <= 64, "a warp holds Q in two values per lane");
struct QLanes {
  float lo, hi;
};
COLLECT_DEVICE QLanes q_lanes(const float* va, int lane) {
  const float mean = row_mean(va + 1);
  QLanes q;
  q.lo = fsub(fadd(va[0], va[1 + lane]), mean);
  q.hi = lane + 32 < NUM_ACTIONS ? fsub(fadd(va[0], va[33 + lane]), mean) : 0.0f;
  return q;
}

// argmax_q (the first index of the largest Q: its strict running max from index 0, which keeps index 0
// when Q[0] is NaN and never moves to a NaN) taken by the 32 lanes of a warp; every lane returns it.
COLLECT_DEVICE int warp_argmax(const QLanes& q, int lane) {
  float best = __uint_as_float(0xff800000u);  // -inf (NVRTC has no INFINITY)
  int idx = NUM_ACTIONS;
  if (q.lo > best) {
    best = q.lo;
    idx = lane;
  }
  if (lane + 32 < NUM_ACTIONS && q.hi > best) {
    best = q.hi;
    idx = lane + 32;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ob = __shfl_xor_sync(0xffffffffu, best, o);
    const int oi = __shfl_xor_sync(0xffffffffu, idx, o);
    if (ob > best || (ob == best && oi < idx)) {
      best = ob;
      idx = oi;
    }
  }
  // Nothing above -inf (every Q -inf or NaN), or Q[0] NaN: the running max stays at 0.
  const float q0 = warp_bcast(q.lo, 0);
  return idx == NUM_ACTIONS || q0 != q0 ? 0 : idx;
}

// Q[a] to every lane (a the same in every lane).
COLLECT_DEVICE float q_at(const QLanes& q, int a) {
  const float lo = warp_bcast(q.lo, a & 31), hi = warp_bcast(q.hi, a & 31);
  return a < 32 ? lo : hi;
}

// The decisions of all E episodes in every CTA (identical bits in each), one warp per episode: its Q
// row, its epsilon-greedy action (choose_action with the argmax over the warp) and, for the CTA's own
// episodes, the curiosity input.
static_assert(CURIOSITY_OUT <= MARKET_FEATURES, "a state row begins with the bar's market features");
COLLECT_FN void decide(float* smem, unsigned long long base, unsigned n, unsigned g, float epsilon, unsigned k0,
                       unsigned k1, bool curiosity, unsigned rank) {
  const int lane = lane_id();
  int* actions = reinterpret_cast<int*>(smem + SM_ACTION);
  for (int r = (int)(threadIdx.x >> 5); r < E; r += T / 32) {
    const QLanes q = q_lanes(smem + SM_VA + r * LD_VQ, lane);
    const unsigned e = (unsigned)(base + (unsigned long long)r);
    const uint4 w = philox4x32_10(make_uint4(STREAM_ACTION, e, g, 0u), k0, k1);
    const int greedy = warp_argmax(q, lane);
    const int a = base + (unsigned long long)r >= n     ? 0
                  : philox_unit_float(w.x) < epsilon ? (int)(w.y % NUM_ACTIONS)
                                                     : greedy;
    const float qa = q_at(q, a);
    if (lane == 0) {
      actions[r] = a;
      smem[SM_QSEL + r] = qa;
    }
    if (curiosity && r % C == (int)rank) {
      // curiosity_input's row: features[bar][0..32) ++ one-hot(category), then zeros. The decision's
      // state row (SM_X0, built here by the owner) begins with features[bar]: the same floats, read
      // from shared memory instead of L2.
      float* x = smem + SM_CI + r / C * LD_CURIOSITY;
      const float* src = smem + SM_X0 + r * LD_STATE;
      const int cat = action_category(a);
      for (int k = lane; k < LD_CURIOSITY; k += 32)
        x[k] = k < CURIOSITY_OUT ? src[k] : k < CURIOSITY_OUT + 3 && k - CURIOSITY_OUT == cat ? 1.0f : 0.0f;
    }
  }
}

// An owned episode's state row into buffer `at` (SM_X0 or SM_XT) of this CTA (zeros for episodes
// past N); share_states then copies the rows to the peers.
COLLECT_DEVICE void build_row(float* smem, int at, int i, const Episode& ep, const Market& m, bool active) {
  float* row = smem + at + i * LD_STATE;
  if (active) build_state(ep, m, row);
  for (int k = active ? STATE_DIM : 0; k < LD_STATE; k++) row[k] = 0.0f;
}

// Owned rows of cluster episode slots: episodes i = slot * C + rank < E.
__host__ __device__ constexpr int owned_rows(int rank) { return rank < E ? (E - 1 - rank) / C + 1 : 0; }
// Quads of a state row the exchange copies (its 54 floats and 2 zero padding columns).
constexpr int STATE_QUADS = (STATE_DIM + 3) / 4;
static_assert(STATE_QUADS * 4 <= LD_STATE, "a state row's quads stay inside its stride");

// After a block barrier that follows build_row: the whole CTA copies the rows of its owned episodes in
// the NB buffers `at` into every peer, and writes each active
// episode's row of buffer b to the output section `sec[b]` at step `step[b]` of the launch (not where
// step[b] is negative). Then every CTA has every row: a cluster barrier, or (CLUSTER_MBAR) the wait
// for the bytes of the other CTAs' rows on the states mbarrier.
template <int NB>
COLLECT_FN void share_states(float* smem, const int (&at)[NB], const int (&sec)[NB], const int (&step)[NB],
                             const Out& o, unsigned long long base, unsigned n, unsigned steps, unsigned rank,
                             unsigned& phases) {
  float* bar = smem + SM_MBAR + 2 * MB_STATES;
#if CLUSTER_MBAR
  if (threadIdx.x == 0)
    mbar_expect(bar, SKIP_SHARE ? 0u : (unsigned)((E - owned_rows((int)rank)) * NB * STATE_QUADS * 16));
#endif
  if (!SKIP_SHARE) {
    // Peers: a row's quads.
    for (int task = threadIdx.x; task < EPC * NB * C * STATE_QUADS; task += T) {
      const int q = task % STATE_QUADS, c = task / STATE_QUADS % C, b = task / (STATE_QUADS * C) % NB,
                slot = task / (STATE_QUADS * C * NB);
      const int i = slot * C + (int)rank;
      if (i >= E || c == (int)rank) continue;
      const int k = at[b] + i * LD_STATE + 4 * q;
#if CLUSTER_MBAR
      st_async4(smem + k, (unsigned)c, lds4(smem + k), bar);
#else
      sts4(cluster_map(smem, (unsigned)c) + k, lds4(smem + k));
#endif
    }
    // The outputs: the active episodes' rows.
    for (int task = threadIdx.x; task < EPC * NB * STATE_DIM; task += T) {
      const int k = task % STATE_DIM, b = task / STATE_DIM % NB, slot = task / (STATE_DIM * NB);
      const int i = slot * C + (int)rank;
      const unsigned long long e = base + (unsigned long long)i;
      if (i < E && step[b] >= 0 && e < n)
        o.f[sec[b] * o.nl + (e * steps + (unsigned)step[b]) * STATE_DIM + k] = smem[at[b] + i * LD_STATE + k];
    }
  }
#if CLUSTER_MBAR
  mbar_wait(bar, (phases >> MB_STATES) & 1u);
  phases ^= 1u << MB_STATES;
#else
  (void)phases;
  cluster_sync();
#endif
}

// TD errors of step l's owned episodes s0, s0 + ds, ..., by one whole warp (after the barrier that
// follows the step's layer phases; before the next step's third layer phase rewrites SM_VT): each
// target-Q row from SM_VT and its argmax, then |target - Q(s, a)| from what the owner left in SM_TDIN;
// a done step uses r alone (td_error).
COLLECT_FN void td_errors(const float* smem, float* out_f, unsigned long long nl, unsigned long long base, unsigned n,
                          unsigned steps, unsigned l, float gamma, unsigned rank, int s0, int ds) {
  const int lane = lane_id();
  for (int s = s0; s < EPC; s += ds) {
    const int r = s * C + (int)rank;
    const unsigned long long e = base + (unsigned long long)r;
    if (r >= E || e >= n) break;
    const QLanes q = q_lanes(smem + SM_VT + r * LD_VQ, lane);
    const float qbest = q_at(q, warp_argmax(q, lane));
    if (lane == 0) {
      const float* in = smem + SM_TDIN + 4 * s;
      const float total = in[0];
      const float target = in[1] != 0.0f ? total : fadd(total, fmul(gamma, qbest));
      out_f[OUT_F_TD_ERRORS * nl + e * steps + l] = fabsf(fsub(target, in[2]));
    }
  }
}

// Roles in the simulator phase. With enough warps (HELPERS) each owned episode slot s has a warp of
// its own (its lane 0 the owner, the other lanes build the state rows), warps EPC .. WARPS - NTD - 1
// run the curiosity model (named barrier 1 between its layers) and the last NTD warps the previous
// step's TD errors, all at once; otherwise owner s is thread s and warp 0 does the TD errors and the
// whole CTA the curiosity model after the simulator step.
constexpr int WARPS = T / 32;
constexpr bool HELPERS = WARPS >= EPC + 2;
constexpr int NTD = HELPERS ? (EPC < WARPS - EPC - 1 ? EPC : WARPS - EPC - 1) : 1;
constexpr int CUR_WARP0 = HELPERS ? EPC : 0;
constexpr int CUR_THREADS = HELPERS ? 32 * (WARPS - EPC - NTD) : T;
// The owned slot of this thread (EPC or more: none).
COLLECT_DEVICE int owner_slot() {
  const int t = (int)threadIdx.x;
  return HELPERS ? (t % 32 == 0 ? t / 32 : EPC) : t;
}

// HELPERS: the warp of owned slot s steps its episode (lane 0, with action a) and writes both state
// rows of cluster episode i: s' into SM_XT (features of bar t + 1 loaded by the lanes before the step,
// the portfolio floats after it), then the next decision's row into SM_X0 (the restarted episode's
// first state, or a copy of s'). Same values as build_row.
COLLECT_FN void owner_step(float* smem, Episode& ep, const Market& m, const EnvScalars& p, int* window, int a,
                           unsigned e, int i, StepOut& so) {
  const int lane = lane_id();
  float* xt = smem + SM_XT + i * LD_STATE;
  float* x0 = smem + SM_X0 + i * LD_STATE;
  const float* f1 = m.features + (ep.bar + 1) * MARKET_FEATURES;
  const float v0 = ldg1(f1 + lane);
  const float v1 = lane + 32 < MARKET_FEATURES ? ldg1(f1 + lane + 32) : 0.0f;
  __syncwarp();  // every lane has read ep.bar before lane 0 moves it
  int restarts = 0;
  if (lane == 0) {
    if (!SKIP_ENV) env_step(ep, m, p, window, a, 0.0f, false, so);
    state_portfolio(ep, xt + MARKET_FEATURES);
    restarts = !SKIP_ENV && (so.done || so.truncated);
    if (restarts) restart_if_ended(ep, m, p, window, e, so);
  }
  xt[lane] = v0;
  if (lane + 32 < MARKET_FEATURES) xt[lane + 32] = v1;
  restarts = __shfl_sync(0xffffffffu, restarts, 0);
  __syncwarp();
  if (restarts) {
    // The restarted episode's first state (lane 0 moved ep).
    const float* f0 = m.features + ep.bar * MARKET_FEATURES;
    x0[lane] = ldg1(f0 + lane);
    if (lane + 32 < MARKET_FEATURES) x0[lane + 32] = ldg1(f0 + lane + 32);
    if (lane == 0) state_portfolio(ep, x0 + MARKET_FEATURES);
  } else if (lane < STATE_QUADS) {
    sts4(x0 + 4 * lane, lds4(xt + 4 * lane));
  }
}

// One CTA per SM (its plan takes most of the shared memory): the registers of WG_X threads.
#ifdef FOXHUNT_EMU
#define CLUSTER_LAUNCH_BOUNDS
#else
#define CLUSTER_LAUNCH_BOUNDS __launch_bounds__(WG_X, 1)
#endif

extern "C" __global__ void CLUSTER_LAUNCH_BOUNDS collect_dqn_cluster(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const unsigned rank = cluster_rank();
  const unsigned long long base = flat_block_id() / C * E;
  const int warp = (int)(threadIdx.x >> 5);
  // This thread's episode, if it owns one: cluster episode i = slot * C + rank.
  const int slot = owner_slot();
  const int i = slot * C + (int)rank;
  const bool owner = slot < EPC && i < E;
  const unsigned long long e64 = base + (owner ? i : 0);
  const bool active = owner && e64 < u.n;
  const unsigned e = (unsigned)e64;
  // HELPERS: the episode of this thread's warp, if the warp steps one.
  const int wi = warp * C + (int)rank;
  const bool warp_active = HELPERS && warp < EPC && wi < E && base + (unsigned long long)wi < u.n;
  // The activations start zero: the padding columns the TF32 layers read past a row's inputs (the
  // peers copy only the 54 state floats) stay zero for the whole launch, as do the rows of episodes
  // past N.
  for (int k = SM_X0 + (int)threadIdx.x; k < SM_EPISODES; k += T) smem[k] = 0.0f;
  Episode* episodes = reinterpret_cast<Episode*>(smem + SM_EPISODES);
  Episode& ep = episodes[owner ? slot : 0];
  int* window = div_window + (unsigned long long)e * p.diversity_window;
  if (active) load_episode(ep, env_f, env_i, e);
  const int* actions = reinterpret_cast<const int*>(smem + SM_ACTION);

  // Every zero is in before the curiosity weights and the mbarriers go into the same range.
  block_sync();
  load_dueling<NET_Q_BASE>(nets, smem + SM_WQ, rank);
  load_dueling<NET_T_BASE>(nets, smem + SM_WT, rank);
  if (CUR_SMEM) load_curiosity(nets, smem + SM_CW);
#if CLUSTER_MBAR
  // One arrival per phase (thread 0's expect_tx); the bytes do the rest.
  if (threadIdx.x == 0) {
    for (int k = 0; k < MB_COUNT; k++) mbar_init(smem + SM_MBAR + 2 * k, 1);
    mbar_init_fence();
  }
#endif
  // Every CTA of the cluster is running (its shared memory may be written, its mbarriers are
  // initialised) past this barrier.
  cluster_sync();

  Out o = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  // The first decision's states and their online Q.
  if (owner) build_row(smem, SM_X0, i, ep, m, active);
  block_sync();
  unsigned phases = 0;
  share_states<1>(smem, {SM_X0}, {OUT_F_STATES}, {0}, o, base, u.n, u.steps, rank, phases);
#if TIMING
  long long tsum[TSEG] = {}, tlast = 0;
#endif
  auto none = [](int) {};
  const ValueLane vq = value_lane<NET_Q_BASE>(nets), vt = value_lane<NET_T_BASE>(nets);
  dueling_va(smem, false, rank, phases, vq, vt, none TIMING_PASS);
#if TIMING
  for (int k = 0; k < TSEG; k++) tsum[k] = 0;
  tlast = (long long)clock64();
#endif
  for (unsigned l = 0; l < u.steps; l++, o.idx++) {
    const unsigned g = u.stepBase + l;
    // The owner's market lines of this step (bar t + 1: OHLC, spread, features; the diversity
    // window's slot) into L1 while the decisions run, so the simulator's loads hit L1, not L2.
    if (active) {
      const int t1 = ep.bar + 1;
      prefetch_l1(ohlc + t1 * 4);
      prefetch_l1(spread + t1);
      for (int k = 0; k < MARKET_FEATURES; k += 32) prefetch_l1(features + t1 * MARKET_FEATURES + k);
      prefetch_l1(features + t1 * MARKET_FEATURES + MARKET_FEATURES - 1);
      prefetch_l1(window + ep.div_head);
    }
    decide(smem, base, u.n, g, u.epsilon, p.key0, p.key1, u.curiosity != 0, rank);
    TMARK(13);
    block_sync();
    TMARK(0);

    // The simulator phase. The step leaves the curiosity bonus out (it only adds to the reward; the
    // model runs beside the simulator and the owner adds bonus and total in the layer phases below).
    StepOut so{};
    const int action = active ? actions[i] : 0;
    const float q_sel = active ? smem[SM_QSEL + i] : 0.0f;
    if (HELPERS) {
      if (warp < EPC) {
        if (warp_active)
          owner_step(smem, episodes[warp], m, p, div_window + (unsigned long long)(base + wi) * p.diversity_window,
                     actions[wi], (unsigned)(base + wi), wi, so);
      } else if (warp >= WARPS - NTD) {
        if (l > 0) td_errors(smem, out_f, o.nl, base, u.n, u.steps, l - 1, u.gamma, rank, warp - (WARPS - NTD), NTD);
      } else if (u.curiosity) {
        curiosity_model(nets, smem, (int)threadIdx.x - 32 * CUR_WARP0, CUR_THREADS,
                        [&] {
                          TMARK(14);
                          named_sync(1, CUR_THREADS);
                          TMARK(15);
                        });
      }
    } else {
      if (active && !SKIP_ENV) env_step(ep, m, p, window, action, 0.0f, false, so);
      if (owner) {
        build_row(smem, SM_XT, i, ep, m, active);
        const bool restarts = active && !SKIP_ENV && (so.done || so.truncated);
        if (restarts) restart_if_ended(ep, m, p, window, e, so);
        // The next decision's state: the restarted episode's first, or s' again (its row copied).
        if (restarts) {
          build_row(smem, SM_X0, i, ep, m, active);
        } else {
          for (int k = 0; k < LD_STATE; k += 4)
            sts4(smem + SM_X0 + i * LD_STATE + k, lds4(smem + SM_XT + i * LD_STATE + k));
        }
      }
      if (warp == WARPS - 1 && l > 0) td_errors(smem, out_f, o.nl, base, u.n, u.steps, l - 1, u.gamma, rank, 0, 1);
      if (u.curiosity) curiosity_model(nets, smem, (int)threadIdx.x, T, [] { block_sync(); });
    }
    TMARK(12);
    block_sync();
    TMARK(1);
    share_states<2>(smem, {SM_XT, SM_X0}, {OUT_F_NEXT_STATES, OUT_F_STATES},
                    {(int)l, l + 1 < u.steps ? (int)l + 1 : -1}, o, base, u.n, u.steps, rank, phases);
    TMARK(2);
    // In the second layer phase, while the peers' outputs travel: the owner's curiosity bonus and total
    // (env_step's operations, from the model's error on decision bar t: curiosity_mse against
    // features[t + 1][0..32), the first floats of the next-state row s'), the step's outputs, and what
    // the TD error needs.
    auto finish = [&](int layer) {
      if (layer != 1 || !active) return;
      if (u.curiosity) {
        so.curiosity =
            curiosity_bonus(p, curiosity_mse_next<false>(smem + SM_CO + slot * LD_CO, smem + SM_XT + i * LD_STATE));
        so.total = step_total(so);
      }
      write_step(o, so, action);
      float* in = smem + SM_TDIN + 4 * slot;
      in[0] = so.total;
      in[1] = so.done ? 1.0f : 0.0f;
      in[2] = q_sel;
    };
    dueling_va(smem, true, rank, phases, vq, vt, finish TIMING_PASS);
    TMARK(7);
  }
  // The last step's TD errors (its target rows are complete past the last layer phase; the barrier
  // orders the owners' SM_TDIN writes before the reads).
  block_sync();
  if (u.steps > 0 && warp >= WARPS - NTD)
    td_errors(smem, out_f, o.nl, base, u.n, u.steps, u.steps - 1, u.gamma, rank, warp - (WARPS - NTD), NTD);
#if TIMING
  if (flat_block_id() == 0 && (threadIdx.x == 32 * CUR_WARP0 || threadIdx.x == T - 32))
    printf("timing thread %u: own work in the simulator phase %lld cycles/step (curiosity: layer 0 %lld, wait %lld)\n",
           threadIdx.x, tsum[12] / u.steps, tsum[14] / u.steps, tsum[15] / u.steps);
  if (flat_block_id() == 0 && threadIdx.x % 32 == 0)
    printf("timing thread %u: own decisions %lld cycles/step, then the barrier %lld\n", threadIdx.x, tsum[13] / u.steps,
           tsum[0] / u.steps);
  if (flat_block_id() < C && threadIdx.x == 0)
    printf("timing rank %u cycles/step: owner %lld decide %lld sim %lld states %lld L0 %lld L1 %lld L2 %lld L3 %lld"
           " rest %lld | layers: sums %lld push %lld extra %lld wait %lld\n",
           rank, tsum[12] / u.steps, tsum[0] / u.steps, tsum[1] / u.steps, tsum[2] / u.steps, tsum[3] / u.steps,
           tsum[4] / u.steps, tsum[5] / u.steps, tsum[6] / u.steps, tsum[7] / u.steps, tsum[8] / u.steps,
           tsum[9] / u.steps, tsum[10] / u.steps, tsum[11] / u.steps);
#endif
  if (active) store_episode(ep, env_f, env_i, e);
  // No CTA leaves while a peer may still write into its shared memory.
  cluster_sync();
}
