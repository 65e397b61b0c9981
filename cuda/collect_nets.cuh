// The networks of collection on a block's tile (src/nets/forward.ts on R rows at once): flat
// layouts (src/nets/layout.ts, derived from the layer sizes exactly as buildLayout does; the unit
// test compares them with the TS layouts), the dueling Q network with its plain / C51 / IQN heads,
// the PPO actor and critic, and the curiosity model. Built on mlp_tile.cuh: every function is
// called by the whole block; inputs must be complete (a block_sync before the call) and outputs
// are complete when it returns (it ends with a block_sync).
//
// Activation buffers are shared memory, R rows with row strides tile_stride(width) (LD_* below). Heads follow forward.ts operation by operation: exact in the exact mode except exp
// and cos (expf / cosf: a few ulp from the reference's correctly rounded f64 ones).
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

// Dueling layout: trunk 54 -> 256 -> 256, [tau_embed 64 -> 256], value 256 -> 128 -> ATOMS,
// advantage 256 -> 128 -> 45 * ATOMS (ATOMS = 1 unless C51).
template <int HEAD>
struct Dueling {
  static constexpr int ATOMS = HEAD == HEAD_C51 ? COLLECT_ATOMS : 1;
  static constexpr int S0_W = 0;
  static constexpr int S0_B = S0_W + STATE_DIM * 256;
  static constexpr int S1_W = S0_B + 256;
  static constexpr int S1_B = S1_W + 256 * 256;
  static constexpr int TE_W = S1_B + 256;
  static constexpr int TE_B = TE_W + (HEAD == HEAD_IQN ? COLLECT_IQN_EMBED * 256 : 0);
  static constexpr int V0_W = TE_B + (HEAD == HEAD_IQN ? 256 : 0);
  static constexpr int V0_B = V0_W + 256 * 128;
  static constexpr int V1_W = V0_B + 128;
  static constexpr int V1_B = V1_W + 128 * ATOMS;
  static constexpr int A0_W = V1_B + ATOMS;
  static constexpr int A0_B = A0_W + 256 * 128;
  static constexpr int A1_W = A0_B + 128;
  static constexpr int A1_B = A1_W + 128 * NUM_ACTIONS * ATOMS;
  static constexpr int SIZE = A1_B + NUM_ACTIONS * ATOMS;
};

// PPO actor 54 -> 128 -> 64 -> 45 and critic 54 -> 512 -> 384 -> 256 -> 128 -> 64 -> 1, ReLU.
struct Actor {
  static constexpr int L0_W = 0, L0_B = L0_W + STATE_DIM * 128;
  static constexpr int L1_W = L0_B + 128, L1_B = L1_W + 128 * 64;
  static constexpr int L2_W = L1_B + 64, L2_B = L2_W + 64 * NUM_ACTIONS;
  static constexpr int SIZE = L2_B + NUM_ACTIONS;
};
struct Critic {
  static constexpr int L0_W = 0, L0_B = L0_W + STATE_DIM * 512;
  static constexpr int L1_W = L0_B + 512, L1_B = L1_W + 512 * 384;
  static constexpr int L2_W = L1_B + 384, L2_B = L2_W + 384 * 256;
  static constexpr int L3_W = L2_B + 256, L3_B = L3_W + 256 * 128;
  static constexpr int L4_W = L3_B + 128, L4_B = L4_W + 128 * 64;
  static constexpr int L5_W = L4_B + 64, L5_B = L5_W + 64;
  static constexpr int SIZE = L5_B + 1;
};
// Curiosity 35 -> 64 LeakyReLU -> 32.
struct Curiosity {
  static constexpr int IN = 35, HIDDEN = 64, OUT = 32;
  static constexpr int L0_W = 0, L0_B = L0_W + IN * HIDDEN;
  static constexpr int L1_W = L0_B + HIDDEN, L1_B = L1_W + HIDDEN * OUT;
  static constexpr int SIZE = L1_B + OUT;
};

// Trunk: xs [R, LD_STATE] -> h1 [R, LD_TRUNK], h0 [R, LD_TRUNK] as scratch.
template <int HEAD, int R>
COLLECT_FN void dueling_trunk(const float* __restrict__ p, const float* xs, float* h0, float* h1) {
  using L = Dueling<HEAD>;
  dense_tile<STATE_DIM, 256, ACT_LEAKY, R, L::S0_W, L::S0_B>(p, xs, LD_STATE, h0, LD_TRUNK);
  block_sync();
  dense_tile<256, 256, ACT_LEAKY, R, L::S1_W, L::S1_B>(p, h0, LD_TRUNK, h1, LD_TRUNK);
  block_sync();
}

