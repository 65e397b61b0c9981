// validate_dqn_cluster: validate_dqn (src/kernels/validate_dqn.ts, the validation backtest of a
// DQN-family greedy policy) on one sm_90 thread-block cluster of CLUSTER CTAs: the CUDA twin of the
// TS reference and of wgsl/validate_dqn.wgsl. Same bindings, uniforms, chunks and outputs: one
// episode from splitStart, `steps` decisions, steps [stepBegin, stepEnd) of them a launch (rank 0
// resumes the episode from env_f / env_i and leaves it there: validate_env.cuh).
//
// Why: the online net (600 KB plain, 1.8 MB C51) does not fit one block's shared memory, and one
// block reading its weights from L2 at every bar waits on load latency (53 us a bar plain, 1.3 ms
// IQN). Here every CTA keeps a 1/CLUSTER slice of each layer's OUTPUT neurons (rows and biases) in
// its shared memory, loaded at the start of every launch (shared memory does not outlive one: at
// most ~230 KB a CTA from L2, estimated at a few microseconds against a launch's 512 bars of 8 us
// and more); per bar a layer's outputs are computed by the CTA that owns them from its full copy
// of the layer's input, and pushed into every CTA's input buffer for the next layer (st.async into
// peers' shared memory, counted on the receiver's mbarrier).
//
// Per bar (ROWS = the act taus K for IQN, else 1):
//   states   rank 0 builds the state (thread 0: portfolio features and the stop flag; the market
//            features of the episode's bar, loaded during the previous bar) and pushes it to every
//            CTA;
//   S0       the trunk's first layer 54 -> 256 in every CTA from its own whole copy (transposed,
//            [input][output]): no exchange;
//   S1       the trunk's second layer 256 -> 256, pushed to every CTA;
//   IQN      every CTA forms its K rows h_t = trunk * relu(phi_t) itself (phi_t = tau_embed of the
//            cosine features of tau_t = f32((t + 0.5) / K), computed once per launch);
//   H        value.0 ++ advantage.0 (256 outputs) on each of the ROWS rows, pushed to every CTA;
//   O        value.1 ++ advantage.1 (ATOMS + 45 * ATOMS outputs; value rows read hidden columns
//            0 .. 127, advantage rows 128 .. 255) on each row, pushed to rank 0 only;
//   act      rank 0: the mean of A over actions per row and atom, Q per action (plain: V + A -
//            mean; C51: the expectation over the support of the softmax over atoms, c51_q on the
//            whole block; IQN: the plain Q of each tau summed in tau order, over K), thread 0
//            takes the first argmax and steps the simulator (validate_env.cuh).
// Every mbarrier serves one exchange a bar; thread 0 posts all of a bar's expected bytes after a
// block barrier, so no thread is still waiting on the previous bar's phase. A peer can push bar
// l + 1's data only after rank 0 has every O output of bar l, so every read of bar l's buffers is
// over by then. A collapse stops every CTA at the next bar (the flag travels with the state).
//
// Numerics: the reference's f32 arithmetic (src/nets/forward.ts: bias first, then inputs in order,
// never fused) except expf and cosf, a few ulp from the reference's correctly rounded exp and cos:
// plain Q agree bit for bit, C51 and IQN Q in their last bits.
//
// Launch: CLUSTER blocks of WG_X threads, one cluster, DYN_SMEM_BYTES of dynamic shared memory (the
// plan below; src/kernels/validate_dqn.ts clusterPlanFloats computes the same).
#define COLLECT_THREADS WG_X
#define COLLECT_DYN_SMEM
#define COLLECT_CLUSTER

#include "validate_env.cuh"

