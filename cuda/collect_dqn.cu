// collect_dqn: L steps of N episodes in one launch, the CUDA twin of src/collect/dqn.ts (descriptor
// src/kernels/collect_dqn.ts). Per step: build the 54-float state, online dueling Q (head HEAD:
// plain, C51 expectation, IQN mean over ACT_TAUS taus), epsilon-greedy action from
// Philox(Action, e, g, 0), curiosity forward model, simulator step (collect_env.cuh), next state,
// restart of finished episodes. Episodes persist in env_f / env_i / div_window between launches.
//
// Bindings (src/kernels/collect_layout.ts): features [T, 51], ohlc [T, 4], spread [T], entropy
// [W + 1], nets (online at NET_Q_BASE, curiosity at NET_C_BASE), env_f
// [N, ENV_F], env_i [N, ENV_I], div_window [N, W], out_f / out_i (sections OUT_F_* / OUT_I_*, value
// of episode e at step l at section * N * L + (e * L + l) * width + k). Uniforms: struct Uniforms
// of the preamble (n, steps, stepBase, epsilon, vMin, vMax, curiosity, ..., the simulator).
//
// Block: WG_X threads (a multiple of 32) own TILE_E episodes (block b: episodes b * TILE_E ..).
// - SEED_VARIANT 0, tiled: thread r < TILE_E runs episode r's simulator with its state in registers;
//   between those serial phases the whole block runs each layer as a [TILE_E, in] x [in, out]
//   product on shared-memory activations (mlp_tile.cuh, collect_nets.cuh). Shared memory is static
//   (<= 48 KiB: TILE_E <= 32 for the plain head, <= 16 for C51 and IQN) unless the constant
//   DYN_SMEM_BYTES is set: then the plan lives in that much dynamic shared memory (plain head at
//   TILE_E 64: 153 KiB, with a separate buffer for the stream hidden layers), so every weight
//   read from L2 serves twice the episodes.
//   Small N: use a small TILE_E (down to 1) so more blocks share the episodes' layer math.
// - SEED_VARIANT 1, the seed design kept for the benchmark: one thread per episode, every layer a
//   per-thread loop over global weights, activations in local memory (plain head only).
//
// Numerics: TF32 0 (default, the parity mode) reproduces the TS reference bit for bit except expf /
// cosf in the C51 / IQN heads; TF32 1 runs the layer products on tensor cores (TF32 inputs, f32
// accumulation: ~1e-3 relative per layer), so actions may differ where Q-values nearly tie.
#ifndef TF32
#define TF32 0
#endif
#define COLLECT_TF32 TF32
#define COLLECT_THREADS WG_X
#define COLLECT_ATOMS ATOMS
#define COLLECT_IQN_EMBED IQN_EMBED
#ifdef DYN_SMEM_BYTES
#define COLLECT_DYN_SMEM
#endif

#include "collect_io.cuh"
#include "collect_dqn_step.cuh"
#include "collect_nets.cuh"
#include "grid.cuh"

using QNet = Dueling<HEAD, NET_Q_BASE>;
using CNet = Curiosity<NET_C_BASE>;
static_assert(QNet::S0_W == NET_Q_0_W && QNet::SIZE == NET_Q_SIZE,
              "collect_nets.cuh dueling layout differs from src/nets/layout.ts");
static_assert(CNet::L1_B == NET_C_1_B && CNet::SIZE == NET_C_SIZE,
              "collect_nets.cuh curiosity layout differs from src/nets/layout.ts");
static_assert(WG_X % 32 == 0 && WG_Y == 1 && WG_Z == 1, "collect_dqn runs on 1-D blocks of whole warps");


#if SEED_VARIANT == 0

constexpr int E = TILE_E;
// IQN: taus run in chunks of TC per episode so that a chunk is about one m16 tile of rows.
__host__ __device__ constexpr int iqn_tau_chunk(int e, int k) {
  int tc = e >= 16 ? 1 : 16 / e;
  while (k % tc != 0) tc--;
  return tc;
}
constexpr int TC = iqn_tau_chunk(E, ACT_TAUS);

