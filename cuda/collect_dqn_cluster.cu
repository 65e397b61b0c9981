// collect_dqn_cluster: the DQN collection kernel (src/collect/dqn.ts, plain dueling head) for small N
// on sm_90 thread-block clusters (descriptor: src/kernels/collect_dqn.ts, variant `cluster`). Same
// bindings, uniforms, outputs and episode state as collect_dqn.cu; only the work split differs.
//
// Why: at N = 128 the tiled kernel runs 128 blocks of one episode and each block streams all 1.2 MB of
// online + target weights from L2 every step. Here a cluster of CLUSTER CTAs owns TILE_E episodes and
// every CTA keeps a 1/CLUSTER slice of every layer's OUTPUT neurons (weights + bias of online, target
// and curiosity) in its shared memory, loaded once per launch: no weight traffic per step.
//
// Per layer: CTA c computes outputs [c * SL, c * SL + SL) (SL = ceil(Out / CLUSTER)) for all TILE_E
// episodes from the full input rows in its own shared memory, pushes them into every CTA's output
// buffer through distributed shared memory, then one cluster barrier. Layers ping-pong between two
// buffers, so a buffer is rewritten only after a barrier that follows its last read. The two
// dueling streams' hidden layers run as one 256-output layer, their output layers as one 46-output
// layer (column 0 value, 1..45 advantages, each reading its own half of the hidden row).
// Every CTA has every episode's value and advantages, so each computes all Q rows, actions and
// curiosity inputs itself (same arithmetic, same bits) instead of waiting for another barrier.
//
// Pipeline: the target net on step t's next states and the online net on step t + 1's states
// need only the simulator step, so they run in the same phases: right after its step an owner
// restarts a finished episode (restart_if_ended reads only the step's outcome) and broadcasts both
// the next state s' (target input) and the state the next decision sees (online input; s' unless
// the episode restarted). Cluster barriers per step: 2 (curiosity) + 1 (states) + 4 (both nets) =
// 7 (5 without curiosity); one online forward before the loop (5 barriers), and the last step's
// online forward is spare.
//
// Episodes: episode i of the cluster lives in CTA i % CLUSTER, run by its thread i / CLUSTER, with
// its simulator state in that CTA's shared memory: the serial simulator work is spread over the
// cluster's SMs instead of queueing on one. Owners broadcast the state rows (and the decision bar).
//
// Bindings, uniforms and outputs: as collect_dqn.cu. Launch: 1-D grid of CLUSTER * ceil(N /
// TILE_E) blocks of WG_X threads in clusters of (CLUSTER, 1, 1), DYN_SMEM_BYTES of dynamic shared
// memory (the plan below; the descriptor computes the same number).
//
// Exchange (constant CLUSTER_PULL): 0 (default) a CTA pushes each output it computes into every
// CTA's buffer (4-byte remote stores); 1 it writes its outputs locally and, after the phase's
// cluster barrier, every CTA pulls the other CTAs' columns with 16-byte remote loads (4x fewer
// remote transactions, a local barrier more). Same values either way.
//
// Numerics: f32 exact only: acc = bias, then acc = f32(acc + f32(w * x)) for i ascending, exactly
// the exact path of mlp_tile.cuh, so every output is bit-identical to the TS reference.
#define COLLECT_TF32 0
#define COLLECT_THREADS WG_X
#define COLLECT_DYN_SMEM
#define COLLECT_CLUSTER
#ifndef CLUSTER_PULL
#define CLUSTER_PULL 0
#endif

#include "collect_io.cuh"
#include "collect_dqn_step.cuh"
#include "collect_nets.cuh"
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
// Row groups of a layer task: the most (a power of two dividing E) that keep every (output, group)
// task on its own thread; a thread accumulates E / groups rows of one output.
__host__ __device__ constexpr int slice_groups(int out) {
  int g = 1;
  while (E % (2 * g) == 0 && 2 * g * slice_rows(out) <= T) g *= 2;
  return g;
}

// The fused layers: hidden = value.0 (outputs 0..127) ++ advantage.0 (128..255), both on the trunk
// row; out = value.1 (output 0, reading hidden 0..127) ++ advantage.1 (1..45, reading 128..255).
constexpr int OUT_Q = 1 + NUM_ACTIONS;

