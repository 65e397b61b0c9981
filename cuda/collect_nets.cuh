// The networks of collection on a block's tile (src/nets/forward.ts on R rows at once): flat
// layouts (src/nets/layout.ts, derived from the layer sizes exactly as buildLayout does; the kernels
// static_assert them against the generated NET_* constants and the unit test against the TS
// layouts), the dueling Q network with its plain / C51 / IQN heads, the PPO actor and critic, and
// the curiosity model. Built on mlp_tile.cuh: every function is called by the whole block; inputs
// must be complete (a block_sync before the call) and outputs are complete when it returns.
//
// Activation buffers are shared memory, R rows with row strides LD_* (tile_stride). Chains run in
// place in one trunk-wide buffer `act` (the input rows go in its first columns, zero-padded to a
// multiple of 16), so a block of R episodes needs about R * 1.3 KiB for the dueling net. Heads
// follow forward.ts operation by operation: exact in the exact mode except exp and cos (expf / cosf:
// a few ulp from the reference's correctly rounded f64 ones).
#pragma once

#include "collect_dims.cuh"
#include "mlp_tile.cuh"

#define HEAD_PLAIN 0
#define HEAD_C51 1
#define HEAD_IQN 2

#ifndef COLLECT_ATOMS
#define COLLECT_ATOMS 51
#endif
#ifndef COLLECT_IQN_EMBED
#define COLLECT_IQN_EMBED 64
#endif

#define LD_STATE tile_stride(STATE_DIM)
#define LD_TRUNK tile_stride(256)
#define LD_Q tile_stride(NUM_ACTIONS)
#define LD_ATOMS ((COLLECT_ATOMS + 3) / 4 * 4)
#define LD_CRITIC tile_stride(512)
#define LD_CURIOSITY tile_stride(64)

// Flat layouts of networks stored at float offset Base of a buffer (offsets are absolute, so the
// tile engine sees the true 16-byte alignment of every layer).
// Dueling: trunk 54 -> 256 -> 256, [tau_embed 64 -> 256], value 256 -> 128 -> Atoms,
// advantage 256 -> 128 -> 45 * Atoms (Atoms = 1 unless C51).
template <int Head, int Base = 0>
struct Dueling {
  static constexpr int Atoms = Head == HEAD_C51 ? COLLECT_ATOMS : 1;
  static constexpr int S0_W = Base;
  static constexpr int S0_B = S0_W + STATE_DIM * 256;
  static constexpr int S1_W = S0_B + 256;
  static constexpr int S1_B = S1_W + 256 * 256;
  static constexpr int TE_W = S1_B + 256;
  static constexpr int TE_B = TE_W + (Head == HEAD_IQN ? COLLECT_IQN_EMBED * 256 : 0);
  static constexpr int V0_W = TE_B + (Head == HEAD_IQN ? 256 : 0);
  static constexpr int V0_B = V0_W + 256 * 128;
  static constexpr int V1_W = V0_B + 128;
  static constexpr int V1_B = V1_W + 128 * Atoms;
  static constexpr int A0_W = V1_B + Atoms;
  static constexpr int A0_B = A0_W + 256 * 128;
  static constexpr int A1_W = A0_B + 128;
  static constexpr int A1_B = A1_W + 128 * NUM_ACTIONS * Atoms;
  static constexpr int SIZE = A1_B + NUM_ACTIONS * Atoms - Base;
};