#define S0_W NET_Q_SHARED_LAYERS_0_W
#define S0_B NET_Q_SHARED_LAYERS_0_B
#define S0_OUT NET_Q_SHARED_LAYERS_0_OUT
#define S1_W NET_Q_SHARED_LAYERS_1_W
#define S1_B NET_Q_SHARED_LAYERS_1_B
#define S1_OUT NET_Q_SHARED_LAYERS_1_OUT
#define V0_W NET_Q_VALUE_STREAM_0_W
#define V0_B NET_Q_VALUE_STREAM_0_B
#define V0_OUT NET_Q_VALUE_STREAM_0_OUT
#define V1_W NET_Q_VALUE_STREAM_1_W
#define V1_B NET_Q_VALUE_STREAM_1_B
#define A0_W NET_Q_ADVANTAGE_STREAM_0_W
#define A0_B NET_Q_ADVANTAGE_STREAM_0_B
#define A0_OUT NET_Q_ADVANTAGE_STREAM_0_OUT
#define A1_W NET_Q_ADVANTAGE_STREAM_1_W
#define A1_B NET_Q_ADVANTAGE_STREAM_1_B
#define A1_OUT NET_Q_ADVANTAGE_STREAM_1_OUT
// IQN's tau_embed (offsets 0 and never read by the other heads).
#define T_W NET_Q_TAU_EMBED_W
#define T_B NET_Q_TAU_EMBED_B
#define HEAD_C51 1
#define HEAD_IQN 2

constexpr int C = CLUSTER;
constexpr int T = WG_X;
constexpr int R = ROWS;
constexpr bool IQN = HEAD == HEAD_IQN;

static_assert(WG_Y == 1 && WG_Z == 1 && T >= MARKET_FEATURES && T >= NUM_ACTIONS, "validate_dqn_cluster: 1-D blocks");
static_assert(NET_Q_SHARED_LAYERS_0_IN == STATE_DIM && NET_Q_SHARED_LAYERS_1_IN == S0_OUT &&
                  NET_Q_VALUE_STREAM_0_IN == S1_OUT && NET_Q_ADVANTAGE_STREAM_0_IN == S1_OUT &&
                  NET_Q_VALUE_STREAM_1_IN == V0_OUT && NET_Q_ADVANTAGE_STREAM_1_IN == A0_OUT && V0_OUT == A0_OUT &&
                  NET_Q_VALUE_STREAM_1_OUT == ATOMS && A1_OUT == NUM_ACTIONS * ATOMS && HEAD_OUT == ATOMS + A1_OUT,
              "validate_dqn_cluster: a dueling layout");
static_assert(R == (IQN ? IQN_TAUS : 1), "validate_dqn_cluster: ROWS is IQN's act taus, else 1");

__host__ __device__ constexpr int al4(int floats) { return (floats + 3) / 4 * 4; }
// A layer's slice: SL rows of LDW floats (16-byte aligned; a stride that is not a multiple of 32
// floats, so threads reading different rows at one input hit different banks), then SL biases.
__host__ __device__ constexpr int slice_rows(int out) { return (out + C - 1) / C; }
__host__ __device__ constexpr int slice_ldw(int in) { return al4(in) % 32 == 0 ? al4(in) + 4 : al4(in); }
__host__ __device__ constexpr int slice_floats(int in, int out) {
  return slice_rows(out) * slice_ldw(in) + al4(slice_rows(out));
}

constexpr int H_OUT = V0_OUT + A0_OUT;
constexpr int O_IN = V0_OUT;
constexpr int MSG = al4(STATE_DIM + 1);
constexpr int LD_T = slice_ldw(S1_OUT);
constexpr int LD_PHI = al4(S1_OUT);
constexpr int LD_HID = slice_ldw(H_OUT);
constexpr int LD_HEADS = al4(HEAD_OUT);

