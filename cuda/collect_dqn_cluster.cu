// collect_dqn_cluster: the DQN collection kernel (src/collect/dqn.ts, plain dueling head) for small N
// on sm_90 thread-block clusters (descriptor: src/kernels/collect_dqn.ts, variant `cluster`). Same
// bindings, uniforms, outputs and episode state as collect_dqn.cu; only the work split differs.
//
// Why: at N = 128 the tiled kernel runs 128 blocks of one episode and each block streams all 0.6 MB of
// online weights from L2 every step. Here a cluster of CLUSTER CTAs owns TILE_E episodes and every
// CTA keeps a 1/CLUSTER slice of every layer's OUTPUT neurons (weights + bias of the online net) in
// its shared memory, loaded once per launch: no weight traffic per step. The
// curiosity model (17 KB) runs in each CTA on its own episodes only, its weights in shared memory
// where the plan leaves room (CUR_SMEM), else read through the cache.
//
// Per layer: CTA c computes outputs [c * SL, c * SL + SL) (SL = ceil(Out / CLUSTER)) for all TILE_E
// episodes from the full input rows in its own shared memory, pushes them into every CTA's output
// buffer through distributed shared memory, then waits until every CTA's columns are in (the
// exchange below). Layers ping-pong between two buffers: a CTA's pushes of a layer
// follow its reads of that layer's input, and no peer computes the next layer before it has them,
// so a buffer is rewritten only after its last read. The two dueling streams' hidden layers run as
// one 256-output layer; exact build: their output layers as one 46-output layer (column 0 value,
// 1..45 advantages, each reading its own half of the hidden row); TF32 build: the 45 advantages are
// the sliced layer and every CTA takes the value column (128 -> 1) for every row itself. Every CTA
// has every episode's value and advantages, so each computes all Q values and actions itself (one
// warp per episode, Q in registers; same arithmetic, same bits) instead of waiting for another
// exchange.
//
// Step: right after its simulator step an owner restarts a finished episode (restart_if_ended reads
// only the step's outcome) and broadcasts the state the next decision sees (s' unless the episode
// restarted); it keeps s' itself (the step's output, the curiosity bonus's target). Exchanges per
// step: 1 (states) + 4 (the online net) = 5; one online forward before the loop (5 exchanges), and
// the last step's online forward is spare.
//
// Episodes: episode i of the cluster lives in CTA i % CLUSTER (slot i / CLUSTER), with its simulator
// state in that CTA's shared memory: the serial simulator work is spread over the cluster's SMs
// instead of queueing on one. The simulator phase of a step runs three things at once on different
// warps (HELPERS, with enough warps): each owned slot's warp steps its episode (lane 0) and builds its
// state rows (all lanes) while the other warps run the curiosity model on the CTA's rows; the owner
// adds the curiosity bonus and writes the step's outputs inside the next layer phase, while the
// peers' outputs travel. The whole CTA copies the state rows to the peers and the outputs.
//
// How many episodes per cluster: the descriptor's default fills ~128 CTAs, and the collector raises
// it (cuOccupancyMaxActiveClusters) until the clusters fit on the GPU at once: an H200 holds 15
// 8-CTA clusters, so N = 128 runs as 15 clusters of 9 in one wave instead of 16 of 8 in two.
//
// Bindings, uniforms and outputs: as collect_dqn.cu. Launch: 1-D grid of CLUSTER * ceil(N /
// TILE_E) blocks of WG_X threads in clusters of (CLUSTER, 1, 1), DYN_SMEM_BYTES of dynamic shared
// memory (the plan in collect_cluster_plan.cuh; the descriptor computes the same number).
//
// Pieces: collect_cluster_plan.cuh (slice geometry, shared-memory plan), collect_cluster_layers.cuh
// (slices, layer phases and their exchange, curiosity model); here the decisions, the states'
// exchange, the simulator phase's roles and the kernel's step loop.
//
// Exchange: a CTA pushes each output it computes into every CTA's buffer as asynchronous stores
// (st.async: 16-byte where its slice is whole quads, else 4-byte) that count their bytes on the
// receiver's transaction barrier (mbarrier), one per exchange (the states, each dueling layer); each
// CTA waits only until all the bytes it receives have landed: no GPU-scope memory barrier, no wait
// for the slowest CTA's unrelated work.
//
// Numerics (constant TF32): 0 (default) f32 exact: acc = bias, then acc = f32(acc + f32(w * x)) for i
// ascending, exactly the exact path of mlp_tile.cuh, so every output is bit-identical to the TS
// reference. 1: tensor cores (mma.sync m16n8k8, TF32 operands, f32 sums; at most 16 episodes per
// cluster, one m16 tile): each CTA keeps its slices TF32-rounded, zero-padded to 8-row column tiles
// and 16-input steps; a layer's column tiles and K steps are split over the CTA's warps by the split-K
// plan (collect_cluster_plan.cuh splitk_plan), the partial sums meet in shared memory (SM_PART) and
// are added in slice order with the bias before the push. ~1e-3 relative error per layer, as the tiled
// TF32 build.
#ifndef TF32
#define TF32 0
#endif
#define COLLECT_TF32 TF32
#define COLLECT_THREADS WG_X
#define COLLECT_DYN_SMEM
#define COLLECT_CLUSTER
#include "collect_io.cuh"
#include "collect_dqn_step.cuh"
#include "collect_nets.cuh"
#include "grid.cuh"