// PPO actor 54 -> 128 -> 64 -> 45 and critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1, ReLU.
template <int Base = 0>
struct Actor {
  static constexpr int L0_W = Base, L0_B = L0_W + STATE_DIM * 128;
  static constexpr int L1_W = L0_B + 128, L1_B = L1_W + 128 * 64;
  static constexpr int L2_W = L1_B + 64, L2_B = L2_W + 64 * NUM_ACTIONS;
  static constexpr int SIZE = L2_B + NUM_ACTIONS - Base;
};
template <int Base = 0>
struct Critic {
  static constexpr int L0_W = Base, L0_B = L0_W + STATE_DIM * 512;
  static constexpr int L1_W = L0_B + 512, L1_B = L1_W + 512 * 384;
  static constexpr int L2_W = L1_B + 384, L2_B = L2_W + 384 * 256;
  static constexpr int L3_W = L2_B + 256, L3_B = L3_W + 256 * 128;
  static constexpr int L4_W = L3_B + 128, L4_B = L4_W + 128 * 64;
  static constexpr int L5_W = L4_B + 64, L5_B = L5_W + 64;
  static constexpr int SIZE = L5_B + 1 - Base;
};
// Curiosity 35 -> 64 LeakyReLU -> 32.
template <int Base = 0>
struct Curiosity {
  static constexpr int IN = 35, HIDDEN = 64, OUT = 32;
  static constexpr int L0_W = Base, L0_B = L0_W + IN * HIDDEN;
  static constexpr int L1_W = L0_B + HIDDEN, L1_B = L1_W + HIDDEN * OUT;
  static constexpr int SIZE = L1_B + OUT - Base;
};

// Trunk in place: act [R, LD_TRUNK] holds the 54-float states (columns 54..63 zero) and then the
// trunk features. Rounded: the features are stored as TF32 values (TF32_OUT; the plain head, whose
// only readers of them are the stream layers; IQN multiplies them by phi, so it keeps them whole).
template <int Head, int Base, int R, bool Rounded = false>
COLLECT_FN void dueling_trunk(const float* __restrict__ p, float* act) {
  using L = Dueling<Head, Base>;
  constexpr int F = Rounded ? TF32_OUT : 0;
  dense_inplace<STATE_DIM, 256, ACT_LEAKY, R, L::S0_W, L::S0_B, F>(p, act, LD_TRUNK);
  block_sync();
  dense_inplace<256, 256, ACT_LEAKY, R, L::S1_W, L::S1_B, Rounded ? TF32_IN | TF32_OUT : 0>(p, act, LD_TRUNK);
  block_sync();
}

// The hidden layers of both streams, fused and in place: act [R, LD_TRUNK] trunk features ->
// value hidden (columns 0..127) and advantage hidden (128..255).
template <int Head, int Base, int R, bool Rounded = false>
COLLECT_FN void dueling_hidden(const float* __restrict__ p, float* act) {
  using L = Dueling<Head, Base>;
  Dense<256, 128, ACT_LEAKY, R, L::V0_W, L::V0_B, Rounded ? TF32_IN : 0> value;
  Dense<256, 128, ACT_LEAKY, R, L::A0_W, L::A0_B, Rounded ? TF32_IN : 0> advantage;
  value.compute(p, act, LD_TRUNK);
  advantage.compute(p, act, LD_TRUNK);
  block_sync();
  value.store(p, act, LD_TRUNK);
  advantage.store(p, act + 128, LD_TRUNK);
  block_sync();
}

// The same two layers out of place: act [R, LD_TRUNK] trunk features -> hid [R, LD_TRUNK] (value
// hidden 0..127, advantage hidden 128..255). No barrier between a layer's compute and store, so
// only one stream's accumulators are live at a time: what lets TILE_E 64 fit in registers.
// Rounded (TF32 trunk features in act): the advantage hidden layer is stored as TF32 values too
// (its reader is advantage_stream.1); the value hidden layer stays whole for the exact-path
// 128 -> 1 layer.
template <int Head, int Base, int R, bool Rounded = false>
COLLECT_FN void dueling_hidden_to(const float* __restrict__ p, const float* act, float* hid) {
  using L = Dueling<Head, Base>;
  dense_tile<256, 128, ACT_LEAKY, R, L::V0_W, L::V0_B, Rounded ? TF32_IN : 0>(p, act, LD_TRUNK, hid, LD_TRUNK);
  dense_tile<256, 128, ACT_LEAKY, R, L::A0_W, L::A0_B, Rounded ? TF32_IN | TF32_OUT : 0>(p, act, LD_TRUNK, hid + 128,
                                                                                          LD_TRUNK);
  block_sync();
}