// Shared-memory plan (floats). Weight slices: one dueling net (trunk 0, trunk 1, hidden, out).
constexpr int NW_S0 = 0;
constexpr int NW_S1 = NW_S0 + slice_floats(STATE_DIM, 256);
constexpr int NW_H = NW_S1 + slice_floats(256, 256);
constexpr int NW_O = NW_H + slice_floats(256, 256);
constexpr int NW_SIZE = NW_O + slice_floats(128, OUT_Q);
constexpr int SM_WQ = 0;
constexpr int SM_WT = SM_WQ + NW_SIZE;
constexpr int SM_WC0 = SM_WT + NW_SIZE;
constexpr int SM_WC1 = SM_WC0 + slice_floats(CNet::IN, CNet::HIDDEN);
constexpr int SM_END_W = SM_WC1 + slice_floats(CNet::HIDDEN, CNet::OUT);
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
constexpr int SM_Q = align4(SM_VT + E * LD_VQ);
// The owners' target Q rows (apart from SM_Q, which the next step's first phase rewrites unsynchronised).
constexpr int SM_QT = align4(SM_Q + E * LD_Q);
constexpr int SM_CI = align4(SM_QT + E * LD_Q);
constexpr int SM_CH = align4(SM_CI + E * LD_CURIOSITY);
constexpr int SM_CO = align4(SM_CH + E * LD_CH);
// Integers stored in float slots: each episode's decision bar (broadcast) and action (local).
constexpr int SM_BAR = align4(SM_CO + E * LD_CO);
constexpr int SM_ACTION = align4(SM_BAR + E);
constexpr int SM_EPISODES = align4(SM_ACTION + E);
constexpr int SM_FLOATS = align4(SM_EPISODES + EPC * (int)(sizeof(Episode) / 4));
static_assert(sizeof(Episode) % 4 == 0, "Episode is 4-byte fields");
// The descriptor (src/kernels/collect_dqn.ts cudaClusterSharedBytes) sizes the launch from the same plan.
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "collect_dqn_cluster: DYN_SMEM_BYTES differs from the shared-memory plan");
#ifndef FOXHUNT_EMU
static_assert(DYN_SMEM_BYTES <= 227 * 1024,
              "collect_dqn_cluster: the plan exceeds 227 KiB of shared memory (more CTAs per cluster or fewer episodes)");
#endif

// Copies this CTA's slice of a layer (rows j < SPLIT from W1/B1, the rest from W2/B2 at j - SPLIT).
template <int In, int Out, int SPLIT, int W1, int B1, int W2, int B2>
COLLECT_FN void load_slice(const float* __restrict__ nets, float* ws, unsigned rank) {
  constexpr int SL = slice_rows(Out), LDW = slice_ldw(In);
  const int j0 = (int)rank * SL;
  for (int task = threadIdx.x; task < SL * In; task += T) {
    const int jj = task / In, i = task % In, j = j0 + jj;
    if (j < Out) ws[jj * LDW + i] = ldg1(nets + (j < SPLIT ? W1 + j * In : W2 + (j - SPLIT) * In) + i);
  }
  for (int jj = threadIdx.x; jj < SL; jj += T) {
    const int j = j0 + jj;
    if (j < Out) ws[SL * LDW + jj] = ldg1(nets + (j < SPLIT ? B1 + j : B2 + j - SPLIT));
  }
}

template <int Base>
COLLECT_FN void load_dueling(const float* __restrict__ nets, float* ws, unsigned rank) {
  using L = Dueling<HEAD_PLAIN, Base>;
  load_slice<STATE_DIM, 256, 256, L::S0_W, L::S0_B, 0, 0>(nets, ws + NW_S0, rank);
  load_slice<256, 256, 256, L::S1_W, L::S1_B, 0, 0>(nets, ws + NW_S1, rank);
  load_slice<256, 256, 128, L::V0_W, L::V0_B, L::A0_W, L::A0_B>(nets, ws + NW_H, rank);
  load_slice<128, OUT_Q, 1, L::V1_W, L::V1_B, L::A1_W, L::A1_B>(nets, ws + NW_O, rank);
}

// One layer over the cluster: this CTA's outputs for all E rows of x (rows j >= SPLIT read the
// input from column XOFF2), pushed into y of every CTA (pull mode: into its own y only). The caller
// ends the phase with end_phase.
template <int In, int Out, int Act, int SPLIT, int XOFF2>
COLLECT_FN void cluster_layer(const float* ws, const float* x, int ldx, float* y, int ldy, unsigned rank) {
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
#if CLUSTER_PULL
#pragma unroll
    for (int r = 0; r < RPG; r++) y[(r0 + r) * ldy + j] = activate<Act>(acc[r]);
#else
    // Start with a different peer per CTA so the pushes spread over the cluster.
    for (int k = 0; k < C; k++) {
      float* yd = cluster_map(y, (rank + (unsigned)k) % C);
#pragma unroll
      for (int r = 0; r < RPG; r++) yd[(r0 + r) * ldy + j] = activate<Act>(acc[r]);
    }
#endif
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
  cluster_sync();
#if CLUSTER_PULL
  gather<Out>(y, ldy, rank);
  if (y2) gather<Out>(y2, ldy, rank);
  block_sync();
#endif
}