static_assert(HEAD == HEAD_PLAIN, "collect_dqn_cluster implements the plain dueling head");
static_assert(WG_X % 32 == 0 && WG_Y == 1 && WG_Z == 1, "collect_dqn_cluster runs on 1-D blocks of whole warps");

using QNet = Dueling<HEAD_PLAIN, NET_Q_BASE>;
using CNet = Curiosity<NET_C_BASE>;
static_assert(QNet::S0_W == NET_Q_0_W && QNet::SIZE == NET_Q_SIZE,
              "collect_nets.cuh dueling layout differs from src/nets/layout.ts");
static_assert(CNet::L1_B == NET_C_1_B && CNet::SIZE == NET_C_SIZE,
              "collect_nets.cuh curiosity layout differs from src/nets/layout.ts");

constexpr int C = CLUSTER;
constexpr int E = TILE_E;
constexpr int T = WG_X;
// Episodes one CTA owns (one thread each).
constexpr int EPC = (E + C - 1) / C;
static_assert(EPC <= T, "collect_dqn_cluster: one thread per owned episode");

#include "collect_cluster_plan.cuh"
#include "collect_cluster_layers.cuh"

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
    if (lane == 0) actions[r] = a;
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
// the first NP of the NB buffers `at` into every peer, and writes each active episode's row of buffer
// b to the output section `sec[b]` at step `step[b]` of the launch (not where step[b] is negative).
// Then every CTA has every row of those NP buffers: the wait for the bytes of the other CTAs' rows on
// the states mbarrier.
template <int NB, int NP>
COLLECT_FN void share_states(float* smem, const int (&at)[NB], const int (&sec)[NB], const int (&step)[NB],
                             const Out& o, unsigned long long base, unsigned n, unsigned steps, unsigned rank,
                             unsigned& phases) {
  float* bar = smem + SM_MBAR + 2 * MB_STATES;
  if (threadIdx.x == 0) mbar_expect(bar, (unsigned)((E - owned_rows((int)rank)) * NP * STATE_QUADS * 16));
  // Peers: a row's quads.
  for (int task = threadIdx.x; task < EPC * NP * C * STATE_QUADS; task += T) {
    const int q = task % STATE_QUADS, c = task / STATE_QUADS % C, b = task / (STATE_QUADS * C) % NP,
              slot = task / (STATE_QUADS * C * NP);
    const int i = slot * C + (int)rank;
    if (i >= E || c == (int)rank) continue;
    const int k = at[b] + i * LD_STATE + 4 * q;
    st_async4(smem + k, (unsigned)c, lds4(smem + k), bar);
  }
  // The outputs: the active episodes' rows.
  for (int task = threadIdx.x; task < EPC * NB * STATE_DIM; task += T) {
    const int k = task % STATE_DIM, b = task / STATE_DIM % NB, slot = task / (STATE_DIM * NB);
    const int i = slot * C + (int)rank;
    const unsigned long long e = base + (unsigned long long)i;
    if (i < E && step[b] >= 0 && e < n)
      o.f[sec[b] * o.nl + (e * steps + (unsigned)step[b]) * STATE_DIM + k] = smem[at[b] + i * LD_STATE + k];
  }
  mbar_wait(bar, (phases >> MB_STATES) & 1u);
  phases ^= 1u << MB_STATES;
}