// The plain / IQN output layers: v[r * ldv] value, a [R, lda] advantages, from dueling_hidden.
// Rounded: the advantage hidden layer holds TF32 values (dueling_hidden_to's Rounded).
template <int Head, int Base, int R, bool Rounded = false>
COLLECT_FN void dueling_out(const float* __restrict__ p, const float* act, float* v, int ldv, float* a, int lda) {
  using L = Dueling<Head, Base>;
  dense_tile<128, 1, ACT_NONE, R, L::V1_W, L::V1_B>(p, act, LD_TRUNK, v, ldv);
  dense_tile<128, NUM_ACTIONS, ACT_NONE, R, L::A1_W, L::A1_B, Rounded ? TF32_IN : 0>(p, act + 128, LD_TRUNK, a, lda);
  block_sync();
}

// mean(A) of one row: f32 sum over a ascending, divided by 45.
COLLECT_DEVICE float advantage_mean(const float* a) {
  float sum = 0.0f;
  for (int k = 0; k < NUM_ACTIONS; k++) sum = fadd(sum, a[k]);
  return fdiv(sum, (float)NUM_ACTIONS);
}

// Plain dueling Q of R rows (forward.ts forwardDueling): act [R, LD_TRUNK] input states, then
// scratch; hid [R, LD_TRUNK] the streams' hidden layers, either act itself (fused in place) or a
// buffer of its own (out of place, fewer live registers); v [R], a [R, LD_Q] scratch; q [R, LD_Q]
// output (may alias act: act is dead by then). Q[a] = f32(f32(V + A[a]) - mean(A)).
template <int Base, int R>
COLLECT_FN void dueling_q(const float* __restrict__ p, float* act, float* hid, float* v, float* a, float* q) {
  // The trunk features are read by the stream layers only: stored as TF32 values (a no-op in the
  // exact build, whose layers ignore the flags).
  dueling_trunk<HEAD_PLAIN, Base, R, true>(p, act);
  if (hid == act) {
    dueling_hidden<HEAD_PLAIN, Base, R, true>(p, act);
    dueling_out<HEAD_PLAIN, Base, R>(p, hid, v, 1, a, LD_Q);
  } else {
    dueling_hidden_to<HEAD_PLAIN, Base, R, true>(p, act, hid);
    dueling_out<HEAD_PLAIN, Base, R, true>(p, hid, v, 1, a, LD_Q);
  }
  // mean(A) once per row, kept in the row's first padding column (45 sums per row, not per Q).
  static_assert(LD_Q > NUM_ACTIONS, "the advantage mean takes a padding column of a");
  for (int r = threadIdx.x; r < R; r += COLLECT_THREADS) a[r * LD_Q + NUM_ACTIONS] = advantage_mean(a + r * LD_Q);
  block_sync();
  for (int task = threadIdx.x; task < R * NUM_ACTIONS; task += COLLECT_THREADS) {
    const int r = task / NUM_ACTIONS, k = task % NUM_ACTIONS;
    const float* ar = a + r * LD_Q;
    q[r * LD_Q + k] = fsub(fadd(v[r], ar[k]), ar[NUM_ACTIONS]);
  }
  block_sync();
}

