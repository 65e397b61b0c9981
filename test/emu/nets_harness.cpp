// Runs the collection networks of cuda/collect_nets.cuh on the CPU emulator (collect_emu.cuh) for
// test/unit/kernels/collect-nets-cuda.test.ts. Build: g++ -std=c++17 -DFOXHUNT_EMU [-DCOLLECT_TF32=1]
// -Icuda -Itest/emu/. Usage:
//   nets_harness layout                 prints the flat layouts the kernels use, as JSON
//   nets_harness NET IN.bin OUT.bin     NET = plain | plain_hid | plain_at2 | c51 | iqn | actor | critic |
//                                       critic_at1 | curiosity
// (plain_hid: the plain head with the stream hidden layers in a buffer of their own, as the
// 64-episode plan runs it; plain: fused in place, as the static plans do)
// IN.bin: the f32 parameters, then ROWS input rows (54 floats; 35 for curiosity), then for iqn
// ROWS x IQN_K taus. OUT.bin: ROWS x 45 Q-values / logits (1 value for the critic, 32 for curiosity).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "collect_nets.cuh"

constexpr int ROWS = 20;      // two m16 tiles, the second partial
constexpr int C51_ROWS = 5;       // chunks of 5 actions
constexpr int C51_WHOLE_ROWS = 2; // all 45 actions' logits at once
constexpr int IQN_ROWS = 3;
constexpr int IQN_K = 8;
constexpr int IQN_TC = 4;  // 12 rows per tau chunk: a partial m16 tile
constexpr float VMIN = -10.0f, VMAX = 10.0f;

struct Job {
  std::string net;
  const float* params;
  const float* x;
  const float* taus;
  float* out;
  int rows, in, out_width;
};

static void load_rows(const Job& j, float* xs, int ld) {
  for (int task = threadIdx.x; task < j.rows * ld; task += COLLECT_THREADS) {
    const int r = task / ld, c = task % ld;
    xs[task] = c < j.in ? j.x[r * j.in + c] : 0.0f;
  }
  block_sync();
}

static void store_rows(const Job& j, const float* y, int ld) {
  for (int task = threadIdx.x; task < j.rows * j.out_width; task += COLLECT_THREADS) {
    j.out[task] = y[(task / j.out_width) * ld + task % j.out_width];
  }
}

// Buffer plans as the collection kernels use them.
template <int HEAD, int R, int BASE = 0>
static void run_dueling(const Job& j) {
  COLLECT_SMEM(smem, 1 << 18);
  float* act = smem;
  float* rest = act + R * LD_TRUNK;
  load_rows(j, act, LD_TRUNK);
  if constexpr (HEAD == HEAD_PLAIN) {
    float* v = rest;
    float* a = v + align4(R);
    float* hid = j.net == "plain_hid" ? a + align4(R * LD_Q) : act;
    dueling_q<BASE, R>(j.params, act, hid, v, a, act);
    store_rows(j, act, LD_Q);
  } else if constexpr (HEAD == HEAD_C51) {
    C51Buffers b;
    b.act = act;
    b.chunk = rest;
    b.v = b.chunk + R * LD_C51_CHUNK(R);
    b.mean = b.v + R * LD_ATOMS;
    b.q = b.mean + R * LD_ATOMS;
    c51_q<0, R>(j.params, b, VMIN, VMAX);
    store_rows(j, b.q, LD_Q);
  } else {
    constexpr int RC = R * IQN_TC;
    IqnBuffers b;
    b.act = act;
    b.taus = rest;
    b.ld_tau = IQN_K;
    b.hq = b.taus + R * IQN_K;
    b.va = b.hq + RC * LD_TRUNK;
    b.q = b.va + RC * LD_VA;
    for (int task = threadIdx.x; task < R * IQN_K; task += COLLECT_THREADS) b.taus[task] = j.taus[task];
    iqn_q<0, R, IQN_K, IQN_TC>(j.params, b);
    store_rows(j, b.q, LD_Q);
  }
}

static void run_ppo_or_curiosity(const Job& j) {
  COLLECT_SMEM(smem, 1 << 18);
  float* xs = smem;
  float* act = xs + ROWS * LD_STATE;
  float* y = act + ROWS * LD_CRITIC;
  if (j.net == "actor") {
    load_rows(j, xs, LD_STATE);
    actor_logits<0, ROWS>(j.params, xs, act, y);
    store_rows(j, y, LD_Q);
  } else if (j.net == "critic") {
    load_rows(j, xs, LD_STATE);
    critic_value<0, ROWS>(j.params, xs, act, y, 1);
    store_rows(j, y, 1);
  } else if (j.net == "critic_at1") {
    load_rows(j, xs, LD_STATE);
    critic_value<1, ROWS>(j.params, xs, act, y, 1);
    store_rows(j, y, 1);
  } else {
    load_rows(j, xs, LD_CURIOSITY);
    curiosity_predict<0, ROWS>(j.params, xs);
    store_rows(j, xs, LD_CURIOSITY);
  }
}

static void kernel(void* arg) {
  const Job& j = *static_cast<const Job*>(arg);
  if (j.net == "plain" || j.net == "plain_hid") run_dueling<HEAD_PLAIN, ROWS>(j);
  else if (j.net == "plain_at2") run_dueling<HEAD_PLAIN, ROWS, 2>(j);
  else if (j.net == "c51") run_dueling<HEAD_C51, C51_ROWS>(j);
  else if (j.net == "c51_whole") run_dueling<HEAD_C51, C51_WHOLE_ROWS>(j);
  else if (j.net == "iqn") run_dueling<HEAD_IQN, IQN_ROWS>(j);
  else run_ppo_or_curiosity(j);
}