// Layer `k` (0..3) of one dueling net: states x -> a -> b -> a -> value ++ advantages va, every row
// in every CTA once the phase's cluster barrier has passed.
COLLECT_FN void dueling_layer(int k, const float* ws, float* x, float* a, float* b, float* va, unsigned rank) {
  if (k == 0) cluster_layer<STATE_DIM, 256, ACT_LEAKY, 256, 0>(ws + NW_S0, x, LD_STATE, a, LD_TRUNK, rank);
  if (k == 1) cluster_layer<256, 256, ACT_LEAKY, 256, 0>(ws + NW_S1, a, LD_TRUNK, b, LD_TRUNK, rank);
  if (k == 2) cluster_layer<256, 256, ACT_LEAKY, 256, 0>(ws + NW_H, b, LD_TRUNK, a, LD_TRUNK, rank);
  if (k == 3) cluster_layer<128, OUT_Q, ACT_NONE, 1, 128>(ws + NW_O, a, LD_TRUNK, va, LD_VQ, rank);
}

// The online net on SM_X0 -> SM_VA and, if `target`, the target net on SM_XT -> SM_VT, phase by
// phase (4 cluster barriers).
COLLECT_FN void dueling_va(float* smem, bool target, unsigned rank) {
  for (int k = 0; k < 4; k++) {
    if (target) dueling_layer(k, smem + SM_WT, smem + SM_XT, smem + SM_AT, smem + SM_BT, smem + SM_VT, rank);
    dueling_layer(k, smem + SM_WQ, smem + SM_X0, smem + SM_A, smem + SM_B, smem + SM_VA, rank);
    const int out = k == 1 ? SM_B : k == 3 ? SM_VA : SM_A;
    const int tout = k == 1 ? SM_BT : k == 3 ? SM_VT : SM_AT;
    if (k < 3)
      end_phase<256>(smem + out, LD_TRUNK, rank, target ? smem + tout : nullptr);
    else
      end_phase<OUT_Q>(smem + out, LD_VQ, rank, target ? smem + tout : nullptr);
  }
}

// Q of one row from value ++ advantages (forward.ts forwardDueling): f32(f32(V + A[a]) - mean(A)).
COLLECT_DEVICE void q_row(const float* va, float* q) {
  const float mean = advantage_mean(va + 1);
  for (int k = 0; k < NUM_ACTIONS; k++) q[k] = fsub(fadd(va[0], va[1 + k]), mean);
}

// An episode's state row into buffer `at` (SM_X0 or SM_XT) of every CTA (zeros for episodes past N),
// with the decision bar for SM_X0; `out_states`, if not null, receives the 54 floats.
COLLECT_DEVICE void broadcast_state(float* smem, int at, int i, const Episode& ep, const Market& m, bool active,
                                    float* out_states) {
  float* row = smem + at + i * LD_STATE;
  if (active) build_state(ep, m, row);
  for (int k = active ? STATE_DIM : 0; k < LD_STATE; k++) row[k] = 0.0f;
  if (active && out_states)
    for (int k = 0; k < STATE_DIM; k++) out_states[k] = row[k];
  const int bar = active ? ep.bar : 0;
  for (int c = 0; c < C; c++) {
    float* peer = cluster_map(smem, (unsigned)c);
    if (peer != smem)
      for (int k = 0; k < STATE_DIM; k++) peer[at + i * LD_STATE + k] = row[k];
    if (at == SM_X0) reinterpret_cast<int*>(peer + SM_BAR)[i] = bar;
  }
}

