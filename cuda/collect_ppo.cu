// collect_ppo: L steps of N episodes in one launch, the CUDA twin of src/collect/ppo.ts (descriptor
// src/kernels/collect_ppo.ts). Per step: build the 54-float state, critic value and actor logits,
// sample the action from the softmax by a CDF scan with Philox(Action, e, g, 0), log-probability,
// curiosity model, simulator step (collect_env.cuh); where the step truncates, or it is the last
// step and the episode goes on, the critic's value of the pre-restart next state (the bootstrap);
// restart of finished episodes. After the L steps each episode's thread runs GAE backwards over its
// outputs (src/collect/gae.ts), writing advantages and returns = advantages + values.
//
// Bindings (src/kernels/collect_layout.ts): features [T, 51], ohlc [T, 4], spread [T], entropy
// [W + 1], nets (actor at NET_A_BASE, critic at NET_V_BASE, curiosity at NET_C_BASE), env_f, env_i,
// div_window (persistent episodes), out_f / out_i (sections OUT_F_* / OUT_I_*, element
// section * N * L + (e * L + l) * width + k). Uniforms: struct Uniforms of the preamble.
// The bootstrap value of step l waits in the advantages slot of step l until GAE reads it.
//
// Block: WG_X threads own TILE_E episodes (<= 16 in 48 KiB of static shared memory; larger tiles, the
// TF32 default of 32 episodes x 512 threads at large N, take the plan from DYN_SMEM_BYTES of dynamic
// shared memory, so each weight read from L2 serves twice the rows). SEED_VARIANT 0 tiled
// (collect_dqn.cu describes the scheme); 1 the seed design, one thread per episode (benchmark).
//
// Numerics: TF32 0 (default, parity) is the reference's f32 arithmetic except expf / logf in the
// sampling (a few ulp: an action can differ only where u * S lies within ulps of a CDF boundary);
// TF32 1 runs the layer products on tensor cores (~1e-3 relative per layer).
#ifndef TF32
#define TF32 0
#endif
#define COLLECT_TF32 TF32
#define COLLECT_THREADS WG_X
#ifdef DYN_SMEM_BYTES
#define COLLECT_DYN_SMEM
#endif

#include "collect_io.cuh"
#include "collect_nets.cuh"
#include "grid.cuh"

using ANet = Actor<NET_A_BASE>;
using VNet = Critic<NET_V_BASE>;
using CNet = Curiosity<NET_C_BASE>;
static_assert(ANet::SIZE == NET_A_SIZE && ANet::L2_B == NET_A_2_B, "actor layout differs from src/nets/layout.ts");
static_assert(VNet::SIZE == NET_V_SIZE && VNet::L5_B == NET_V_5_B, "critic layout differs from src/nets/layout.ts");
static_assert(CNet::SIZE == NET_C_SIZE && CNet::L1_B == NET_C_1_B, "curiosity layout differs from src/nets/layout.ts");
static_assert(WG_X % 32 == 0 && WG_Y == 1 && WG_Z == 1, "collect_ppo runs on 1-D blocks of whole warps");

struct Sample {
  int action;
  float log_prob;
};

// src/collect/ppo.ts sampleSoftmax: CDF scan of the softmax with the unit float u.
COLLECT_DEVICE Sample sample_softmax(const float* logits, float u) {
  float m = logits[0];
  for (int k = 1; k < NUM_ACTIONS; k++)
    if (logits[k] > m) m = logits[k];
  float sum = 0.0f;
  for (int k = 0; k < NUM_ACTIONS; k++) sum = fadd(sum, expf(fsub(logits[k], m)));
  const float threshold = fmul(u, sum);
  Sample s = {NUM_ACTIONS - 1, 0.0f};
  float cdf = 0.0f;
  for (int k = 0; k < NUM_ACTIONS - 1; k++) {
    cdf = fadd(cdf, expf(fsub(logits[k], m)));
    if (threshold < cdf) {
      s.action = k;
      break;
    }
  }
  s.log_prob = fsub(fsub(logits[s.action], m), logf(sum));
  return s;
}

