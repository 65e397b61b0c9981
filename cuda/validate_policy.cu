// validate_policy: the validation backtest (src/eval/backtest.ts) with PPO's greedy policy, one
// block a launch, the CUDA twin of src/kernels/validate_policy.ts (bindings, uniforms, chunks and
// the output sections there). One episode from splitStart, `steps` decisions, steps [stepBegin,
// stepEnd) of them a launch (the episode resumed from and left in env_f / env_i); per step the
// block's threads build the state and run the actor (one output each, f32 sums bias first then
// inputs in order, never fused: src/nets/forward.ts), thread 0 takes the first argmax of the logits
// and steps the simulator (validate_env.cuh: only a collapse ends the episode, and then the rest of
// the curve stays at the last value with action, exposure and traded 0).
//
// The actor's weights (29K floats) are copied once a launch into dynamic shared memory, transposed
// to [in][out], so at every step thread j reads W[k][j] beside its neighbours' (one bank each)
// rather than a row of its own from global memory (a cache line per thread and load).
//
// Numerics: the reference's f32 arithmetic, so actions agree exactly and values bit for bit.
#define COLLECT_THREADS WG_X
#define COLLECT_DYN_SMEM

#include "validate_env.cuh"

static_assert(WG_X >= NET_A_0_OUT && WG_X >= NET_A_1_OUT && WG_X >= NET_A_2_OUT && WG_Y == 1 && WG_Z == 1,
              "validate_policy: one thread per output of the actor's widest layer");

// Shared plan (words): the layer input (state, then each hidden layer), the logits, the stop flag
// and the episode's bar (ints), then each layer's transposed weights [in][out] and its bias.
constexpr int SM_X = 0;
constexpr int SM_LOGITS = 128;
constexpr int SM_STOP = SM_LOGITS + 64;
constexpr int SM_BAR = SM_STOP + 1;
constexpr int SM_L0 = SM_STOP + 4;
constexpr int SM_L1 = SM_L0 + (NET_A_0_IN + 1) * NET_A_0_OUT;
constexpr int SM_L2 = SM_L1 + (NET_A_1_IN + 1) * NET_A_1_OUT;
constexpr int SM_FLOATS = SM_L2 + (NET_A_2_IN + 1) * NET_A_2_OUT;
static_assert(NET_A_0_OUT <= 128 && STATE_DIM <= 128 && NUM_ACTIONS <= 64, "validate_policy: shared plan");
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "validate_policy: DYN_SMEM_BYTES differs from the shared-memory plan");

// The layer at (W, B) of the nets buffer into shared memory at `to`: weights transposed to
// [N_IN][N_OUT] (read in row order, so the block's loads are coalesced), then the bias.
template <int W, int B, int N_IN, int N_OUT>
COLLECT_DEVICE void stage_layer(const float* __restrict__ nets, float* to) {
  for (int i = threadIdx.x; i < N_IN * N_OUT; i += WG_X) to[(i % N_IN) * N_OUT + i / N_IN] = nets[W + i];
  for (int j = threadIdx.x; j < N_OUT; j += WG_X) to[N_IN * N_OUT + j] = nets[B + j];
}

// Output j of the staged layer at `l` over x: bias first, then inputs in order.
template <int N_IN, int N_OUT>
COLLECT_DEVICE float dense_out(const float* l, int j, const float* x) {
  float acc = l[N_IN * N_OUT + j];
#pragma unroll 8
  for (int k = 0; k < N_IN; k++) acc = fadd(acc, fmul(l[k * N_OUT + j], x[k]));
  return acc;
}

extern "C" __global__ void validate_policy(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const int r = threadIdx.x;
  const unsigned steps = u.steps;
  float* x = smem + SM_X;
  float* logits = smem + SM_LOGITS;
  stage_layer<NET_A_0_W, NET_A_0_B, NET_A_0_IN, NET_A_0_OUT>(nets, smem + SM_L0);
  stage_layer<NET_A_1_W, NET_A_1_B, NET_A_1_IN, NET_A_1_OUT>(nets, smem + SM_L1);
  stage_layer<NET_A_2_W, NET_A_2_B, NET_A_2_IN, NET_A_2_OUT>(nets, smem + SM_L2);
  volatile int* stop = reinterpret_cast<volatile int*>(smem + SM_STOP);
  volatile int* bar_s = reinterpret_cast<volatile int*>(smem + SM_BAR);
  Episode ep{};
  if (r == 0) validate_open(ep, m, p, div_window, env_f, env_i, u.stepBegin, stop);
  unsigned l = u.stepBegin;
  for (;; l++) {
    if (!validate_state(ep, features, x, bar_s, stop, l, u.stepEnd)) break;
    float y = 0.0f;
    if (r < NET_A_0_OUT) y = fmaxf(dense_out<NET_A_0_IN, NET_A_0_OUT>(smem + SM_L0, r, x), 0.0f);
    block_sync();
    if (r < NET_A_0_OUT) x[r] = y;
    block_sync();
    if (r < NET_A_1_OUT) y = fmaxf(dense_out<NET_A_1_IN, NET_A_1_OUT>(smem + SM_L1, r, x), 0.0f);
    block_sync();
    if (r < NET_A_1_OUT) x[r] = y;
    block_sync();
    if (r < NET_A_2_OUT) logits[r] = dense_out<NET_A_2_IN, NET_A_2_OUT>(smem + SM_L2, r, x);
    block_sync();
    validate_act(ep, m, p, div_window, logits, stop, l, steps, out_f, out_i);
  }
  if (r == 0) validate_close(ep, l, u.stepEnd, steps, *stop, env_f, env_i, out_f, out_i);
}