static void print_layout() {
  std::printf("{\"plain\": [%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d],", Dueling<0>::S0_W, Dueling<0>::S0_B,
              Dueling<0>::S1_W, Dueling<0>::S1_B, Dueling<0>::V0_W, Dueling<0>::V0_B, Dueling<0>::V1_W,
              Dueling<0>::V1_B, Dueling<0>::A0_W, Dueling<0>::A0_B, Dueling<0>::A1_W, Dueling<0>::A1_B,
              Dueling<0>::SIZE);
  std::printf("\"c51\": [%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d],", Dueling<1>::S0_W, Dueling<1>::S0_B,
              Dueling<1>::S1_W, Dueling<1>::S1_B, Dueling<1>::V0_W, Dueling<1>::V0_B, Dueling<1>::V1_W,
              Dueling<1>::V1_B, Dueling<1>::A0_W, Dueling<1>::A0_B, Dueling<1>::A1_W, Dueling<1>::A1_B,
              Dueling<1>::SIZE);
  std::printf("\"iqn\": [%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d],", Dueling<2>::S0_W, Dueling<2>::S0_B,
              Dueling<2>::S1_W, Dueling<2>::S1_B, Dueling<2>::TE_W, Dueling<2>::TE_B, Dueling<2>::V0_W,
              Dueling<2>::V0_B, Dueling<2>::V1_W, Dueling<2>::V1_B, Dueling<2>::A0_W, Dueling<2>::A0_B,
              Dueling<2>::A1_W, Dueling<2>::A1_B, Dueling<2>::SIZE);
  std::printf("\"actor\": [%d,%d,%d,%d,%d,%d,%d],", Actor<>::L0_W, Actor<>::L0_B, Actor<>::L1_W, Actor<>::L1_B,
              Actor<>::L2_W, Actor<>::L2_B, Actor<>::SIZE);
  std::printf("\"critic\": [%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d],", Critic<>::L0_W, Critic<>::L0_B, Critic<>::L1_W,
              Critic<>::L1_B, Critic<>::L2_W, Critic<>::L2_B, Critic<>::L3_W, Critic<>::L3_B, Critic<>::L4_W, Critic<>::L4_B,
              Critic<>::L5_W, Critic<>::L5_B, Critic<>::SIZE);
  std::printf("\"curiosity\": [%d,%d,%d,%d,%d]}\n", Curiosity<>::L0_W, Curiosity<>::L0_B, Curiosity<>::L1_W,
              Curiosity<>::L1_B, Curiosity<>::SIZE);
}

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "layout") {
    print_layout();
    return 0;
  }
  if (argc != 4) {
    std::fprintf(stderr, "usage: nets_harness layout | NET IN.bin OUT.bin\n");
    return 2;
  }
  Job j;
  j.net = argv[1];
  int size = 0;
  if (j.net == "plain" || j.net == "plain_hid" || j.net == "plain_at2")
    size = Dueling<0>::SIZE, j.rows = ROWS, j.in = STATE_DIM, j.out_width = NUM_ACTIONS;
  else if (j.net == "c51") size = Dueling<1>::SIZE, j.rows = C51_ROWS, j.in = STATE_DIM, j.out_width = NUM_ACTIONS;
  else if (j.net == "c51_whole")
    size = Dueling<1>::SIZE, j.rows = C51_WHOLE_ROWS, j.in = STATE_DIM, j.out_width = NUM_ACTIONS;
  else if (j.net == "iqn") size = Dueling<2>::SIZE, j.rows = IQN_ROWS, j.in = STATE_DIM, j.out_width = NUM_ACTIONS;
  else if (j.net == "actor") size = Actor<>::SIZE, j.rows = ROWS, j.in = STATE_DIM, j.out_width = NUM_ACTIONS;
  else if (j.net == "critic" || j.net == "critic_at1") size = Critic<>::SIZE, j.rows = ROWS, j.in = STATE_DIM, j.out_width = 1;
  else if (j.net == "curiosity") size = Curiosity<>::SIZE, j.rows = ROWS, j.in = Curiosity<>::IN, j.out_width = 32;
  else {
    std::fprintf(stderr, "nets_harness: unknown net %s\n", argv[1]);
    return 2;
  }
  const size_t n_in = size + j.rows * j.in + (j.net == "iqn" ? j.rows * IQN_K : 0);
  std::vector<float> in(n_in), out(j.rows * j.out_width);
  FILE* f = std::fopen(argv[2], "rb");
  if (!f || std::fread(in.data(), 4, n_in, f) != n_in) {
    std::fprintf(stderr, "nets_harness: %s must hold %zu floats\n", argv[2], n_in);
    return 2;
  }
  std::fclose(f);
  // *_atB: the net sits B floats into its buffer, as the kernels' second and later nets do (the
  // DQN target net at 2 mod 4 floats, the PPO critic at an odd offset): misaligned weight rows.
  const int base = j.net == "plain_at2" ? 2 : j.net == "critic_at1" ? 1 : 0;
  std::vector<float> shifted(size + base);
  std::copy(in.begin(), in.begin() + size, shifted.begin() + base);
  j.params = base ? shifted.data() : in.data();
  j.x = in.data() + size;
  j.taus = j.x + j.rows * j.in;
  j.out = out.data();
  emu::launch({1, 1, 1}, {COLLECT_THREADS, 1, 1}, 1u << 20, kernel, &j);
  f = std::fopen(argv[3], "wb");
  std::fwrite(out.data(), 4, out.size(), f);
  std::fclose(f);
  return 0;
}