// Shared plan (floats): S0 whole (transposed, then its biases), the weight slices (S1, H, O), the received state (STATE_DIM floats
// then the stop flag), rank 0's outgoing state, the trunk's two layers, IQN's h rows, phi rows and
// cosine features, the hidden rows, the heads (rank 0), the mean over actions per row and atom, Q,
// the stop flag (int), the mbarriers.
constexpr int W_S0 = 0;
constexpr int W_S1 = W_S0 + STATE_DIM * S0_OUT + al4(S0_OUT);
constexpr int W_H = W_S1 + slice_floats(S0_OUT, S1_OUT);
constexpr int W_O = W_H + slice_floats(S1_OUT, H_OUT);
constexpr int SM_X = W_O + slice_floats(O_IN, HEAD_OUT);
constexpr int SM_MSG = SM_X + MSG;
constexpr int SM_TA = SM_MSG + MSG;
constexpr int SM_TB = SM_TA + al4(S0_OUT);
constexpr int SM_HIN = SM_TB + al4(S1_OUT);
constexpr int SM_PHI = SM_HIN + (IQN ? R * LD_T : 0);
constexpr int SM_COS = SM_PHI + (IQN ? R * LD_PHI : 0);
constexpr int SM_HID = SM_COS + (IQN ? al4(R * IQN_EMBED) : 0);
constexpr int SM_HEADS = SM_HID + R * LD_HID;
constexpr int SM_MEAN = SM_HEADS + R * LD_HEADS;
constexpr int SM_Q = SM_MEAN + al4(R * ATOMS);
constexpr int SM_STOP = SM_Q + al4(NUM_ACTIONS);
constexpr int MB_STATES = 0, MB_S1 = 1, MB_H = 2, MB_O = 3, MB_COUNT = 4;
constexpr int SM_MBAR = SM_STOP + 4;
constexpr int SM_FLOATS = SM_MBAR + al4(2 * MB_COUNT);
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "validate_dqn_cluster: DYN_SMEM_BYTES differs from the shared-memory plan");
#ifndef FOXHUNT_EMU
static_assert(DYN_SMEM_BYTES <= 227 * 1024, "validate_dqn_cluster: the plan exceeds 227 KiB (more CTAs per cluster)");
#endif

COLLECT_DEVICE float leaky(float a) { return a > 0.0f ? a : fmul(a, 0.01f); }

// This CTA's slice of a layer into ws: rows j < SPLIT from (W1, B1), the rest from (W2, B2) at
// j - SPLIT, In inputs each (once per launch).
template <int In, int Out, int SPLIT, int W1, int B1, int W2, int B2>
COLLECT_FN void load_slice(const float* __restrict__ net, float* ws, unsigned rank) {
  constexpr int SL = slice_rows(Out), LDW = slice_ldw(In);
  const int j0 = (int)rank * SL;
  for (int t = threadIdx.x; t < SL * In; t += T) {
    const int jj = t / In, k = t % In, j = j0 + jj;
    ws[jj * LDW + k] = j < Out ? ldg1(net + (j < SPLIT ? W1 + j * In : W2 + (j - SPLIT) * In) + k) : 0.0f;
  }
  for (int jj = threadIdx.x; jj < SL; jj += T) {
    const int j = j0 + jj;
    ws[SL * LDW + jj] = j < Out ? ldg1(net + (j < SPLIT ? B1 + j : B2 + j - SPLIT)) : 0.0f;
  }
}

// Row groups of a layer's tasks: the most (a power of two dividing Rows) that keep every (output,
// group) task on its own thread; a thread runs Rows / groups rows of one output side by side.
__host__ __device__ constexpr int row_groups(int sl, int rows) {
  int g = 1;
  while (rows % (2 * g) == 0 && 2 * g * sl <= T) g *= 2;
  return g;
}