COLLECT_DEVICE Sample sample_action(const float* logits, unsigned e, unsigned g, unsigned k0, unsigned k1) {
  const uint4 w = philox4x32_10(make_uint4(STREAM_ACTION, e, g, 0u), k0, k1);
  return sample_softmax(logits, philox_unit_float(w.x));
}

// The bootstrap is needed after a step that did not end the episode but truncated it or is the
// launch's last.
COLLECT_DEVICE bool needs_bootstrap(const StepOut& so, unsigned l, unsigned steps) {
  return !so.done && (so.truncated || l + 1 == steps);
}

COLLECT_DEVICE void write_ppo_step(const Out& o, const StepOut& so, const Sample& s, float value) {
  write_step(o, so, s.action);
  *out_f_at(o, OUT_F_LOG_PROBS, 1) = s.log_prob;
  *out_f_at(o, OUT_F_VALUES, 1) = value;
}

// src/collect/gae.ts over episode e's L steps; bootstrap values wait in the advantages slots.
COLLECT_DEVICE void gae_episode(const Out& base, unsigned steps, float gamma, float lambda) {
  const float gl = fmul(gamma, lambda);
  float carry_adv = 0.0f;
  Out o = base;
  for (unsigned k = steps; k-- > 0;) {
    o.idx = base.idx + k;
    const float value = *out_f_at(o, OUT_F_VALUES, 1);
    float next = 0.0f;
    float carry = 0.0f;
    if (!*out_i_at(o, OUT_I_DONES)) {
      if (*out_i_at(o, OUT_I_TRUNCATEDS) || k + 1 == steps) {
        next = *out_f_at(o, OUT_F_ADVANTAGES, 1);
      } else {
        Out on = o;
        on.idx++;
        next = *out_f_at(on, OUT_F_VALUES, 1);
        carry = carry_adv;
      }
    }
    const float delta = fsub(fadd(*out_f_at(o, OUT_F_REWARDS, 1), fmul(gamma, next)), value);
    const float adv = fadd(delta, fmul(gl, carry));
    *out_f_at(o, OUT_F_ADVANTAGES, 1) = adv;
    *out_f_at(o, OUT_F_RETURNS, 1) = fadd(adv, value);
    carry_adv = adv;
  }
}

#if SEED_VARIANT == 0

constexpr int E = TILE_E;
// Shared-memory plan (floats): xs [E, LD_STATE] states (kept through both nets), act
// [E, LD_CRITIC] the layer chains (then the curiosity rows), logits [E, LD_Q], value [E], one flag,
// the episodes.
constexpr int SM_XS = 0;
constexpr int SM_ACT = align4(SM_XS + E * LD_STATE);
constexpr int SM_LOGITS = align4(SM_ACT + E * LD_CRITIC);
constexpr int SM_VALUE = align4(SM_LOGITS + E * LD_Q);
constexpr int SM_FLAG = align4(SM_VALUE + E);
// The episodes' simulator state lives here between the env phases rather than in registers that
// would stay live (and spill) through every layer.
constexpr int SM_EPISODES = align4(SM_FLAG + 1);
constexpr int SM_FLOATS = align4(SM_EPISODES + E * (int)(sizeof(Episode) / 4));
#ifdef DYN_SMEM_BYTES
// The descriptor (src/kernels/collect_ppo.ts cudaPpoSharedBytes) sizes the launch from the same plan.
static_assert(SM_FLOATS * 4 == DYN_SMEM_BYTES, "collect_ppo: DYN_SMEM_BYTES differs from the shared-memory plan");
static_assert(DYN_SMEM_BYTES <= 227 * 1024, "collect_ppo: TILE_E too large for 227 KiB of shared memory");
#else
static_assert(SM_FLOATS * 4 <= 48 * 1024,
              "collect_ppo: TILE_E too large for 48 KiB of static shared memory (<= 16); larger tiles take "
              "dynamic shared memory (DYN_SMEM_BYTES)");