// C51 (forward.ts forwardC51). advantage_stream.1's 45 x Atoms logits go to a chunk buffer
// [R, c51_chunk_ld(Atoms, R)]: all 45 actions at once where R rows of them fit C51_WHOLE_FLOATS (the
// exact build's tiles of one or two episodes at 51 atoms), else in chunks of c51_chunk_actions actions that fit a
// trunk-wide row (48 KiB per block). Pass 0 sums the per-atom mean over actions (in action order, as
// the reference); pass 1 takes each action's softmax and expectation, from the same buffer when it
// holds all actions, else recomputing each chunk (the same bits). One chunk computes the layer once,
// with every thread holding several outputs' sums (independent chains), and takes all 45 softmaxes
// side by side. Buffers: act as for dueling_q; chunk the logits; v and mean [R, LD_ATOMS]; q [R,
// LD_Q] output (not aliasing act, which holds the advantage hidden layer until the end).
// The tensor-core build keeps the chunks: a whole row's m16n8 tiles would not fit the registers.
#if defined(COLLECT_TF32) && COLLECT_TF32
#define C51_WHOLE_FLOATS 0
#else
#define C51_WHOLE_FLOATS 4640
#endif
__host__ __device__ constexpr bool c51_whole(int atoms, int rows) {
  // ... and the exact layer's sums fit a thread's registers (DenseExact: at most 64).
  return rows * tile_stride(NUM_ACTIONS * atoms) <= C51_WHOLE_FLOATS &&
         (NUM_ACTIONS * atoms + COLLECT_THREADS - 1) / COLLECT_THREADS * rows <= 64;
}
__host__ __device__ constexpr int c51_chunk_actions(int atoms, int rows) {
  int c = NUM_ACTIONS;
  while (!c51_whole(atoms, rows) && c > 1 && (c * atoms > 256 || NUM_ACTIONS % c != 0)) c--;
  return c;
}
__host__ __device__ constexpr int c51_chunk_ld(int atoms, int rows) {
  return c51_whole(atoms, rows) ? tile_stride(NUM_ACTIONS * atoms) : LD_TRUNK;
}
#define C51_CHUNK(R) c51_chunk_actions(COLLECT_ATOMS, R)
#define LD_C51_CHUNK(R) c51_chunk_ld(COLLECT_ATOMS, R)

struct C51Buffers {
  float *act, *chunk, *v, *mean, *q;
};

template <int Base, int R, int C, int PASS>
COLLECT_FN void c51_chunks(const float* __restrict__ p, const C51Buffers& b, float vmin, float delta) {
  using L = Dueling<HEAD_C51, Base>;
  constexpr int Z = L::Atoms;
  constexpr int CA = C51_CHUNK(R);
  constexpr int LDC = LD_C51_CHUNK(R);
  static_assert(CA * Z <= LDC, "one C51 chunk must fit a row of its buffer");
  if constexpr (C * CA < NUM_ACTIONS) {
    if constexpr (PASS == 0 || CA < NUM_ACTIONS) {
      dense_tile<128, CA * Z, ACT_NONE, R, L::A1_W + C * CA * Z * 128, L::A1_B + C * CA * Z>(p, b.act + 128, LD_TRUNK,
                                                                                         b.chunk, LDC);
      block_sync();
    }
    if constexpr (PASS == 0) {
      for (int task = threadIdx.x; task < R * Z; task += COLLECT_THREADS) {
        const int r = task / Z, z = task % Z;
        float s = C == 0 ? 0.0f : b.mean[r * LD_ATOMS + z];
        for (int k = 0; k < CA; k++) s = fadd(s, b.chunk[r * LDC + k * Z + z]);
        b.mean[r * LD_ATOMS + z] = C * CA + CA == NUM_ACTIONS ? fdiv(s, (float)NUM_ACTIONS) : s;
      }
    } else {
      // The logits and their exponentials on every thread; each (row, action)'s max, sum and
      // expectation on one thread in atom order (the reference's bits). q holds the max until Q.
      for (int task = threadIdx.x; task < R * CA * Z; task += COLLECT_THREADS) {
        const int r = task / (CA * Z), kz = task % (CA * Z), z = kz % Z;
        float* l = b.chunk + r * LDC + kz;
        *l = fsub(fadd(b.v[r * LD_ATOMS + z], *l), b.mean[r * LD_ATOMS + z]);
      }
      block_sync();
      for (int task = threadIdx.x; task < R * CA; task += COLLECT_THREADS) {
        const int r = task / CA, k = task % CA;
        const float* l = b.chunk + r * LDC + k * Z;
        float mx = -__int_as_float(0x7f800000);
        for (int z = 0; z < Z; z++) {
          const float logit = l[z];
          if (logit > mx) mx = logit;
        }
        b.q[r * LD_Q + C * CA + k] = mx;
      }
      block_sync();
      for (int task = threadIdx.x; task < R * CA * Z; task += COLLECT_THREADS) {
        const int r = task / (CA * Z), kz = task % (CA * Z);
        float* l = b.chunk + r * LDC + kz;
        *l = expf(fsub(*l, b.q[r * LD_Q + C * CA + kz / Z]));
      }
      block_sync();
      for (int task = threadIdx.x; task < R * CA; task += COLLECT_THREADS) {
        const int r = task / CA, k = task % CA;
        const float* l = b.chunk + r * LDC + k * Z;
        float s = 0.0f;
        for (int z = 0; z < Z; z++) s = fadd(s, l[z]);
        float q = 0.0f;
        for (int z = 0; z < Z; z++) q = fadd(q, fmul(fdiv(l[z], s), fadd(vmin, fmul((float)z, delta))));
        b.q[r * LD_Q + C * CA + k] = q;
      }
    }
    block_sync();
    c51_chunks<Base, R, C + 1, PASS>(p, b, vmin, delta);
  }
}