// One layer over the cluster: this CTA's outputs on Rows rows of x (row stride LDX; outputs j >=
// SPLIT read from column XOFF2), each pushed into column j of its row (stride LDY) of y in every CTA
// (ALL) or in rank 0's only, counted on that CTA's mbarrier at bar's offset.
template <int In, int Out, bool LEAKY, int SPLIT, int XOFF2, int Rows, int LDX, int LDY, bool ALL>
COLLECT_FN void cluster_layer(const float* ws, const float* x, float* y, unsigned rank, float* bar) {
  constexpr int SL = slice_rows(Out), LDW = slice_ldw(In);
  constexpr int G = row_groups(SL, Rows), RPG = Rows / G;
  constexpr int IN4 = In / 4 * 4;
  const int j0 = (int)rank * SL;
  const float* bias = ws + SL * LDW;
  if constexpr (Rows > 1 && ALL && SL % 4 == 0 && Out % SL == 0 && In % 4 == 0 && SPLIT % 4 == 0) {
    // Many rows (IQN's taus): a task is four consecutive outputs of one row, pushed as one 16-byte
    // store per CTA (a quarter of the stores of one output a task).
    constexpr int QD = SL / 4;
    for (int task = threadIdx.x; task < QD * Rows; task += T) {
      const int jj = task % QD * 4, row = task / QD, j = j0 + jj;
      const float* w = ws + jj * LDW;
      const float* xr = x + row * LDX + (j < SPLIT ? 0 : XOFF2);
      float a0 = bias[jj], a1 = bias[jj + 1], a2 = bias[jj + 2], a3 = bias[jj + 3];
#pragma unroll 2
      for (int i = 0; i < In; i += 4) {
        const float4 x4 = lds4(xr + i);
        const float4 w0 = lds4(w + i), w1 = lds4(w + LDW + i), w2 = lds4(w + 2 * LDW + i), w3 = lds4(w + 3 * LDW + i);
        a0 = fadd(fadd(fadd(fadd(a0, fmul(w0.x, x4.x)), fmul(w0.y, x4.y)), fmul(w0.z, x4.z)), fmul(w0.w, x4.w));
        a1 = fadd(fadd(fadd(fadd(a1, fmul(w1.x, x4.x)), fmul(w1.y, x4.y)), fmul(w1.z, x4.z)), fmul(w1.w, x4.w));
        a2 = fadd(fadd(fadd(fadd(a2, fmul(w2.x, x4.x)), fmul(w2.y, x4.y)), fmul(w2.z, x4.z)), fmul(w2.w, x4.w));
        a3 = fadd(fadd(fadd(fadd(a3, fmul(w3.x, x4.x)), fmul(w3.y, x4.y)), fmul(w3.z, x4.z)), fmul(w3.w, x4.w));
      }
      const float4 v = LEAKY ? make_float4(leaky(a0), leaky(a1), leaky(a2), leaky(a3)) : make_float4(a0, a1, a2, a3);
      for (int k = 0; k < C; k++) st_async4(y + row * LDY + j, (rank + (unsigned)k) % C, v, bar);
    }
  } else {
    for (int task = threadIdx.x; task < SL * G; task += T) {
      const int jj = task / G, r0 = (task % G) * RPG, j = j0 + jj;
      if (j >= Out) break;
      const float* w = ws + jj * LDW;
      const float* xr = x + r0 * LDX + (j < SPLIT ? 0 : XOFF2);
      float acc[RPG];
#pragma unroll
      for (int q = 0; q < RPG; q++) acc[q] = bias[jj];
#pragma unroll 4
      for (int i = 0; i < IN4; i += 4) {
        const float4 w4 = lds4(w + i);
#pragma unroll
        for (int q = 0; q < RPG; q++) {
          const float4 x4 = lds4(xr + q * LDX + i);
          acc[q] = fadd(acc[q], fmul(w4.x, x4.x));
          acc[q] = fadd(acc[q], fmul(w4.y, x4.y));
          acc[q] = fadd(acc[q], fmul(w4.z, x4.z));
          acc[q] = fadd(acc[q], fmul(w4.w, x4.w));
        }
      }
      for (int i = IN4; i < In; i++) {
#pragma unroll
        for (int q = 0; q < RPG; q++) acc[q] = fadd(acc[q], fmul(w[i], xr[q * LDX + i]));
      }
#pragma unroll
      for (int q = 0; q < RPG; q++) {
        const float v = LEAKY ? leaky(acc[q]) : acc[q];
        float* at = y + (r0 + q) * LDY + j;
        if (ALL) {
          for (int k = 0; k < C; k++) st_async1(at, (rank + (unsigned)k) % C, v, bar);
        } else {
          st_async1(at, 0u, v, bar);
        }
      }
    }
  }
}