#endif
static_assert(E <= COLLECT_THREADS, "collect_ppo: one thread per episode runs the simulator");

COLLECT_DEVICE void state_row(float* row, const Episode& ep, const Market& m, bool active) {
  if (active) build_state(ep, m, row);
  for (int k = active ? STATE_DIM : 0; k < LD_STATE; k++) row[k] = 0.0f;
}

// The register budget follows the block size (a 512-thread block gets 128 registers a thread, the
// 256-thread one up to 255): without the bound a 512-thread launch could fail for registers.
#ifdef FOXHUNT_EMU
#define PPO_LAUNCH_BOUNDS
#else
#define PPO_LAUNCH_BOUNDS __launch_bounds__(WG_X, 1)
#endif

extern "C" __global__ void PPO_LAUNCH_BOUNDS collect_ppo(KERNEL_ARGS) {
  COLLECT_SMEM(smem, SM_FLOATS);
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const int r = threadIdx.x;
  const unsigned long long e64 = flat_block_id() * E + r;
  const bool env_thread = r < E;
  const bool active = env_thread && e64 < u.n;
  const unsigned e = (unsigned)e64;
  Episode& ep = reinterpret_cast<Episode*>(smem + SM_EPISODES)[env_thread ? r : 0];
  int* window = div_window + (unsigned long long)e * p.diversity_window;
  if (active) load_episode(ep, env_f, env_i, e);
  float* xs = smem + SM_XS + r * LD_STATE;
  float* act = smem + SM_ACT;
  float* value = smem + SM_VALUE;
  float* flag = smem + SM_FLAG;
  const Out start = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  Out o = start;
  for (unsigned l = 0; l < u.steps; l++, o.idx++) {
    const unsigned g = u.stepBase + l;
    if (env_thread) {
      state_row(xs, ep, m, active);
      if (active) {
        float* s = out_f_at(o, OUT_F_STATES, STATE_DIM);
        for (int k = 0; k < STATE_DIM; k++) s[k] = xs[k];
      }
    }
    if (r == 0) *flag = 0.0f;
    block_sync();
    critic_value<NET_V_BASE, E>(nets, smem + SM_XS, act, value, 1);
    actor_logits<NET_A_BASE, E>(nets, smem + SM_XS, act, smem + SM_LOGITS);

    Sample s = {0, 0.0f};
    if (active) s = sample_action(smem + SM_LOGITS + r * LD_Q, e, g, p.key0, p.key1);
    if (env_thread && u.curiosity) {
      curiosity_input(act + r * LD_CURIOSITY, LD_CURIOSITY, features, active ? ep.bar : 0, action_category(s.action));
    }
    block_sync();
    if (u.curiosity) curiosity_predict<NET_C_BASE, E>(nets, act);

    StepOut so;
    bool boot = false;
    if (active) {
      const float mse = u.curiosity ? curiosity_mse(act + r * LD_CURIOSITY, features, ep.bar) : 0.0f;
      env_step(ep, m, p, window, s.action, mse, u.curiosity != 0, so);
      write_ppo_step(o, so, s, value[r]);
      boot = needs_bootstrap(so, l, u.steps);
      if (boot) {
        state_row(xs, ep, m, true);
        *flag = 1.0f;
      }
    }
    block_sync();
    if (*flag != 0.0f) {
      // The next states of the other rows are stale or zero: their values are computed and unused.
      critic_value<NET_V_BASE, E>(nets, smem + SM_XS, act, value, 1);
      if (boot) *out_f_at(o, OUT_F_ADVANTAGES, 1) = value[r];
    }
    if (active) restart_if_ended(ep, m, p, window, e, so);
    block_sync();
  }
  if (active) {
    store_episode(ep, env_f, env_i, e);
    gae_episode(start, u.steps, u.gamma, u.lambda);
  }
}

