// validate_dqn: the validation backtest (src/eval/backtest.ts) with a DQN-family greedy policy as
// one launch of one block, the CUDA twin of src/kernels/validate_dqn.ts (bindings, uniforms and
// the output sections there). One episode from splitStart, `steps` decisions; per step the 256
// threads run the online dueling net read from nets + u.netBase: the trunk and both streams'
// hidden layers one output each, the streams' output layers four outputs per thread and task
// (C51: 587 tasks), the mean of the advantages over actions per atom, then per action Q (plain:
// (V + A) - mean; C51: the softmax over atoms of (V + A) - mean and its expectation over the
// support; IQN (HEAD 2): per act tau t < IQN_TAUS the trunk times relu(tau_embed(cosines of
// tau_t)) through the streams and the plain combination, summed over t in order, then divided by
// IQN_TAUS); thread 0 takes the first argmax and steps the simulator (validate_env.cuh). IQN's
// taus are the host's fixed quadrature tau_t = f32((t + 0.5) / K) (eval/policies.ts
// dqnGreedyPolicy: (2t + 1) / 2K correctly rounded) and their IQN_TAUS x IQN_EMBED cosine
// features fill shared memory once per launch.
//
// Numerics: the reference's f32 arithmetic (src/nets/forward.ts; sums bias first then inputs in
// order, never fused) except expf and cosf, a few ulp from the reference's correctly rounded
// exp and cos: plain Q agree bit for bit, C51 and IQN Q in their last bits, so an action only
// where two Q tie that closely.
#define COLLECT_THREADS WG_X

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
// IQN's tau_embed (offsets 0 and never read by the other heads, whose IQN_TAUS = IQN_EMBED = 1).
#define T_W NET_Q_TAU_EMBED_W
#define T_B NET_Q_TAU_EMBED_B
#define HEAD_C51 1
#define HEAD_IQN 2

static_assert(WG_X >= S0_OUT && WG_X >= S1_OUT && WG_X >= V0_OUT + A0_OUT && WG_X >= MARKET_FEATURES &&
                  WG_Y == 1 && WG_Z == 1,
              "validate_dqn: one thread per output of the trunk's and the streams' hidden layers");
static_assert(NET_Q_SHARED_LAYERS_0_IN == STATE_DIM && NET_Q_VALUE_STREAM_0_IN == S1_OUT &&
                  NET_Q_ADVANTAGE_STREAM_0_IN == S1_OUT && NET_Q_VALUE_STREAM_1_IN == V0_OUT &&
                  NET_Q_ADVANTAGE_STREAM_1_IN == A0_OUT && NET_Q_VALUE_STREAM_1_OUT == ATOMS &&
                  A1_OUT == NUM_ACTIONS * ATOMS && HEAD_OUT == ATOMS + A1_OUT,
              "validate_dqn: a dueling layout");

// Shared plan (words): the layer input (the state, then the trunk's layers in place), the
// streams' hidden layers (value at 0, advantage at V0_OUT), V [ATOMS] then A [45 * ATOMS]
// (action-major), the mean of A over actions per atom, Q, the stop flag and the episode's bar,
// IQN's cosine features (tau-major).
constexpr int SM_X = 0;
constexpr int SM_HID = 256;
constexpr int SM_HEADS = 512;
constexpr int SM_MEAN = SM_HEADS + (HEAD_OUT + 3) / 4 * 4;
constexpr int SM_Q = SM_MEAN + (ATOMS + 3) / 4 * 4;
constexpr int SM_STOP = SM_Q + 48;
constexpr int SM_BAR = SM_STOP + 1;
constexpr int SM_COS = SM_STOP + 4;
constexpr int COS_LEN = IQN_TAUS * IQN_EMBED;
constexpr int SM_FLOATS = SM_COS + COS_LEN;
static_assert(S0_OUT <= 256 && S1_OUT <= 256 && V0_OUT + A0_OUT <= 256 && NUM_ACTIONS <= 48 &&
                  IQN_TAUS >= 1 && IQN_EMBED >= 1 && SM_FLOATS * 4 <= 48 * 1024,
              "validate_dqn: shared plan");

// Tasks of the streams' output layers: groups of four outputs, value stream first.
constexpr int V1_GROUPS = (ATOMS + 3) / 4;
constexpr int A1_GROUPS = (A1_OUT + 3) / 4;

COLLECT_DEVICE float leaky(float a) { return a > 0.0f ? a : fmul(a, 0.01f); }