// Q of action a from one row's V and A (heads) and its mean of A over actions per atom (plain
// and IQN; C51 takes c51_q).
COLLECT_DEVICE float q_of(int a, const float* heads, const float* mean) {
  return fsub(fadd(heads[0], heads[ATOMS + a]), mean[0]);
}

// C51 Q of every action into q (rank 0's whole block): the expectation over the support of the
// softmax over atoms of V + A - mean A, with the bits of the one-thread loop (src/nets/forward.ts
// forwardC51). The logits, the exponentials and the terms e_z / s * atom_z run on every thread; the
// max per action as C51_PARTS partial maxima (a max does not depend on its order), then the two sums
// over atoms one action a thread in atom order. The logits, exponentials and terms overwrite A; part
// (C51_PARTS floats an action) is scratch; q holds each action's max, then its sum, then its Q.
constexpr int C51_PARTS = T / NUM_ACTIONS < 8 ? T / NUM_ACTIONS : 8;
constexpr int C51_SPAN = (ATOMS + C51_PARTS - 1) / C51_PARTS;
static_assert(HEAD != HEAD_C51 || NUM_ACTIONS * C51_PARTS <= LD_HID, "validate_dqn_cluster: C51's partial maxima fit the hidden rows");
COLLECT_FN void c51_q(float* heads, const float* mean, float* q, float* part, float vmin, float vmax) {
  float* l = heads + ATOMS;
  const int r = threadIdx.x;
  for (int t = r; t < NUM_ACTIONS * ATOMS; t += T) {
    const int z = t % ATOMS;
    l[t] = fsub(fadd(heads[z], l[t]), mean[z]);
  }
  block_sync();
  for (int t = r; t < NUM_ACTIONS * C51_PARTS; t += T) {
    const int a = t / C51_PARTS, z0 = (t % C51_PARTS) * C51_SPAN;
    const int z1 = z0 + C51_SPAN < ATOMS ? z0 + C51_SPAN : ATOMS;
    float mx = -__int_as_float(0x7f800000);
    for (int z = z0; z < z1; z++) {
      const float logit = l[a * ATOMS + z];
      if (logit > mx) mx = logit;
    }
    part[t] = mx;
  }
  block_sync();
  if (r < NUM_ACTIONS) {
    float mx = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < C51_PARTS; k++) {
      const float m = part[r * C51_PARTS + k];
      if (m > mx) mx = m;
    }
    q[r] = mx;
  }
  block_sync();
  for (int t = r; t < NUM_ACTIONS * ATOMS; t += T) l[t] = expf(fsub(l[t], q[t / ATOMS]));
  block_sync();
  if (r < NUM_ACTIONS) {
    const float* e = l + r * ATOMS;
    float s = 0.0f;
#pragma unroll
    for (int z = 0; z < ATOMS; z++) s = fadd(s, e[z]);
    q[r] = s;
  }
  block_sync();
  const float delta = fdiv(fsub(vmax, vmin), (float)(ATOMS > 1 ? ATOMS - 1 : 1));
  for (int t = r; t < NUM_ACTIONS * ATOMS; t += T) {
    const int z = t % ATOMS;
    l[t] = fmul(fdiv(l[t], q[t / ATOMS]), fadd(vmin, fmul((float)z, delta)));
  }
  block_sync();
  if (r < NUM_ACTIONS) {
    const float* w = l + r * ATOMS;
    float qa = 0.0f;
#pragma unroll
    for (int z = 0; z < ATOMS; z++) qa = fadd(qa, w[z]);
    q[r] = qa;
  }
}