extern "C" __global__ void collect_dqn_cluster(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const unsigned rank = cluster_rank();
  const unsigned long long base = flat_block_id() / C * E;
  // This thread's episode, if it owns one: cluster episode i = thread * C + rank.
  const int i = (int)threadIdx.x * C + (int)rank;
  const bool owner = (int)threadIdx.x < EPC && i < E;
  const unsigned long long e64 = base + (owner ? i : 0);
  const bool active = owner && e64 < u.n;
  const unsigned e = (unsigned)e64;
  Episode& ep = reinterpret_cast<Episode*>(smem + SM_EPISODES)[owner ? threadIdx.x : 0];
  int* window = div_window + (unsigned long long)e * p.diversity_window;
  if (active) load_episode(ep, env_f, env_i, e);
  int* bars = reinterpret_cast<int*>(smem + SM_BAR);
  int* actions = reinterpret_cast<int*>(smem + SM_ACTION);

  load_dueling<NET_Q_BASE>(nets, smem + SM_WQ, rank);
  load_dueling<NET_T_BASE>(nets, smem + SM_WT, rank);
  load_slice<CNet::IN, CNet::HIDDEN, CNet::HIDDEN, CNet::L0_W, CNet::L0_B, 0, 0>(nets, smem + SM_WC0, rank);
  load_slice<CNet::HIDDEN, CNet::OUT, CNet::OUT, CNet::L1_W, CNet::L1_B, 0, 0>(nets, smem + SM_WC1, rank);
  // Every CTA of the cluster is running (its shared memory may be written) past this barrier.
  cluster_sync();

  Out o = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  // The first decision's states and their online Q.
  if (owner) broadcast_state(smem, SM_X0, i, ep, m, active, active ? out_f_at(o, OUT_F_STATES, STATE_DIM) : nullptr);
  cluster_sync();
  dueling_va(smem, false, rank);
  for (unsigned l = 0; l < u.steps; l++, o.idx++) {
    const unsigned g = u.stepBase + l;
    // Every CTA: Q rows, actions and curiosity inputs of all E episodes (identical in each CTA).
    for (int r = threadIdx.x; r < E; r += T) q_row(smem + SM_VA + r * LD_VQ, smem + SM_Q + r * LD_Q);
    block_sync();
    for (int r = threadIdx.x; r < E; r += T) {
      const bool on = base + r < u.n;
      const int a = on ? choose_action(smem + SM_Q + r * LD_Q, (unsigned)(base + r), g, u.epsilon, p.key0, p.key1) : 0;
      actions[r] = a;
      if (u.curiosity) curiosity_input(smem + SM_CI + r * LD_CURIOSITY, LD_CURIOSITY, features, bars[r], action_category(a));
    }
    block_sync();
    if (u.curiosity) {
      cluster_layer<CNet::IN, CNet::HIDDEN, ACT_LEAKY, CNet::HIDDEN, 0>(smem + SM_WC0, smem + SM_CI, LD_CURIOSITY,
                                                                       smem + SM_CH, LD_CH, rank);
      end_phase<CNet::HIDDEN>(smem + SM_CH, LD_CH, rank);
      cluster_layer<CNet::HIDDEN, CNet::OUT, ACT_NONE, CNet::OUT, 0>(smem + SM_WC1, smem + SM_CH, LD_CH, smem + SM_CO,
                                                                     LD_CO, rank);
      end_phase<CNet::OUT>(smem + SM_CO, LD_CO, rank);
    }

    StepOut so;
    int action = 0;
    float q_sel = 0.0f;
    if (active) {
      action = actions[i];
      q_sel = smem[SM_Q + i * LD_Q + action];
      const float mse = u.curiosity ? curiosity_mse(smem + SM_CO + i * LD_CO, features, ep.bar) : 0.0f;
      env_step(ep, m, p, window, action, mse, u.curiosity != 0, so);
    }
    if (owner) {
      broadcast_state(smem, SM_XT, i, ep, m, active, active ? out_f_at(o, OUT_F_NEXT_STATES, STATE_DIM) : nullptr);
      if (active) {
        write_step(o, so, action);
        restart_if_ended(ep, m, p, window, e, so);
      }
      // The next decision's state (the restarted episode's first, or s' again).
      Out next = o;
      next.idx++;
      const bool more = active && l + 1 < u.steps;
      broadcast_state(smem, SM_X0, i, ep, m, active, more ? out_f_at(next, OUT_F_STATES, STATE_DIM) : nullptr);
    }
    cluster_sync();
    dueling_va(smem, true, rank);

    if (active) {
      float* q = smem + SM_QT + i * LD_Q;
      q_row(smem + SM_VT + i * LD_VQ, q);
      *out_f_at(o, OUT_F_TD_ERRORS, 1) = td_error(so, q, u.gamma, q_sel);
    }
  }
  if (active) store_episode(ep, env_f, env_i, e);
  // No CTA leaves while a peer may still write into its shared memory.
  cluster_sync();
}