// Output j of the dense layer at (W, B) over x (weights row-major [n_out, N_IN]). The sizes are
// compile-time so the loads unroll ahead of the add chain, whose order stays the reference's;
// rows of a multiple of 4 floats at a 16-byte boundary load 4 floats at a time (u.netBase % 4 == 0,
// the host checks), a quarter of the load instructions.
template <int W, int B, int N_IN>
COLLECT_DEVICE float dense_out(const float* __restrict__ net, int j, const float* x) {
  float acc = ldg1(net + B + j);
  const float* row = net + W + j * N_IN;
  if constexpr (N_IN % 4 == 0 && W % 4 == 0) {
#pragma unroll 4
    for (int k = 0; k < N_IN; k += 4) {
      const float4 w = ldg4(row + k);
      acc = fadd(acc, fmul(w.x, x[k]));
      acc = fadd(acc, fmul(w.y, x[k + 1]));
      acc = fadd(acc, fmul(w.z, x[k + 2]));
      acc = fadd(acc, fmul(w.w, x[k + 3]));
    }
  } else {
#pragma unroll 8
    for (int k = 0; k < N_IN; k++) acc = fadd(acc, fmul(ldg1(row + k), x[k]));
  }
  return acc;
}

// acc + w . x[0 .. 4) in order.
COLLECT_DEVICE float dot4_in_order(float acc, float4 w, const float* x) {
  acc = fadd(acc, fmul(w.x, x[0]));
  acc = fadd(acc, fmul(w.y, x[1]));
  acc = fadd(acc, fmul(w.z, x[2]));
  return fadd(acc, fmul(w.w, x[3]));
}

// Outputs j .. j + 3 of the dense layer at (W, B) over x into y[0 .. 4): four independent sums,
// each in the reference's order.
template <int W, int B, int N_IN>
COLLECT_DEVICE void dense_out4(const float* __restrict__ net, int j, const float* x, float* y) {
  float a0 = ldg1(net + B + j), a1 = ldg1(net + B + j + 1), a2 = ldg1(net + B + j + 2), a3 = ldg1(net + B + j + 3);
  const float* r0 = net + W + j * N_IN;
  if constexpr (N_IN % 4 == 0 && W % 4 == 0) {
#pragma unroll 2
    for (int k = 0; k < N_IN; k += 4) {
      a0 = dot4_in_order(a0, ldg4(r0 + k), x + k);
      a1 = dot4_in_order(a1, ldg4(r0 + N_IN + k), x + k);
      a2 = dot4_in_order(a2, ldg4(r0 + 2 * N_IN + k), x + k);
      a3 = dot4_in_order(a3, ldg4(r0 + 3 * N_IN + k), x + k);
    }
  } else {
#pragma unroll 4
    for (int k = 0; k < N_IN; k++) {
      const float xv = x[k];
      a0 = fadd(a0, fmul(ldg1(r0 + k), xv));
      a1 = fadd(a1, fmul(ldg1(r0 + N_IN + k), xv));
      a2 = fadd(a2, fmul(ldg1(r0 + 2 * N_IN + k), xv));
      a3 = fadd(a3, fmul(ldg1(r0 + 3 * N_IN + k), xv));
    }
  }
  y[0] = a0;
  y[1] = a1;
  y[2] = a2;
  y[3] = a3;
}

// Group g (outputs 4g .. 4g + 3, fewer at the end) of the output layer at (W, B) over x into y.
template <int W, int B, int N_IN, int N_OUT>
COLLECT_DEVICE void output_group(const float* __restrict__ net, int g, const float* x, float* y) {
  const int j = 4 * g;
  if (j + 4 <= N_OUT) {
    dense_out4<W, B, N_IN>(net, j, x, y + j);
  } else {
    for (int k = j; k < N_OUT; k++) y[k] = dense_out<W, B, N_IN>(net, k, x);
  }
}

// Both streams on x (hidden layers into hid, output layers into heads, the mean of A per atom).
COLLECT_DEVICE void streams(const float* __restrict__ net, int r, const float* x, float* hid, float* heads,
                            float* mean) {
  if (r < V0_OUT)
    hid[r] = leaky(dense_out<V0_W, V0_B, S1_OUT>(net, r, x));
  else if (r < V0_OUT + A0_OUT)
    hid[r] = leaky(dense_out<A0_W, A0_B, S1_OUT>(net, r - V0_OUT, x));
  block_sync();
  for (int t = r; t < V1_GROUPS + A1_GROUPS; t += WG_X) {
    if (t < V1_GROUPS)
      output_group<V1_W, V1_B, V0_OUT, ATOMS>(net, t, hid, heads);
    else
      output_group<A1_W, A1_B, A0_OUT, A1_OUT>(net, t - V1_GROUPS, hid + V0_OUT, heads + ATOMS);
  }
  block_sync();
  if (r < ATOMS) {
    float sum = 0.0f;
    for (int a = 0; a < NUM_ACTIONS; a++) sum = fadd(sum, heads[ATOMS + a * ATOMS + r]);
    mean[r] = fdiv(sum, (float)NUM_ACTIONS);
  }
  block_sync();
}

