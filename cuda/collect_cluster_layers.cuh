// collect_cluster_layers.cuh: a piece of collect_dqn_cluster.cu (included by it, after
// collect_cluster_plan.cuh): the online dueling net over a thread-block cluster. Each CTA loads its 1/C
// slice of every layer's outputs into shared memory once per launch
// (load_dueling); a layer phase computes the slice's outputs for all E rows (exact f32: cluster_layer;
// TF32: mma_compute + mma_store) and pushes them into every CTA's activations with asynchronous
// stores counted on the receiver's mbarrier (put, put4); layer_phase waits for its bytes. Also the
// curiosity model on a CTA's own rows (local_layer, curiosity_model) and the TF32 build's value
// column (value_rows); dueling_va runs the net's four phases.
#pragma once

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

// One output value into column j of row r of y in every CTA, starting with a different peer per CTA
// so the pushes spread over the cluster: asynchronous stores that count their bytes on the
// receiver's mbarrier `bar`.
COLLECT_DEVICE void put(float* y, int at, float v, unsigned rank, float* bar) {
  for (int k = 0; k < C; k++) st_async1(y + at, (rank + (unsigned)k) % C, v, bar);
}
// Four consecutive values (16-byte aligned) the same way.
COLLECT_DEVICE void put4(float* y, int at, float4 v, unsigned rank, float* bar) {
  for (int k = 0; k < C; k++) st_async4(y + at, (rank + (unsigned)k) % C, v, bar);
}

#if TF32
// This warp's share of a tensor-core layer: its column tiles x K slice of x [E, ldx] (zero-padded
// columns up to K) times the slice ws, partial sums into part [KSPLIT][E][NTP]. Two accumulator sets
// (even and odd k16 steps) halve the dependent mma chain; they are added before the store.
template <int In, int Out>
COLLECT_FN void mma_compute(const float* ws, const float* x, int ldx, float* part) {
  using L = ClusterMma<In, Out>;
  const int warp = (int)(threadIdx.x >> 5);
  if (warp >= L::NG * L::KSPLIT) return;
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
// input from column XOFF2), pushed into y of every CTA; layer_phase waits for the exchange.
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

// One layer phase, ended by the wait for this phase's bytes: exact, each thread's outputs pushed as
// it finishes them; TF32, the partial sums, one block barrier, the sums pushed. `extra(layer)` runs
// between the pushes and the wait (work that reads no output of this phase: it overlaps the exchange).
template <int In, int Out, int Act, int SPLIT, int XOFF2, class Extra>
COLLECT_FN void layer_phase(const float* ws, const float* x, int ldx, float* y, int ldy, float* smem, unsigned rank,
                            int layer, unsigned& phases, Extra& extra) {
  float* bar = smem + SM_MBAR + 2 * (MB_LAYER0 + layer);
  // Every CTA receives every row's Out columns: this phase's bytes.
  if (threadIdx.x == 0) mbar_expect(bar, (unsigned)(E * Out * 4));
#if TF32
  mma_compute<In, Out>(ws, x, ldx, smem + SM_PART);
  block_sync();
  mma_store<In, Out, Act>(ws, smem + SM_PART, y, ldy, rank, bar);
#else
  cluster_layer<In, Out, Act, SPLIT, XOFF2>(ws, x, ldx, y, ldy, rank, bar);
#endif
  extra(layer);
  // Each thread waits for the phase itself: past it, every row is complete here.
  mbar_wait(bar, (phases >> (MB_LAYER0 + layer)) & 1u);
  phases ^= 1u << (MB_LAYER0 + layer);
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

// The online net on SM_X0 -> SM_VA, phase by phase (4 exchanges): states x -> a -> b -> a -> value ++
// advantages va, every row in every CTA once the phase's exchange has completed (TF32: the value
// column by the row's warp); `extra(k)` inside layer phase k (layer_phase).
template <class Extra>
COLLECT_FN void dueling_va(float* s, unsigned rank, unsigned& ph, const ValueLane& vq, Extra& extra) {
  // TF32: the value column while the advantages travel.
  auto extra3 = [&](int layer) {
    extra(layer);
    if (TF32 && layer == 3) value_rows(vq, s + SM_A, s + SM_VA);
  };
  layer_phase<STATE_DIM, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_S0, s + SM_X0, LD_STATE, s + SM_A, LD_TRUNK, s, rank,
                                                 0, ph, extra3);
  layer_phase<256, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_S1, s + SM_A, LD_TRUNK, s + SM_B, LD_TRUNK, s, rank, 1, ph,
                                           extra3);
  layer_phase<256, 256, ACT_LEAKY, 256, 0>(s + SM_WQ + NW_H, s + SM_B, LD_TRUNK, s + SM_A, LD_TRUNK, s, rank, 2, ph,
                                           extra3);
  // TF32: advantages from hidden columns 128..255 into columns 1..45; exact: value ++ advantages.
  constexpr int XO = TF32 ? 128 : 0, YO = TF32 ? 1 : 0;
  layer_phase<OUT_IN, OUT_L, ACT_NONE, TF32 ? 0 : 1, 128>(s + SM_WQ + NW_O, s + SM_A + XO, LD_TRUNK, s + SM_VA + YO,
                                                          LD_VQ, s, rank, 3, ph, extra3);
}