// Shared-memory plan (floats), then the episodes. act [E, LD_TRUNK] takes the states, runs the trunk in place and, for
// the plain head, receives q (q aliases it); the curiosity model runs in act too (dead between the
// online forward and the next state).
constexpr int SM_ACT = 0;
constexpr int SM_END_ACT = align4(SM_ACT + E * LD_TRUNK);
// plain: v [E], a [E, LD_Q]
constexpr int SM_V = SM_END_ACT;
constexpr int SM_A = align4(SM_V + E);
constexpr int SM_END_PLAIN = align4(SM_A + E * LD_Q);
// C51: chunk [E, LD_C51_CHUNK(E)], v and mean [E, LD_ATOMS], q [E, LD_Q]
constexpr int SM_CHUNK = SM_END_ACT;
constexpr int SM_C51_V = align4(SM_CHUNK + E * LD_C51_CHUNK(E));
constexpr int SM_MEAN = align4(SM_C51_V + E * LD_ATOMS);
constexpr int SM_C51_Q = align4(SM_MEAN + E * LD_ATOMS);
constexpr int SM_END_C51 = align4(SM_C51_Q + E * LD_Q);
// IQN: taus [E, ACT_TAUS], hq [E * TC, LD_TRUNK], va [E * TC, LD_VA], q [E, LD_Q]
constexpr int SM_TAU = SM_END_ACT;
constexpr int SM_HQ = align4(SM_TAU + E * ACT_TAUS);
constexpr int SM_VA = align4(SM_HQ + E * TC * LD_TRUNK);
constexpr int SM_IQN_Q = align4(SM_VA + E * TC * LD_VA);
constexpr int SM_END_IQN = align4(SM_IQN_Q + E * LD_Q);
constexpr int SM_END_NETS = HEAD == HEAD_PLAIN ? SM_END_PLAIN : HEAD == HEAD_C51 ? SM_END_C51 : SM_END_IQN;
// The episodes' simulator state lives here between the env phases rather than in registers that
// would stay live (and spill) through every layer.
constexpr int SM_EPISODES = SM_END_NETS;
constexpr int SM_END_EPISODES = align4(SM_EPISODES + E * (int)(sizeof(Episode) / 4));
#ifdef DYN_SMEM_BYTES
// Plain head in dynamic shared memory: the streams' hidden layers get a buffer of their own
// (dueling_q out of place), so a thread holds one stream's accumulators at a time.
static_assert(HEAD == HEAD_PLAIN, "collect_dqn: dynamic shared memory is planned for the plain head only");
constexpr int SM_HID = SM_END_EPISODES;
constexpr int SM_FLOATS = SM_HID + E * LD_TRUNK;
#else
constexpr int SM_HID = SM_ACT;
constexpr int SM_FLOATS = SM_END_EPISODES;
#endif
constexpr int SM_Q = HEAD == HEAD_PLAIN ? SM_ACT : HEAD == HEAD_C51 ? SM_C51_Q : SM_IQN_Q;
static_assert(sizeof(Episode) % 4 == 0, "Episode is 4-byte fields");
#ifdef DYN_SMEM_BYTES
// The descriptor (src/kernels/collect_dqn.ts cudaDqnSharedBytes) sizes the launch from the same
// plan: equality catches either side drifting.
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "collect_dqn: DYN_SMEM_BYTES differs from the shared-memory plan");
static_assert(DYN_SMEM_BYTES <= 227 * 1024, "collect_dqn: TILE_E too large for 227 KiB of shared memory");
#else
static_assert(SM_FLOATS * 4 <= 48 * 1024,
              "collect_dqn: TILE_E too large for 48 KiB of static shared memory (plain: <= 32, C51 and IQN: <= 16); "
              "larger plain tiles take dynamic shared memory (DYN_SMEM_BYTES)");
#endif
static_assert(E <= COLLECT_THREADS, "collect_dqn: one thread per episode runs the simulator");
static_assert(LD_Q + LD_CURIOSITY <= LD_TRUNK, "the curiosity model runs inside act, after the q rows");

template <int NET_BASE>
COLLECT_FN void q_values(const float* nets, float* smem, float vmin, float vmax) {
  if constexpr (HEAD == HEAD_PLAIN) {
    dueling_q<NET_BASE, E>(nets, smem + SM_ACT, smem + SM_HID, smem + SM_V, smem + SM_A, smem + SM_Q);
  } else if constexpr (HEAD == HEAD_C51) {
    C51Buffers b;
    b.act = smem + SM_ACT;
    b.chunk = smem + SM_CHUNK;
    b.v = smem + SM_C51_V;
    b.mean = smem + SM_MEAN;
    b.q = smem + SM_Q;
    c51_q<NET_BASE, E>(nets, b, vmin, vmax);
  } else {
    IqnBuffers b;
    b.act = smem + SM_ACT;
    b.taus = smem + SM_TAU;
    b.ld_tau = ACT_TAUS;
    b.hq = smem + SM_HQ;
    b.va = smem + SM_VA;
    b.q = smem + SM_Q;
    iqn_q<NET_BASE, E, ACT_TAUS, TC>(nets, b);
  }
}