// Roles in the simulator phase. With enough warps (HELPERS) each owned episode slot s has a warp of
// its own (its lane 0 the owner, the other lanes build the state rows) and warps EPC .. WARPS - 1 run
// the curiosity model (named barrier 1 between its layers), all at once; otherwise owner s is thread s
// and the whole CTA runs the curiosity model after the simulator step.
constexpr int WARPS = T / 32;
constexpr bool HELPERS = WARPS >= EPC + 1;
constexpr int CUR_WARP0 = HELPERS ? EPC : 0;
constexpr int CUR_THREADS = HELPERS ? 32 * (WARPS - EPC) : T;
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
    env_step(ep, m, p, window, a, 0.0f, false, so);
    state_portfolio(ep, xt + MARKET_FEATURES);
    restarts = so.done || so.truncated;
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
  if (CUR_SMEM) load_curiosity(nets, smem + SM_CW);
  // One arrival per phase (thread 0's expect_tx); the bytes do the rest.
  if (threadIdx.x == 0) {
    for (int k = 0; k < MB_COUNT; k++) mbar_init(smem + SM_MBAR + 2 * k, 1);
    mbar_init_fence();
  }
  // Every CTA of the cluster is running (its shared memory may be written, its mbarriers are
  // initialised) past this barrier.
  cluster_sync();

  Out o = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  // The first decision's states and their online Q.
  if (owner) build_row(smem, SM_X0, i, ep, m, active);
  block_sync();
  unsigned phases = 0;
  share_states<1, 1>(smem, {SM_X0}, {OUT_F_STATES}, {0}, o, base, u.n, u.steps, rank, phases);
  auto none = [](int) {};
  const ValueLane vq = value_lane<NET_Q_BASE>(nets);
  dueling_va(smem, rank, phases, vq, none);
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
    block_sync();

    // The simulator phase. The step leaves the curiosity bonus out (it only adds to the reward; the
    // model runs beside the simulator and the owner adds bonus and total in the layer phases below).
    StepOut so{};
    const int action = active ? actions[i] : 0;
    if (HELPERS) {
      if (warp < EPC) {
        if (warp_active)
          owner_step(smem, episodes[warp], m, p, div_window + (unsigned long long)(base + wi) * p.diversity_window,
                     actions[wi], (unsigned)(base + wi), wi, so);
      } else if (u.curiosity) {
        curiosity_model(nets, smem, (int)threadIdx.x - 32 * CUR_WARP0, CUR_THREADS,
                        [] { named_sync(1, CUR_THREADS); });
      }
    } else {
      if (active) env_step(ep, m, p, window, action, 0.0f, false, so);
      if (owner) {
        build_row(smem, SM_XT, i, ep, m, active);
        const bool restarts = active && (so.done || so.truncated);
        if (restarts) restart_if_ended(ep, m, p, window, e, so);
        // The next decision's state: the restarted episode's first, or s' again (its row copied).
        if (restarts) {
          build_row(smem, SM_X0, i, ep, m, active);
        } else {
          for (int k = 0; k < LD_STATE; k += 4)
            sts4(smem + SM_X0 + i * LD_STATE + k, lds4(smem + SM_XT + i * LD_STATE + k));
        }
      }
      if (u.curiosity) curiosity_model(nets, smem, (int)threadIdx.x, T, [] { block_sync(); });
    }
    block_sync();
    // s' stays with its owner (the output); the next decision's rows go to every CTA.
    share_states<2, 1>(smem, {SM_X0, SM_XT}, {OUT_F_STATES, OUT_F_NEXT_STATES},
                       {l + 1 < u.steps ? (int)l + 1 : -1, (int)l}, o, base, u.n, u.steps, rank, phases);
    // In the second layer phase, while the peers' outputs travel: the owner's curiosity bonus and total
    // (env_step's operations, from the model's error on decision bar t: curiosity_mse against
    // features[t + 1][0..32), the first floats of the next-state row s') and the step's outputs.
    auto finish = [&](int layer) {
      if (layer != 1 || !active) return;
      if (u.curiosity) {
        so.curiosity =
            curiosity_bonus(p, curiosity_mse_next<false>(smem + SM_CO + slot * LD_CO, smem + SM_XT + i * LD_STATE));
        so.total = step_total(so);
      }
      write_step(o, so, action);
    };
    dueling_va(smem, rank, phases, vq, finish);
  }
  if (active) store_episode(ep, env_f, env_i, e);
  // No CTA leaves while a peer may still write into its shared memory.
  cluster_sync();
}