// Both streams on trunk features h [R, LD_TRUNK]: hs [R, LD_TRUNK] holds the value hidden layer in
// columns 0..127 and the advantage hidden layer in 128..255; v [R, ldv] the value output, a [R, lda]
// the advantage output (plain and IQN heads; C51 computes its advantage logits in chunks).
template <int HEAD, int R>
COLLECT_FN void dueling_hidden(const float* __restrict__ p, const float* h, float* hs) {
  using L = Dueling<HEAD>;
  dense_tile<256, 128, ACT_LEAKY, R, L::V0_W, L::V0_B>(p, h, LD_TRUNK, hs, LD_TRUNK);
  dense_tile<256, 128, ACT_LEAKY, R, L::A0_W, L::A0_B>(p, h, LD_TRUNK, hs + 128, LD_TRUNK);
  block_sync();
}

template <int HEAD, int R>
COLLECT_FN void dueling_streams(const float* __restrict__ p, const float* h, float* hs, float* v, int ldv, float* a,
                                int lda) {
  using L = Dueling<HEAD>;
  dueling_hidden<HEAD, R>(p, h, hs);
  dense_tile<128, 1, ACT_NONE, R, L::V1_W, L::V1_B>(p, hs, LD_TRUNK, v, ldv);
  dense_tile<128, NUM_ACTIONS, ACT_NONE, R, L::A1_W, L::A1_B>(p, hs + 128, LD_TRUNK, a, lda);
  block_sync();
}

// mean(A) of one row: f32 sum over a ascending, divided by 45.
COLLECT_DEVICE float advantage_mean(const float* a) {
  float sum = 0.0f;
  for (int k = 0; k < NUM_ACTIONS; k++) sum = fadd(sum, a[k]);
  return fdiv(sum, (float)NUM_ACTIONS);
}

// Buffers of a dueling forward, all shared memory, R rows each: xs [LD_STATE] input (free after the
// first layer, so q may alias it), h0 and h1 [LD_TRUNK], v [1], a [LD_Q]; q [LD_Q] output.
struct DuelingBuffers {
  const float* xs;
  float *h0, *h1, *v, *a, *q;
};

// Plain dueling Q of R rows into b.q: Q[a] = f32(f32(V + A[a]) - mean(A)).
template <int R>
COLLECT_FN void dueling_q(const float* __restrict__ p, const DuelingBuffers& b) {
  dueling_trunk<HEAD_PLAIN, R>(p, b.xs, b.h0, b.h1);
  dueling_streams<HEAD_PLAIN, R>(p, b.h1, b.h0, b.v, 1, b.a, LD_Q);
  for (int task = threadIdx.x; task < R * NUM_ACTIONS; task += COLLECT_THREADS) {
    const int r = task / NUM_ACTIONS, k = task % NUM_ACTIONS;
    const float* a = b.a + r * LD_Q;
    b.q[r * LD_Q + k] = fsub(fadd(b.v[r], a[k]), advantage_mean(a));
  }
  block_sync();
}

// C51 (forward.ts forwardC51). The 45 x ATOMS advantage logits do not fit in shared memory next to
// the trunk (48 KiB per block), so advantage_stream.1 runs in chunks of C51_CHUNK actions, twice:
// pass 0 sums the per-atom mean over actions (in action order, as the reference), pass 1 recomputes
// each chunk (the same bits) and takes the per-action softmax and expectation. Buffers: xs, h0, h1
// as for dueling_q (h1 then holds a chunk's logits), v [R, LD_ATOMS] value logits, mean [R, LD_ATOMS].
__host__ __device__ constexpr int c51_chunk_actions(int atoms) {
  int c = NUM_ACTIONS;
  while (c > 1 && (c * atoms > 256 || NUM_ACTIONS % c != 0)) c--;
  return c;
}
#define C51_CHUNK c51_chunk_actions(COLLECT_ATOMS)
#define LD_ATOMS ((COLLECT_ATOMS + 3) / 4 * 4)