extern "C" __global__ void validate_dqn_cluster(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const unsigned rank = cluster_rank();
  const int r = threadIdx.x;
  const unsigned steps = u.steps;
  const float* __restrict__ net = nets + u.netBase;
  float* mbar = smem + SM_MBAR;
  volatile int* stop = reinterpret_cast<volatile int*>(smem + SM_STOP);
  // One arrival per phase (thread 0's expect_tx); the bytes do the rest.
  if (r == 0) {
    for (int k = 0; k < MB_COUNT; k++) mbar_init(mbar + 2 * k, 1);
    mbar_init_fence();
  }
  for (int t = r; t < STATE_DIM * S0_OUT; t += T) smem[W_S0 + t % STATE_DIM * S0_OUT + t / STATE_DIM] = ldg1(net + S0_W + t);
  for (int j = r; j < S0_OUT; j += T) smem[W_S0 + STATE_DIM * S0_OUT + j] = ldg1(net + S0_B + j);
  load_slice<S0_OUT, S1_OUT, S1_OUT, S1_W, S1_B, 0, 0>(net, smem + W_S1, rank);
  load_slice<S1_OUT, H_OUT, V0_OUT, V0_W, V0_B, A0_W, A0_B>(net, smem + W_H, rank);
  load_slice<O_IN, HEAD_OUT, ATOMS, V1_W, V1_B, A1_W, A1_B>(net, smem + W_O, rank);
  if constexpr (IQN) {
    // The K x embed cosine features, then phi_t = relu(tau_embed(cos_t)) for every tau (this CTA's
    // own copy: bar-independent).
    const float pi = (float)3.14159265358979323846;
    float* cos_tau = smem + SM_COS;
    for (int k = r; k < R * IQN_EMBED; k += T) {
      const int t = k / IQN_EMBED;
      const float tau = fdiv((float)(2 * t + 1), (float)(2 * R));
      cos_tau[k] = cosf(fmul(fmul((float)(k % IQN_EMBED), pi), tau));
    }
    block_sync();
    for (int k = r; k < R * S1_OUT; k += T) {
      const int t = k / S1_OUT, j = k % S1_OUT;
      const float* w = net + T_W + j * IQN_EMBED;
      float acc = ldg1(net + T_B + j);
      for (int i = 0; i < IQN_EMBED; i++) acc = fadd(acc, fmul(ldg1(w + i), cos_tau[t * IQN_EMBED + i]));
      smem[SM_PHI + t * LD_PHI + j] = acc > 0.0f ? acc : 0.0f;
    }
  }
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  Episode ep{};
  if (rank == 0 && r == 0) validate_open(ep, m, p, div_window, env_f, env_i, u.stepBegin, stop);
  // Every CTA is running, its slices loaded and its mbarriers initialised, past this barrier.
  cluster_sync();

  float* heads = smem + SM_HEADS;
  float* mean = smem + SM_MEAN;
  float* q = smem + SM_Q;
  // Rank 0, threads < MARKET_FEATURES: the market feature of the next bar (bar + 1 after every step).
  const unsigned end = u.stepEnd;
  float next_f = 0.0f;
  if (rank == 0 && r < MARKET_FEATURES) next_f = features[(p.split_start + (int)u.stepBegin) * MARKET_FEATURES + r];
  unsigned parity = 0;
  unsigned l = u.stepBegin;
  for (;; l++) {
    if (l >= end) break;
    block_sync();
    if (r == 0) {
      mbar_expect(mbar + 2 * MB_STATES, 4 * MSG);
      mbar_expect(mbar + 2 * MB_S1, 4 * S1_OUT);
      mbar_expect(mbar + 2 * MB_H, 4 * R * H_OUT);
      if (rank == 0) mbar_expect(mbar + 2 * MB_O, 4 * R * HEAD_OUT);
    }
    if (rank == 0) {
      float* msg = smem + SM_MSG;
      if (r == 0) {
        state_portfolio(ep, msg + MARKET_FEATURES);
        for (int k = STATE_DIM; k < MSG; k++) msg[k] = 0.0f;
        msg[STATE_DIM] = *stop != 0 ? 1.0f : 0.0f;
      }
      // The episode is at bar splitStart + l (each step moves it one bar on; a collapse stops it).
      const int bar = p.split_start + (int)l;
      if (r < MARKET_FEATURES) msg[r] = next_f;
      block_sync();
      for (int t = r; t < C * (MSG / 4); t += T) {
        const int k = t % (MSG / 4);
        st_async4(smem + SM_X + 4 * k, (unsigned)(t / (MSG / 4)), lds4(msg + 4 * k), mbar + 2 * MB_STATES);
      }
      // The next bar's features load while this bar's layers run (the launch's last step's next
      // bar is inside the split).
      if (r < MARKET_FEATURES && l + 1 < end) next_f = features[(bar + 1) * MARKET_FEATURES + r];
    }
    mbar_wait(mbar + 2 * MB_STATES, parity);
    if (smem[SM_X + STATE_DIM] != 0.0f) break;
    for (int j = r; j < S0_OUT; j += T) {
      const float* w = smem + W_S0 + j;
      float acc = w[STATE_DIM * S0_OUT];
#pragma unroll 6
      for (int k = 0; k < STATE_DIM; k++) acc = fadd(acc, fmul(w[k * S0_OUT], smem[SM_X + k]));
      smem[SM_TA + j] = leaky(acc);
    }
    block_sync();
    cluster_layer<S0_OUT, S1_OUT, true, S1_OUT, 0, 1, 0, 0, true>(smem + W_S1, smem + SM_TA, smem + SM_TB, rank,
                                                                 mbar + 2 * MB_S1);
    mbar_wait(mbar + 2 * MB_S1, parity);
    if constexpr (IQN) {
      for (int k = r; k < R * S1_OUT; k += T) {
        const int t = k / S1_OUT, j = k % S1_OUT;
        smem[SM_HIN + t * LD_T + j] = fmul(smem[SM_TB + j], smem[SM_PHI + t * LD_PHI + j]);
      }
      block_sync();
    }
    cluster_layer<S1_OUT, H_OUT, true, V0_OUT, 0, R, LD_T, LD_HID, true>(
        smem + W_H, smem + (IQN ? SM_HIN : SM_TB), smem + SM_HID, rank, mbar + 2 * MB_H);
    mbar_wait(mbar + 2 * MB_H, parity);
    cluster_layer<O_IN, HEAD_OUT, false, ATOMS, V0_OUT, R, LD_HID, LD_HEADS, false>(
        smem + W_O, smem + SM_HID, heads, rank, mbar + 2 * MB_O);
    if (rank == 0) {
      mbar_wait(mbar + 2 * MB_O, parity);
      for (int t = r; t < R * ATOMS; t += T) {
        const int row = t / ATOMS, z = t % ATOMS;
        const float* h = heads + row * LD_HEADS;
        float sum = 0.0f;
        for (int a = 0; a < NUM_ACTIONS; a++) sum = fadd(sum, h[ATOMS + a * ATOMS + z]);
        mean[t] = fdiv(sum, (float)NUM_ACTIONS);
      }
      block_sync();
      if constexpr (HEAD == HEAD_C51) {
        // Rank 0's hidden rows are free here: the peers write them again only after the next state.
        c51_q(heads, mean, q, smem + SM_HID, u.vMin, u.vMax);
      } else if (r < NUM_ACTIONS) {
        if constexpr (IQN) {
          float qsum = 0.0f;
          for (int t = 0; t < R; t++) qsum = fadd(qsum, q_of(r, heads + t * LD_HEADS, mean + t));
          q[r] = fdiv(qsum, (float)R);
        } else {
          q[r] = q_of(r, heads, mean);
        }
      }
      block_sync();
      validate_act(ep, m, p, div_window, q, stop, l, steps, out_f, out_i);
    }
    parity ^= 1u;
  }
  if (rank == 0 && r == 0) validate_close(ep, l, end, steps, *stop, env_f, env_i, out_f, out_i);
  // No CTA leaves while a peer may still write into its shared memory.
  cluster_sync();
}