// The state row of an episode in act: 54 floats then zeros up to the next multiple of 16 (the
// tensor-core path reads those columns); rows of episodes past N stay zero.
COLLECT_DEVICE void state_row(float* row, const Episode& ep, const Market& m, bool active) {
  if (active) build_state(ep, m, row);
  for (int k = active ? STATE_DIM : 0; k < LD_STATE; k++) row[k] = 0.0f;
}

// Blocks a TF32 build asks the compiler to fit on one SM (__launch_bounds__): two for tiles of 16 to
// 32 episodes at 256 threads (128 registers a thread; their static plans fit twice in an SM's
// shared memory), so one block's serial simulator phase and barriers overlap the other's layer
// math. The exact build, the 64-episode plan and the small-N tiles (one block per SM anyway) keep
// one block of up to 255 registers.
#define MIN_BLOCKS (TF32 && E >= 16 && E <= 32 && WG_X <= 256 ? 2 : 1)
static_assert(MIN_BLOCKS == 1 || SM_FLOATS * 4 <= 113 * 1024, "two blocks per SM need two plans in shared memory");
#ifdef FOXHUNT_EMU
#define DQN_LAUNCH_BOUNDS
#else
#define DQN_LAUNCH_BOUNDS __launch_bounds__(WG_X, MIN_BLOCKS)
#endif

// The loop keeps only the episode's index, its row pointers and the step's action in registers
// across the layer phases: the simulator scalars (EnvScalars, Market, the output cursor) are
// rebuilt inside each serial phase from the kernel parameters (constant memory), so they never sit
// in registers through a layer, where the accumulators need them.
extern "C" __global__ void DQN_LAUNCH_BOUNDS collect_dqn(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const int r = threadIdx.x;
  const unsigned long long e64 = flat_block_id() * E + r;
  const bool env_thread = r < E;
  const bool active = env_thread && e64 < u.n;
  const unsigned e = (unsigned)e64;
  // Blocks past the work (the grid may overshoot) still reach every barrier.
  Episode& ep = reinterpret_cast<Episode*>(smem + SM_EPISODES)[env_thread ? r : 0];
  if (active) load_episode(ep, env_f, env_i, e);
  float* xs = smem + SM_ACT + r * LD_TRUNK;
  const float* q_row = smem + SM_Q + r * LD_Q;
  // The curiosity rows sit in act after the plain head's q rows, so that writing them never
  // clobbers a q row another thread has yet to read.
  float* cur = smem + SM_ACT + E * LD_Q;
  const unsigned long long nl = (unsigned long long)u.n * u.steps;
  for (unsigned l = 0; l < u.steps; l++) {
    const unsigned g = u.stepBase + l;
    const Out o = {out_f, out_i, nl, (unsigned long long)e * u.steps + l};
    if (env_thread) {
      const Market m = {features, ohlc, spread, entropy};
      state_row(xs, ep, m, active);
      if (active) {
        float* s = out_f_at(o, OUT_F_STATES, STATE_DIM);
        for (int k = 0; k < STATE_DIM; k++) s[k] = xs[k];
      }
      if constexpr (HEAD == HEAD_IQN) {
        float* taus = smem + SM_TAU + r * ACT_TAUS;
        for (int k = 0; k < ACT_TAUS; k += 4) {
          const uint4 w = philox4x32_10(make_uint4(STREAM_TAU, e, g, (unsigned)(k >> 2)), u.key0, u.key1);
          const unsigned words[4] = {w.x, w.y, w.z, w.w};
          for (int j = 0; j < 4 && k + j < ACT_TAUS; j++) taus[k + j] = philox_unit_float(words[j]);
        }
      }
    }
    block_sync();
    q_values<NET_Q_BASE>(nets, smem, u.vMin, u.vMax);

    int action = 0;
    if (active) action = choose_action(q_row, e, g, u.epsilon, u.key0, u.key1);
    if (env_thread && u.curiosity) {
      curiosity_input(cur + r * LD_CURIOSITY, LD_CURIOSITY, features, active ? ep.bar : 0, action_category(action));
    }
    block_sync();
    if (u.curiosity) curiosity_predict<NET_C_BASE, E>(nets, cur);

    const float mse = active && u.curiosity ? curiosity_mse(cur + r * LD_CURIOSITY, features, ep.bar) : 0.0f;
    // Every mse is read before the next decision's states overwrite act.
    block_sync();
    if (active) {
      const Market m = {features, ohlc, spread, entropy};
      const EnvScalars p = env_scalars(u);
      int* window = div_window + (unsigned long long)e * p.diversity_window;
      StepOut so;
      env_step(ep, m, p, window, action, mse, u.curiosity != 0, so);
      build_state(ep, m, out_f_at(o, OUT_F_NEXT_STATES, STATE_DIM));
      write_step(o, so, action);
      restart_if_ended(ep, m, p, window, e, so);
    }
  }
  if (active) store_episode(ep, env_f, env_i, e);
}