template <int R, int C, int PASS>
COLLECT_FN void c51_chunks(const float* __restrict__ p, const DuelingBuffers& b, float* mean, float vmin,
                           float delta) {
  using L = Dueling<HEAD_C51>;
  constexpr int Z = L::ATOMS;
  constexpr int CA = C51_CHUNK;
  static_assert(CA * Z <= 256, "one C51 chunk must fit a trunk-wide buffer");
  if constexpr (C * CA < NUM_ACTIONS) {
    dense_tile<128, CA * Z, ACT_NONE, R, L::A1_W + C * CA * Z * 128, L::A1_B + C * CA * Z>(p, b.h0 + 128, LD_TRUNK,
                                                                                       b.h1, LD_TRUNK);
    block_sync();
    if constexpr (PASS == 0) {
      for (int task = threadIdx.x; task < R * Z; task += COLLECT_THREADS) {
        const int r = task / Z, z = task % Z;
        float s = C == 0 ? 0.0f : mean[r * LD_ATOMS + z];
        for (int k = 0; k < CA; k++) s = fadd(s, b.h1[r * LD_TRUNK + k * Z + z]);
        mean[r * LD_ATOMS + z] = C * CA + CA == NUM_ACTIONS ? fdiv(s, (float)NUM_ACTIONS) : s;
      }
    } else {
      for (int task = threadIdx.x; task < R * CA; task += COLLECT_THREADS) {
        const int r = task / CA, k = task % CA;
        float* l = b.h1 + r * LD_TRUNK + k * Z;
        const float* v = b.v + r * LD_ATOMS;
        const float* mr = mean + r * LD_ATOMS;
        float mx = -__int_as_float(0x7f800000);
        for (int z = 0; z < Z; z++) {
          const float logit = fsub(fadd(v[z], l[z]), mr[z]);
          l[z] = logit;
          if (logit > mx) mx = logit;
        }
        float s = 0.0f;
        for (int z = 0; z < Z; z++) {
          const float e = expf(fsub(l[z], mx));
          l[z] = e;
          s = fadd(s, e);
        }
        float q = 0.0f;
        for (int z = 0; z < Z; z++) q = fadd(q, fmul(fdiv(l[z], s), fadd(vmin, fmul((float)z, delta))));
        b.q[r * LD_Q + C * CA + k] = q;
      }
    }
    block_sync();
    c51_chunks<R, C + 1, PASS>(p, b, mean, vmin, delta);
  }
}

template <int R>
COLLECT_FN void c51_q(const float* __restrict__ p, const DuelingBuffers& b, float* mean, float vmin, float vmax) {
  using L = Dueling<HEAD_C51>;
  dueling_trunk<HEAD_C51, R>(p, b.xs, b.h0, b.h1);
  dueling_hidden<HEAD_C51, R>(p, b.h1, b.h0);
  dense_tile<128, L::ATOMS, ACT_NONE, R, L::V1_W, L::V1_B>(p, b.h0, LD_TRUNK, b.v, LD_ATOMS);
  block_sync();
  const float delta = fdiv(fsub(vmax, vmin), (float)(L::ATOMS - 1));
  c51_chunks<R, 0, 0>(p, b, mean, vmin, delta);
  c51_chunks<R, 0, 1>(p, b, mean, vmin, delta);
}

// IQN (forward.ts forwardIqn): for each of K taus per row, phi = relu(tau_embed(cos features)),
// h = trunk * phi, the dueling streams on h give Q_tau; q = f32 sum over taus in order / K. Taus
// run TC at a time as R * TC rows (row r * TC + c is tau c0 + c of row r). Buffers: xs, h1, q as
// for dueling_q (R rows); taus [R, ld_tau]; hq and hs [R * TC, LD_TRUNK]. hq also serves as the
// trunk's scratch and, once the hidden stream layers have read it, as the value (column 0) and
// advantage (columns 16..60) outputs; hs also holds the cosine features and the per-row mean.
struct IqnBuffers {
  const float* taus;
  int ld_tau;
  float *hq, *hs;
};
#define LD_EMBED tile_stride(COLLECT_IQN_EMBED)