// Q of action a from V and A (heads) and the mean of A over actions per atom.
COLLECT_DEVICE float q_of(int a, float* heads, const float* mean, float vmin, float vmax) {
  if constexpr (HEAD != HEAD_C51) return fsub(fadd(heads[0], heads[ATOMS + a]), mean[0]);
  float* l = heads + ATOMS + a * ATOMS;
  float mx = -__int_as_float(0x7f800000);
  for (int z = 0; z < ATOMS; z++) {
    const float logit = fsub(fadd(heads[z], l[z]), mean[z]);
    l[z] = logit;
    if (logit > mx) mx = logit;
  }
  float s = 0.0f;
  for (int z = 0; z < ATOMS; z++) {
    const float e = expf(fsub(l[z], mx));
    l[z] = e;
    s = fadd(s, e);
  }
  const float delta = fdiv(fsub(vmax, vmin), (float)(ATOMS > 1 ? ATOMS - 1 : 1));
  float q = 0.0f;
  for (int z = 0; z < ATOMS; z++) q = fadd(q, fmul(fdiv(l[z], s), fadd(vmin, fmul((float)z, delta))));
  return q;
}

extern "C" __global__ void validate_dqn(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const float* __restrict__ net = nets + u.netBase;
  const int r = threadIdx.x;
  const unsigned steps = u.steps;
  float* x = smem + SM_X;
  float* hid = smem + SM_HID;
  float* heads = smem + SM_HEADS;
  float* mean = smem + SM_MEAN;
  float* q = smem + SM_Q;
  volatile int* stop = reinterpret_cast<volatile int*>(smem + SM_STOP);
  volatile int* bar_s = reinterpret_cast<volatile int*>(smem + SM_BAR);
  float* cos_tau = smem + SM_COS;
  Episode ep;
  if (r == 0) {
    start_episode(ep, m, p, div_window, p.split_start);
    *stop = 0;
  }
  if constexpr (HEAD == HEAD_IQN) {
    const float pi = (float)3.14159265358979323846;
    for (int k = r; k < COS_LEN; k += WG_X) {
      const int t = k / IQN_EMBED;
      const float tau = fdiv((float)(2 * t + 1), (float)(2 * IQN_TAUS));
      cos_tau[k] = cosf(fmul(fmul((float)(k % IQN_EMBED), pi), tau));
    }
  }
  unsigned l = 0;
  for (;; l++) {
    if (!validate_state(ep, features, x, bar_s, stop, l, steps)) break;
    float y = 0.0f;
    if (r < S0_OUT) y = leaky(dense_out<S0_W, S0_B, STATE_DIM>(net, r, x));
    block_sync();
    if (r < S0_OUT) x[r] = y;
    block_sync();
    if (r < S1_OUT) y = leaky(dense_out<S1_W, S1_B, S0_OUT>(net, r, x));
    block_sync();
    if (r < S1_OUT) x[r] = y;
    block_sync();
    if constexpr (HEAD == HEAD_IQN) {
      // y holds trunk[r]; x takes h = trunk * phi per tau (its readers passed the barriers).
      float qsum = 0.0f;
      for (int t = 0; t < IQN_TAUS; t++) {
        if (r < S1_OUT) {
          const float phi = dense_out<T_W, T_B, IQN_EMBED>(net, r, cos_tau + t * IQN_EMBED);
          x[r] = fmul(y, phi > 0.0f ? phi : 0.0f);
        }
        block_sync();
        streams(net, r, x, hid, heads, mean);
        if (r < NUM_ACTIONS) qsum = fadd(qsum, q_of(r, heads, mean, u.vMin, u.vMax));
      }
      if (r < NUM_ACTIONS) q[r] = fdiv(qsum, (float)IQN_TAUS);
    } else {
      streams(net, r, x, hid, heads, mean);
      if (r < NUM_ACTIONS) q[r] = q_of(r, heads, mean, u.vMin, u.vMax);
    }
    block_sync();
    validate_act(ep, m, p, div_window, q, stop, l, steps, out_f, out_i);
  }
  if (r == 0) validate_flat_tail(ep, l, steps, out_f, out_i);
}