#else  // SEED_VARIANT

template <int Base>
COLLECT_FN float critic_thread(const float* nets, const float* x) {
  using L = Critic<Base>;
  float a[512], b[384], v[1];
  dense_thread<STATE_DIM, 512, ACT_RELU, L::L0_W, L::L0_B>(nets, x, a);
  dense_thread<512, 384, ACT_RELU, L::L1_W, L::L1_B>(nets, a, b);
  dense_thread<384, 256, ACT_RELU, L::L2_W, L::L2_B>(nets, b, a);
  dense_thread<256, 128, ACT_RELU, L::L3_W, L::L3_B>(nets, a, b);
  dense_thread<128, 64, ACT_RELU, L::L4_W, L::L4_B>(nets, b, a);
  dense_thread<64, 1, ACT_NONE, L::L5_W, L::L5_B>(nets, a, v);
  return v[0];
}

template <int Base>
COLLECT_FN void actor_thread(const float* nets, const float* x, float* logits) {
  using L = Actor<Base>;
  float a[128], b[64];
  dense_thread<STATE_DIM, 128, ACT_RELU, L::L0_W, L::L0_B>(nets, x, a);
  dense_thread<128, 64, ACT_RELU, L::L1_W, L::L1_B>(nets, a, b);
  dense_thread<64, NUM_ACTIONS, ACT_NONE, L::L2_W, L::L2_B>(nets, b, logits);
}

extern "C" __global__ void collect_ppo(KERNEL_ARGS) {
  const EnvScalars p = env_scalars(u);
  const Market m = {features, ohlc, spread, entropy};
  const unsigned long long e64 = flat_thread_id();
  if (e64 >= u.n) return;
  const unsigned e = (unsigned)e64;
  Episode ep;
  int* window = div_window + (unsigned long long)e * p.diversity_window;
  load_episode(ep, env_f, env_i, e);
  float s[STATE_DIM], logits[NUM_ACTIONS], cur_in[CNet::IN], cur_h[CNet::HIDDEN], cur_out[CNet::OUT];
  const Out start = {out_f, out_i, (unsigned long long)u.n * u.steps, (unsigned long long)e * u.steps};
  Out o = start;
  for (unsigned l = 0; l < u.steps; l++, o.idx++) {
    const unsigned g = u.stepBase + l;
    build_state(ep, m, s);
    float* so_s = out_f_at(o, OUT_F_STATES, STATE_DIM);
    for (int k = 0; k < STATE_DIM; k++) so_s[k] = s[k];
    const float value = critic_thread<NET_V_BASE>(nets, s);
    actor_thread<NET_A_BASE>(nets, s, logits);
    const Sample smp = sample_action(logits, e, g, p.key0, p.key1);
    float mse = 0.0f;
    if (u.curiosity) {
      curiosity_input(cur_in, CNet::IN, features, ep.bar, action_category(smp.action));
      dense_thread<CNet::IN, CNet::HIDDEN, ACT_LEAKY, CNet::L0_W, CNet::L0_B>(nets, cur_in, cur_h);
      dense_thread<CNet::HIDDEN, CNet::OUT, ACT_NONE, CNet::L1_W, CNet::L1_B>(nets, cur_h, cur_out);
      mse = curiosity_mse(cur_out, features, ep.bar);
    }
    StepOut so;
    env_step(ep, m, p, window, smp.action, mse, u.curiosity != 0, so);
    write_ppo_step(o, so, smp, value);
    if (needs_bootstrap(so, l, u.steps)) {
      build_state(ep, m, s);
      *out_f_at(o, OUT_F_ADVANTAGES, 1) = critic_thread<NET_V_BASE>(nets, s);
    }
    restart_if_ended(ep, m, p, window, e, so);
  }
  store_episode(ep, env_f, env_i, e);
  gae_episode(start, u.steps, u.gamma, u.lambda);
}

#endif