template <int R, int K, int TC>
COLLECT_FN void iqn_q(const float* __restrict__ p, const DuelingBuffers& b, const IqnBuffers& w) {
  using L = Dueling<HEAD_IQN>;
  constexpr int RC = R * TC;
  static_assert(K % TC == 0, "the tau chunk must divide the tau count");
  static_assert(LD_EMBED <= LD_TRUNK, "cosine features live in a trunk-wide buffer");
  const float pi = (float)3.14159265358979323846;
  float* v = w.hq;
  float* a = w.hq + 16;
  dueling_trunk<HEAD_IQN, R>(p, b.xs, w.hq, b.h1);
  for (int c0 = 0; c0 < K; c0 += TC) {
    for (int task = threadIdx.x; task < RC * COLLECT_IQN_EMBED; task += COLLECT_THREADS) {
      const int rr = task / COLLECT_IQN_EMBED, i = task % COLLECT_IQN_EMBED;
      const float tau = w.taus[(rr / TC) * w.ld_tau + c0 + rr % TC];
      w.hs[rr * LD_EMBED + i] = cosf(fmul(fmul((float)i, pi), tau));
    }
    block_sync();
    dense_tile<COLLECT_IQN_EMBED, 256, ACT_RELU, RC, L::TE_W, L::TE_B>(p, w.hs, LD_EMBED, w.hq, LD_TRUNK);
    block_sync();
    for (int task = threadIdx.x; task < RC * 256; task += COLLECT_THREADS) {
      const int rr = task / 256, j = task % 256;
      w.hq[rr * LD_TRUNK + j] = fmul(b.h1[(rr / TC) * LD_TRUNK + j], w.hq[rr * LD_TRUNK + j]);
    }
    block_sync();
    dueling_streams<HEAD_IQN, RC>(p, w.hq, w.hs, v, LD_TRUNK, a, LD_TRUNK);
    for (int rr = threadIdx.x; rr < RC; rr += COLLECT_THREADS) w.hs[rr * LD_TRUNK] = advantage_mean(a + rr * LD_TRUNK);
    block_sync();
    for (int task = threadIdx.x; task < R * NUM_ACTIONS; task += COLLECT_THREADS) {
      const int r = task / NUM_ACTIONS, k = task % NUM_ACTIONS;
      float q = c0 == 0 ? 0.0f : b.q[r * LD_Q + k];
      for (int c = 0; c < TC; c++) {
        const int rr = r * TC + c;
        q = fadd(q, fsub(fadd(v[rr * LD_TRUNK], a[rr * LD_TRUNK + k]), w.hs[rr * LD_TRUNK]));
      }
      b.q[r * LD_Q + k] = c0 + TC == K ? fdiv(q, (float)K) : q;
    }
    block_sync();
  }
}

#define LD_CRITIC tile_stride(512)

// PPO actor logits of R rows: xs [R, LD_STATE] -> logits [R, LD_Q]; h [R, LD_CRITIC] scratch.
template <int R>
COLLECT_FN void actor_logits(const float* __restrict__ p, const float* xs, float* h, float* logits) {
  using L = Actor;
  float* h1 = h + 128;
  dense_tile<STATE_DIM, 128, ACT_RELU, R, L::L0_W, L::L0_B>(p, xs, LD_STATE, h, LD_CRITIC);
  block_sync();
  dense_tile<128, 64, ACT_RELU, R, L::L1_W, L::L1_B>(p, h, LD_CRITIC, h1, LD_CRITIC);
  block_sync();
  dense_tile<64, NUM_ACTIONS, ACT_NONE, R, L::L2_W, L::L2_B>(p, h1, LD_CRITIC, logits, LD_Q);
  block_sync();
}

// PPO critic value of R rows: xs [R, LD_STATE] -> value[r * ld_value]; ha, hb [R, LD_CRITIC] scratch.
template <int R>
COLLECT_FN void critic_value(const float* __restrict__ p, const float* xs, float* ha, float* hb, float* value,
                             int ld_value) {
  using L = Critic;
  dense_tile<STATE_DIM, 512, ACT_RELU, R, L::L0_W, L::L0_B>(p, xs, LD_STATE, ha, LD_CRITIC);
  block_sync();
  dense_tile<512, 384, ACT_RELU, R, L::L1_W, L::L1_B>(p, ha, LD_CRITIC, hb, LD_CRITIC);
  block_sync();
  dense_tile<384, 256, ACT_RELU, R, L::L2_W, L::L2_B>(p, hb, LD_CRITIC, ha, LD_CRITIC);
  block_sync();
  dense_tile<256, 128, ACT_RELU, R, L::L3_W, L::L3_B>(p, ha, LD_CRITIC, hb, LD_CRITIC);
  block_sync();
  dense_tile<128, 64, ACT_RELU, R, L::L4_W, L::L4_B>(p, hb, LD_CRITIC, ha, LD_CRITIC);
  block_sync();
  dense_tile<64, 1, ACT_NONE, R, L::L5_W, L::L5_B>(p, ha, LD_CRITIC, value, ld_value);
  block_sync();
}

#define LD_CUR_IN tile_stride(35)
#define LD_CUR_HIDDEN tile_stride(64)
#define LD_CUR_OUT tile_stride(32)

// Curiosity prediction of R rows: x [R, LD_CUR_IN] (35 inputs, padding columns zero) -> y
// [R, LD_CUR_OUT]; h [R, LD_CUR_HIDDEN] scratch.
template <int R>
COLLECT_FN void curiosity_predict(const float* __restrict__ p, const float* x, float* h, float* y) {
  using L = Curiosity;
  dense_tile<L::IN, L::HIDDEN, ACT_LEAKY, R, L::L0_W, L::L0_B>(p, x, LD_CUR_IN, h, LD_CUR_HIDDEN);
  block_sync();
  dense_tile<L::HIDDEN, L::OUT, ACT_NONE, R, L::L1_W, L::L1_B>(p, h, LD_CUR_HIDDEN, y, LD_CUR_OUT);
  block_sync();
}