template <int Base, int R>
COLLECT_FN void c51_q(const float* __restrict__ p, const C51Buffers& b, float vmin, float vmax) {
  using L = Dueling<HEAD_C51, Base>;
  dueling_trunk<HEAD_C51, Base, R>(p, b.act);
  dueling_hidden<HEAD_C51, Base, R>(p, b.act);
  dense_tile<128, L::Atoms, ACT_NONE, R, L::V1_W, L::V1_B>(p, b.act, LD_TRUNK, b.v, LD_ATOMS);
  block_sync();
  const float delta = fdiv(fsub(vmax, vmin), (float)(L::Atoms - 1));
  c51_chunks<Base, R, 0, 0>(p, b, vmin, delta);
  c51_chunks<Base, R, 0, 1>(p, b, vmin, delta);
}

// IQN (forward.ts forwardIqn): for each of K taus per row, phi = relu(tau_embed(cos features)),
// h = trunk * phi, the dueling streams on h give Q_tau; q = f32 sum over taus in order / K. Taus
// run TC at a time as R * TC rows (row r * TC + c is tau c0 + c of row r). Buffers: act [R,
// LD_TRUNK] input states, then the trunk features for all chunks; taus [R, ld_tau]; hq [R * TC,
// LD_TRUNK] cosines -> phi -> h -> stream hidden layers, in place; va [R * TC, LD_VA] value
// (column 0), mean of A (column 1) and advantages (columns 16..60); q [R, LD_Q] output.
#define LD_VA 64
struct IqnBuffers {
  float *act, *taus, *hq, *va, *q;
  int ld_tau;
};

template <int Base, int R, int K, int TC>
COLLECT_FN void iqn_q(const float* __restrict__ p, const IqnBuffers& b) {
  using L = Dueling<HEAD_IQN, Base>;
  constexpr int RC = R * TC;
  static_assert(K % TC == 0, "the tau chunk must divide the tau count");
  const float pi = (float)3.14159265358979323846;
  dueling_trunk<HEAD_IQN, Base, R>(p, b.act);
  for (int c0 = 0; c0 < K; c0 += TC) {
    for (int task = threadIdx.x; task < RC * COLLECT_IQN_EMBED; task += COLLECT_THREADS) {
      const int rr = task / COLLECT_IQN_EMBED, i = task % COLLECT_IQN_EMBED;
      const float tau = b.taus[(rr / TC) * b.ld_tau + c0 + rr % TC];
      b.hq[rr * LD_TRUNK + i] = cosf(fmul(fmul((float)i, pi), tau));
    }
    block_sync();
    dense_inplace<COLLECT_IQN_EMBED, 256, ACT_RELU, RC, L::TE_W, L::TE_B>(p, b.hq, LD_TRUNK);
    block_sync();
    for (int task = threadIdx.x; task < RC * 256; task += COLLECT_THREADS) {
      const int rr = task / 256, j = task % 256;
      b.hq[rr * LD_TRUNK + j] = fmul(b.act[(rr / TC) * LD_TRUNK + j], b.hq[rr * LD_TRUNK + j]);
    }
    block_sync();
    dueling_hidden<HEAD_IQN, Base, RC>(p, b.hq);
    dueling_out<HEAD_IQN, Base, RC>(p, b.hq, b.va, LD_VA, b.va + 16, LD_VA);
    for (int rr = threadIdx.x; rr < RC; rr += COLLECT_THREADS) b.va[rr * LD_VA + 1] = advantage_mean(b.va + rr * LD_VA + 16);
    block_sync();
    for (int task = threadIdx.x; task < R * NUM_ACTIONS; task += COLLECT_THREADS) {
      const int r = task / NUM_ACTIONS, k = task % NUM_ACTIONS;
      float q = c0 == 0 ? 0.0f : b.q[r * LD_Q + k];
      for (int c = 0; c < TC; c++) {
        const float* va = b.va + (r * TC + c) * LD_VA;
        q = fadd(q, fsub(fadd(va[0], va[16 + k]), va[1]));
      }
      b.q[r * LD_Q + k] = c0 + TC == K ? fdiv(q, (float)K) : q;
    }
    block_sync();
  }
}