#else  // SEED_VARIANT

static_assert(HEAD == HEAD_PLAIN, "the seed variant (benchmark only) implements the plain dueling head");

// The seed design's dueling forward: one thread, activations in local memory.
template <int NET_BASE>
COLLECT_FN void q_values_thread(const float* nets, const float* x, float* q) {
  using L = Dueling<HEAD_PLAIN, NET_BASE>;
  float h0[256], h1[256], vh[128], ah[128], v[1];
  dense_thread<STATE_DIM, 256, ACT_LEAKY, L::S0_W, L::S0_B>(nets, x, h0);
  dense_thread<256, 256, ACT_LEAKY, L::S1_W, L::S1_B>(nets, h0, h1);
  dense_thread<256, 128, ACT_LEAKY, L::V0_W, L::V0_B>(nets, h1, vh);
  dense_thread<128, 1, ACT_NONE, L::V1_W, L::V1_B>(nets, vh, v);
  dense_thread<256, 128, ACT_LEAKY, L::A0_W, L::A0_B>(nets, h1, ah);
  dense_thread<128, NUM_ACTIONS, ACT_NONE, L::A1_W, L::A1_B>(nets, ah, q);
  const float mean = advantage_mean(q);
  for (int k = 0; k < NUM_ACTIONS; k++) q[k] = fsub(fadd(v[0], q[k]), mean);
}

extern "C" __global__ void collect_dqn(KERNEL_ARGS) {
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const unsigned long long e64 = flat_thread_id();
  if (e64 >= u.n) return;
  const unsigned e = (unsigned)e64;
  Episode ep;
  int* window = div_window + (unsigned long long)e * p.diversity_window;
  load_episode(ep, env_f, env_i, e);
  float s[STATE_DIM], q[NUM_ACTIONS], cur_in[CNet::IN], cur_h[CNet::HIDDEN], cur_out[CNet::OUT];
  Out o = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  for (unsigned l = 0; l < u.steps; l++, o.idx++) {
    const unsigned g = u.stepBase + l;
    build_state(ep, m, s);
    float* so_s = out_f_at(o, OUT_F_STATES, STATE_DIM);
    for (int k = 0; k < STATE_DIM; k++) so_s[k] = s[k];
    q_values_thread<NET_Q_BASE>(nets, s, q);
    const int action = choose_action(q, e, g, u.epsilon, p.key0, p.key1);
    float mse = 0.0f;
    if (u.curiosity) {
      curiosity_input(cur_in, CNet::IN, features, ep.bar, action_category(action));
      dense_thread<CNet::IN, CNet::HIDDEN, ACT_LEAKY, CNet::L0_W, CNet::L0_B>(nets, cur_in, cur_h);
      dense_thread<CNet::HIDDEN, CNet::OUT, ACT_NONE, CNet::L1_W, CNet::L1_B>(nets, cur_h, cur_out);
      mse = curiosity_mse(cur_out, features, ep.bar);
    }
    StepOut so;
    env_step(ep, m, p, window, action, mse, u.curiosity != 0, so);
    build_state(ep, m, s);
    float* so_n = out_f_at(o, OUT_F_NEXT_STATES, STATE_DIM);
    for (int k = 0; k < STATE_DIM; k++) so_n[k] = s[k];
    write_step(o, so, action);
    restart_if_ended(ep, m, p, window, e, so);
  }
  store_episode(ep, env_f, env_i, e);
}

#endif
