// The plain dueling Q network and the curiosity model on the split-K engine (mlp_splitk.cuh), for
// collect_dqn's small-N TF32 build (constants SPLITK = 1, TF32 = 1, TILE_E <= 16). Same networks
// and layouts as collect_nets.cuh, four layer phases per dueling forward instead of six:
// trunk 0, trunk 1, both streams' hidden layers as one 256-output layer, value.1 ++ advantage.1 as
// one 46-output layer (column 0 value, 1..45 advantages); then every (row, action) task takes
// its row's advantage mean itself (same sum in the same order: the same bits in every task), so
// Q needs no barrier of its own. Called by the whole block, inputs complete (block_sync before),
// outputs complete on return.
//
// Buffers (shared memory): act [R, LD_TRUNK] input states (zero-padded columns), then scratch; va
// [R, LD_Q] value ++ advantages; q [R, LD_Q] output (may alias act); part SplitkNets::PART floats.
// Numerics: TF32 (every layer on tensor cores, the value layer included), see mlp_splitk.cuh.
#pragma once

#include "collect_nets.cuh"
#include "mlp_splitk.cuh"

template <int Base, int R>
struct SplitkNets {
  using L = Dueling<HEAD_PLAIN, Base>;
  using C = Curiosity<NET_C_BASE>;
  using Trunk0 = DenseSplitK<STATE_DIM, 256, ACT_LEAKY, R, L::S0_W, L::S0_B, STATE_DIM, 256, 0, 0, STATE_DIM, 0,
                             TF32_OUT>;
  using Trunk1 = DenseSplitK<256, 256, ACT_LEAKY, R, L::S1_W, L::S1_B, 256, 256, 0, 0, 256, 0, TF32_IN | TF32_OUT>;
  using Hidden = DenseSplitK<256, 256, ACT_LEAKY, R, L::V0_W, L::V0_B, 256, 128, L::A0_W, L::A0_B, 256, 0,
                             TF32_IN | TF32_OUT>;
  using Out = DenseSplitK<256, 1 + NUM_ACTIONS, ACT_NONE, R, L::V1_W, L::V1_B, 128, 1, L::A1_W, L::A1_B, 128, 128,
                          TF32_IN>;
  using Cur0 = DenseSplitK<C::IN, C::HIDDEN, ACT_LEAKY, R, C::L0_W, C::L0_B, C::IN>;
  using Cur1 = DenseSplitK<C::HIDDEN, C::OUT, ACT_NONE, R, C::L1_W, C::L1_B, C::HIDDEN>;
  __host__ __device__ static constexpr int max2(int a, int b) { return a > b ? a : b; }
  static constexpr int PART = max2(max2(max2(Trunk0::PART, Trunk1::PART), max2(Hidden::PART, Out::PART)),
                                   max2(Cur0::PART, Cur1::PART));
};

template <int Base, int R>
COLLECT_FN void dueling_q_splitk(const float* __restrict__ p, float* act, float* va, float* q, float* part) {
  using N = SplitkNets<Base, R>;
  static_assert(LD_Q > NUM_ACTIONS, "value ++ advantages take 46 columns of a Q row");
  splitk_layer<typename N::Trunk0>(p, act, LD_TRUNK, act, LD_TRUNK, part);
  block_sync();
  splitk_layer<typename N::Trunk1>(p, act, LD_TRUNK, act, LD_TRUNK, part);
  block_sync();
  splitk_layer<typename N::Hidden>(p, act, LD_TRUNK, act, LD_TRUNK, part);
  block_sync();
  splitk_layer<typename N::Out>(p, act, LD_TRUNK, va, LD_Q, part);
  block_sync();
  for (int task = threadIdx.x; task < R * NUM_ACTIONS; task += COLLECT_THREADS) {
    const int r = task / NUM_ACTIONS, k = task % NUM_ACTIONS;
    const float* row = va + r * LD_Q;
    q[r * LD_Q + k] = fsub(fadd(row[0], row[1 + k]), advantage_mean(row + 1));
  }
  block_sync();
}

// Curiosity prediction in place in x [R, LD_CURIOSITY] (inputs zero-padded past 35), as
// collect_nets.cuh curiosity_predict.
template <int R>
COLLECT_FN void curiosity_predict_splitk(const float* __restrict__ p, float* x, float* part) {
  using N = SplitkNets<NET_Q_BASE, R>;
  splitk_layer<typename N::Cur0>(p, x, LD_CURIOSITY, x, LD_CURIOSITY, part);
  block_sync();
  splitk_layer<typename N::Cur1>(p, x, LD_CURIOSITY, x, LD_CURIOSITY, part);
  block_sync();
}