// PPO critic value of R rows: xs [R, LD_STATE] states (kept) -> value[r * ld_value]; act
// [R, LD_CRITIC] scratch.
template <int Base, int R>
COLLECT_FN void critic_value(const float* __restrict__ p, const float* xs, float* act, float* value, int ld_value) {
  using L = Critic<Base>;
  dense_tile<STATE_DIM, 512, ACT_RELU, R, L::L0_W, L::L0_B>(p, xs, LD_STATE, act, LD_CRITIC);
  block_sync();
  dense_inplace<512, 384, ACT_RELU, R, L::L1_W, L::L1_B>(p, act, LD_CRITIC);
  block_sync();
  dense_inplace<384, 256, ACT_RELU, R, L::L2_W, L::L2_B>(p, act, LD_CRITIC);
  block_sync();
  dense_inplace<256, 128, ACT_RELU, R, L::L3_W, L::L3_B>(p, act, LD_CRITIC);
  block_sync();
  dense_inplace<128, 64, ACT_RELU, R, L::L4_W, L::L4_B>(p, act, LD_CRITIC);
  block_sync();
  dense_tile<64, 1, ACT_NONE, R, L::L5_W, L::L5_B>(p, act, LD_CRITIC, value, ld_value);
  block_sync();
}

// PPO actor logits of R rows: xs [R, LD_STATE] states (kept) -> logits [R, LD_Q]; act
// [R, LD_CRITIC] scratch.
template <int Base, int R>
COLLECT_FN void actor_logits(const float* __restrict__ p, const float* xs, float* act, float* logits) {
  using L = Actor<Base>;
  dense_tile<STATE_DIM, 128, ACT_RELU, R, L::L0_W, L::L0_B>(p, xs, LD_STATE, act, LD_CRITIC);
  block_sync();
  dense_inplace<128, 64, ACT_RELU, R, L::L1_W, L::L1_B>(p, act, LD_CRITIC);
  block_sync();
  dense_tile<64, NUM_ACTIONS, ACT_NONE, R, L::L2_W, L::L2_B>(p, act, LD_CRITIC, logits, LD_Q);
  block_sync();
}

// Curiosity prediction of R rows, in place in x [R, LD_CURIOSITY]: the 35 inputs (columns 35..47
// zero) -> the 32 predicted features.
template <int Base, int R>
COLLECT_FN void curiosity_predict(const float* __restrict__ p, float* x) {
  using L = Curiosity<Base>;
  dense_inplace<L::IN, L::HIDDEN, ACT_LEAKY, R, L::L0_W, L::L0_B>(p, x, LD_CURIOSITY);
  block_sync();
  dense_inplace<L::HIDDEN, L::OUT, ACT_NONE, R, L::L1_W, L::L1_B>(p, x, LD_CURIOSITY);
  block_sync();
}
