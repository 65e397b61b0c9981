// The simulator step of one episode (SPEC 3-6), a line-by-line port of src/env/ (step.ts,
// portfolio.ts, barrier.ts, trade.ts, diversity.ts, state.ts). One thread owns one episode: its
// portfolio, barrier and counters (struct Episode) are loaded once per launch (the tiled kernels
// keep them in shared memory, the seed variant in registers) and go back to the per-episode
// buffers at its end, so episodes persist across launches.
//
// Buffers (docs/ENV.md): env_f [N, ENV_F] f32, env_i [N, ENV_I] i32 (fields ENVF_* / ENVI_*, and
// ENV_F, ENV_I, STREAM_*: constants of the kernel preamble, from src/env/state.ts),
// window [N, W] i32, market features [T, 51], ohlc [T, 4], spread [T] (bps), entropy table
// [W + 1] (f32 c * log2 c, host-built so the diversity decision needs no logarithm here).
//
// Numerics: every f32 operation the reference rounds is spelled fadd / fsub / fmul / fdiv (never
// fused), comparisons are on the same operands in the same order, so the step is bit-identical to
// the TS reference; the only non-exact input is the curiosity mse (from the network).
#pragma once

#include "collect_dims.cuh"
#include "collect_port.cuh"
#include "philox.cuh"

#define BARRIER_NONE 0
#define BARRIER_PROFIT 1
#define BARRIER_STOP 2
#define BARRIER_TIME 3

// The simulator scalars of src/env/params.ts (EnvParams), as the kernels receive them.
struct EnvScalars {
  float market_rate, passive_rate, passive_down, passive_up, reserve_pct, initial_capital;
  float profit_up, profit_down, stop_up, stop_down;
  int max_holding_bars, barrier_terminates;
  float pnl_scale, barrier_scale, risk_threshold, risk_scale;
  int diversity_window, diversity_min_actions;
  float diversity_cutoff, diversity_penalty, curiosity_scale, curiosity_max;
  int episode_bars;
  float collapse_fraction;
  // Split [split_start, split_end) and the Philox key of the run.
  int split_start, split_end;
  unsigned key0, key1;
};

// The simulator block of a kernel's uniform struct (src/kernels/collect_layout.ts ENV_UNIFORMS).
template <class Uniforms>
COLLECT_DEVICE EnvScalars env_scalars(const Uniforms& u) {
  EnvScalars p;
  p.market_rate = u.marketRate;
  p.passive_rate = u.passiveRate;
  p.passive_down = u.passiveDown;
  p.passive_up = u.passiveUp;
  p.reserve_pct = u.reservePct;
  p.initial_capital = u.initialCapital;
  p.profit_up = u.profitUp;
  p.profit_down = u.profitDown;
  p.stop_up = u.stopUp;
  p.stop_down = u.stopDown;
  p.max_holding_bars = u.maxHoldingBars;
  p.barrier_terminates = u.barrierTerminates;
  p.pnl_scale = u.pnlScale;
  p.barrier_scale = u.barrierScale;
  p.risk_threshold = u.riskThreshold;
  p.risk_scale = u.riskScale;
  p.diversity_window = u.diversityWindow;
  p.diversity_min_actions = u.diversityMinActions;
  p.diversity_cutoff = u.diversityCutoff;
  p.diversity_penalty = u.diversityPenalty;
  p.curiosity_scale = u.curiosityScale;
  p.curiosity_max = u.curiosityMax;
  p.episode_bars = u.episodeBars;
  p.collapse_fraction = u.collapseFraction;
  p.split_start = u.splitStart;
  p.split_end = u.splitEnd;
  p.key0 = u.key0;
  p.key1 = u.key1;
  return p;
}

struct Market {
  const float* __restrict__ features;
  const float* __restrict__ ohlc;
  const float* __restrict__ spread;
  const float* __restrict__ entropy;
};

// One episode's state: the EnvF and EnvI fields of src/env/state.ts, in registers.
struct Episode {
  float cash, units, entry, v0, spread, last, reserve, costs, profit_level, stop_level;
  int bar, start_bar, step, expiry, restarts, div_head, div_count, hist0, hist1, hist2;
};

// What one step reports (src/env/output.ts StepOut, without the next state).
struct StepOut {
  int bar, action, category, filled, barrier_event, done, truncated;
  float fill_price, traded, exit_price, units, cash, value, costs;
  float pnl, barrier, risk, diversity, curiosity, total;
};

COLLECT_DEVICE void load_episode(Episode& ep, const float* env_f, const int* env_i, int e) {
  const float* f = env_f + e * ENV_F;
  const int* i = env_i + e * ENV_I;
  ep.cash = f[ENVF_CASH];
  ep.units = f[ENVF_UNITS];
  ep.entry = f[ENVF_ENTRY_PRICE];
  ep.v0 = f[ENVF_INITIAL_CAPITAL];
  ep.spread = f[ENVF_SPREAD];
  ep.last = f[ENVF_LAST_PRICE];
  ep.reserve = f[ENVF_RESERVE_PCT];
  ep.costs = f[ENVF_CUM_COSTS];
  ep.profit_level = f[ENVF_PROFIT_LEVEL];
  ep.stop_level = f[ENVF_STOP_LEVEL];
  ep.bar = i[ENVI_BAR];
  ep.start_bar = i[ENVI_START_BAR];
  ep.step = i[ENVI_STEP];
  ep.expiry = i[ENVI_EXPIRY];
  ep.restarts = i[ENVI_RESTARTS];
  ep.div_head = i[ENVI_DIV_HEAD];
  ep.div_count = i[ENVI_DIV_COUNT];
  ep.hist0 = i[ENVI_HIST];
  ep.hist1 = i[ENVI_HIST + 1];
  ep.hist2 = i[ENVI_HIST + 2];
}

COLLECT_DEVICE void store_episode(const Episode& ep, float* env_f, int* env_i, int e) {
  float* f = env_f + e * ENV_F;
  int* i = env_i + e * ENV_I;
  f[ENVF_CASH] = ep.cash;
  f[ENVF_UNITS] = ep.units;
  f[ENVF_ENTRY_PRICE] = ep.entry;
  f[ENVF_INITIAL_CAPITAL] = ep.v0;
  f[ENVF_SPREAD] = ep.spread;
  f[ENVF_LAST_PRICE] = ep.last;
  f[ENVF_RESERVE_PCT] = ep.reserve;
  f[ENVF_CUM_COSTS] = ep.costs;
  f[ENVF_PROFIT_LEVEL] = ep.profit_level;
  f[ENVF_STOP_LEVEL] = ep.stop_level;
  i[ENVI_BAR] = ep.bar;
  i[ENVI_START_BAR] = ep.start_bar;
  i[ENVI_STEP] = ep.step;
  i[ENVI_EXPIRY] = ep.expiry;
  i[ENVI_RESTARTS] = ep.restarts;
  i[ENVI_DIV_HEAD] = ep.div_head;
  i[ENVI_DIV_COUNT] = ep.div_count;
  i[ENVI_HIST] = ep.hist0;
  i[ENVI_HIST + 1] = ep.hist1;
  i[ENVI_HIST + 2] = ep.hist2;
}

COLLECT_DEVICE int action_category(int a) {
  const int x = a / 9;
  return x <= 1 ? 0 : x == 2 ? 1 : 2;
}

COLLECT_DEVICE float portfolio_value(const Episode& ep) { return fadd(ep.cash, fmul(ep.units, ep.last)); }

COLLECT_DEVICE float position_norm(float units, float price, float value) {
  if (!(value > 0.0f)) return units > 0.0f ? 1.0f : units < 0.0f ? -1.0f : 0.0f;
  const float x = fdiv(fmul(units, price), value);
  return x > 1.0f ? 1.0f : x < -1.0f ? -1.0f : x;
}

// trade.ts applyTrade: cash -= u * price, then the fee is paid; returns the fee.
COLLECT_DEVICE float apply_trade(Episode& ep, float u, float price, float rate) {
  const float notional = fmul(u, price);
  const float fee = fmul(fabsf(notional), rate);
  ep.cash = fsub(fsub(ep.cash, notional), fee);
  ep.costs = fadd(ep.costs, fee);
  return fee;
}

COLLECT_DEVICE float with_half_spread(float price, int side, float spread_bps) {
  const float hs = fmul(spread_bps, (float)0.5e-4);
  return fmul(price, side > 0 ? fadd(1.0f, hs) : fsub(1.0f, hs));
}

COLLECT_DEVICE void arm_barrier(Episode& ep, const EnvScalars& p, float entry, bool long_pos, int open_bar) {
  ep.entry = entry;
  ep.profit_level = fmul(entry, long_pos ? p.profit_up : p.profit_down);
  ep.stop_level = fmul(entry, long_pos ? p.stop_down : p.stop_up);
  ep.expiry = open_bar + p.max_holding_bars;
}

COLLECT_DEVICE void disarm_barrier(Episode& ep) {
  ep.entry = 0.0f;
  ep.profit_level = 0.0f;
  ep.stop_level = 0.0f;
  ep.expiry = -1;
}

// portfolio.ts executeOrder: returns true when a position was opened in this bar.
COLLECT_DEVICE bool execute_order(Episode& ep, const Market& m, const EnvScalars& p, int a, StepOut& out) {
  const int t = ep.bar;
  const float* o1 = m.ohlc + (t + 1) * 4;
  const float close = ep.last;
  const float units = ep.units;
  const float value = portfolio_value(ep);

  const int xi = a / 9;
  const float exposure = xi == 0 ? -1.0f : xi == 1 ? -0.5f : xi == 2 ? 0.0f : xi == 3 ? 0.5f : 1.0f;
  const float target = fmul(exposure, fsub(1.0f, ep.reserve));
  const float target_notional = fmul(target, value);
  const float notional = fmul(units, close);
  const int side = target_notional > notional ? 1 : target_notional < notional ? -1 : 0;
  if (side == 0) return false;

  const int type = (a % 9) / 3;
  float price, rate;
  bool fills;
  if (type == 0) {
    price = with_half_spread(ldg1(o1), side, ep.spread);
    rate = p.market_rate;
    fills = true;
  } else if (type == 1) {
    price = close;
    rate = p.market_rate;
    fills = ldg1(o1 + 2) <= price && price <= ldg1(o1 + 1);
  } else {
    price = fmul(close, side > 0 ? p.passive_down : p.passive_up);
    rate = p.passive_rate;
    fills = side > 0 ? ldg1(o1 + 2) < price : ldg1(o1 + 1) > price;
  }
  if (!fills) return false;

  const float target_units = fdiv(target_notional, price);
  const int fi = a % 3;
  const float fraction = fi == 0 ? (float)(1.0 / 3.0) : fi == 1 ? (float)(2.0 / 3.0) : 1.0f;
  const bool reversal = (units > 0.0f && exposure < 0.0f) || (units < 0.0f && exposure > 0.0f);
  if (reversal) {
    const float opened = fmul(fraction, target_units);
    out.costs = fadd(out.costs, apply_trade(ep, -units, price, rate));
    out.costs = fadd(out.costs, apply_trade(ep, opened, price, rate));
    ep.units = opened;
    arm_barrier(ep, p, price, opened > 0.0f, t + 1);
    out.filled = 1;
    out.fill_price = price;
    out.traded = fsub(opened, units);
    return true;
  }

  const float gap_notional = fsub(target_notional, fmul(units, price));
  if (fmul((float)side, gap_notional) <= 0.0f) return false;
  const float u = fmul(fraction, fsub(target_units, units));
  out.costs = fadd(out.costs, apply_trade(ep, u, price, rate));
  const float next = fadd(units, u);
  ep.units = next;
  out.filled = 1;
  out.fill_price = price;
  out.traded = u;
  if (units == 0.0f) {
    arm_barrier(ep, p, price, next > 0.0f, t + 1);
    return true;
  }
  if (next == 0.0f) disarm_barrier(ep);
  return false;
}

// barrier.ts checkBarrier: the open position against bar t + 1; returns the event. A gap past a
// barrier fills at the open (stop first), then a touched barrier at its level, then time.
COLLECT_DEVICE int check_barrier(Episode& ep, const Market& m, const EnvScalars& p, StepOut& out) {
  const float units = ep.units;
  if (units == 0.0f) return BARRIER_NONE;
  const int bar1 = ep.bar + 1;
  const float* o1 = m.ohlc + bar1 * 4;
  const float open = ldg1(o1);
  const float high = ldg1(o1 + 1);
  const float low = ldg1(o1 + 2);
  const bool long_pos = units > 0.0f;
  int event = BARRIER_NONE;
  float level = 0.0f;
  if (long_pos ? open <= ep.stop_level : open >= ep.stop_level) {
    event = BARRIER_STOP;
    level = open;
  } else if (long_pos ? open >= ep.profit_level : open <= ep.profit_level) {
    event = BARRIER_PROFIT;
    level = open;
  } else if (long_pos ? low <= ep.stop_level : high >= ep.stop_level) {
    event = BARRIER_STOP;
    level = ep.stop_level;
  } else if (long_pos ? high >= ep.profit_level : low <= ep.profit_level) {
    event = BARRIER_PROFIT;
    level = ep.profit_level;
  } else if (bar1 >= ep.expiry) {
    event = BARRIER_TIME;
    level = ldg1(o1 + 3);
  }
  if (event == BARRIER_NONE) return event;
  const float exit = with_half_spread(level, long_pos ? -1 : 1, ep.spread);
  out.costs = fadd(out.costs, apply_trade(ep, -units, exit, p.market_rate));
  ep.units = 0.0f;
  disarm_barrier(ep);
  out.barrier_event = event;
  out.exit_price = exit;
  return event;
}

// diversity.ts pushCategory: the window lives in global memory (one read and one write a step).
COLLECT_DEVICE void push_category(Episode& ep, int* window, int w, int cat) {
  if (ep.div_count == w) {
    const int old = window[ep.div_head];
    ep.hist0 -= old == 0;
    ep.hist1 -= old == 1;
    ep.hist2 -= old == 2;
  } else {
    ep.div_count += 1;
  }
  window[ep.div_head] = cat;
  ep.hist0 += cat == 0;
  ep.hist1 += cat == 1;
  ep.hist2 += cat == 2;
  ep.div_head = ep.div_head + 1 == w ? 0 : ep.div_head + 1;
}

COLLECT_DEVICE float diversity_reward(const Episode& ep, const Market& m, const EnvScalars& p) {
  const int n = ep.div_count;
  if (n < p.diversity_min_actions) return 0.0f;
  const float* t = m.entropy;
  const float nh = fsub(fsub(fsub(ldg1(t + n), ldg1(t + ep.hist0)), ldg1(t + ep.hist1)), ldg1(t + ep.hist2));
  return nh < fmul((float)n, p.diversity_cutoff) ? p.diversity_penalty : 0.0f;
}

// state.ts startEpisode: flat, cash V_0, empty window, at `bar`.
COLLECT_DEVICE void start_episode(Episode& ep, const Market& m, const EnvScalars& p, int* window, int bar) {
  ep.cash = p.initial_capital;
  ep.units = 0.0f;
  ep.entry = 0.0f;
  ep.v0 = p.initial_capital;
  ep.spread = ldg1(m.spread + bar);
  ep.last = ldg1(m.ohlc + bar * 4 + 3);
  ep.reserve = p.reserve_pct;
  ep.costs = 0.0f;
  ep.profit_level = 0.0f;
  ep.stop_level = 0.0f;
  ep.bar = bar;
  ep.start_bar = bar;
  ep.step = 0;
  ep.expiry = -1;
  ep.div_head = 0;
  ep.div_count = 0;
  ep.hist0 = 0;
  ep.hist1 = 0;
  ep.hist2 = 0;
  for (int k = 0; k < p.diversity_window; k++) window[k] = 0;
}

// state.ts drawStartBar: split.start + word0 % count, word0 of Philox(EpisodeStart, e, restarts, 0).
COLLECT_DEVICE int draw_start_bar(const EnvScalars& p, unsigned e, unsigned restarts) {
  const unsigned count = (unsigned)(p.split_end - p.split_start - p.episode_bars);
  const uint4 r = philox4x32_10(make_uint4(STREAM_EPISODE_START, e, restarts, 0u), p.key0, p.key1);
  return p.split_start + (int)(r.x % count);
}

// state.ts buildState: the 54-float state of the episode's current bar into s[0 .. 54).
// Its last three floats (value, position, spread) into s[0 .. 3).
COLLECT_DEVICE void state_portfolio(const Episode& ep, float* s) {
  const float value = portfolio_value(ep);
  const float vn = fsub(fdiv(value, ep.v0), 1.0f);
  s[0] = vn > 5.0f ? 5.0f : vn < -5.0f ? -5.0f : vn;
  s[1] = position_norm(ep.units, ep.last, value);
  s[2] = fdiv(ep.spread, 10.0f);
}
COLLECT_DEVICE void build_state(const Episode& ep, const Market& m, float* s) {
  const float* src = m.features + ep.bar * MARKET_FEATURES;
  for (int k = 0; k < MARKET_FEATURES; k++) s[k] = ldg1(src + k);
  state_portfolio(ep, s + MARKET_FEATURES);
}

// step.ts's total reward from the step's components (the same order of additions everywhere).
COLLECT_DEVICE float step_total(const StepOut& s) {
  return fadd(fadd(fadd(fadd(s.pnl, s.barrier), s.risk), s.diversity), s.curiosity);
}

// curiosity.ts curiosityBonus from the model's mse.
COLLECT_DEVICE float curiosity_bonus(const EnvScalars& p, float mse) {
  return fminf(fmul(p.curiosity_scale, mse), p.curiosity_max);
}

// step.ts envStep with action `a`: everything but the next state and the restart, which the caller
// does after writing the next state (restart_if_ended). `curiosity_on` false is the reference's
// null curiosity model (bonus 0); else `curiosity_mse` is the model's error for this step.
COLLECT_DEVICE void env_step(Episode& ep, const Market& m, const EnvScalars& p, int* window, int a,
                             float curiosity_mse, bool curiosity_on, StepOut& out) {
  const int t = ep.bar;
  const float value_before = portfolio_value(ep);
  const int cat = action_category(a);
  out.bar = t;
  out.action = a;
  out.category = cat;
  out.filled = 0;
  out.fill_price = 0.0f;
  out.traded = 0.0f;
  out.barrier_event = BARRIER_NONE;
  out.exit_price = 0.0f;
  out.costs = 0.0f;

  const bool opened = execute_order(ep, m, p, a, out);
  const int event = opened ? BARRIER_NONE : check_barrier(ep, m, p, out);

  const float close1 = ldg1(m.ohlc + (t + 1) * 4 + 3);
  ep.last = close1;
  ep.spread = ldg1(m.spread + t + 1);
  ep.bar = t + 1;
  const int step = ep.step + 1;
  ep.step = step;
  const float value = portfolio_value(ep);
  const float units = ep.units;

  push_category(ep, window, p.diversity_window, cat);
  const float diversity = diversity_reward(ep, m, p);

  const float pnl = fmul(p.pnl_scale, fdiv(fsub(value, value_before), value_before));
  const float scale =
      event == BARRIER_PROFIT ? p.barrier_scale : event == BARRIER_STOP ? -p.barrier_scale : 0.0f;
  const float barrier = fmul(pnl, scale);
  const float excess = fsub(fabsf(position_norm(units, close1, value)), p.risk_threshold);
  const float risk = excess > 0.0f ? -fmul(p.risk_scale, excess) : 0.0f;
  const float bonus = curiosity_on ? curiosity_bonus(p, curiosity_mse) : 0.0f;

  const bool ended = event != BARRIER_NONE && p.barrier_terminates != 0;
  const bool collapsed = value <= fmul(p.collapse_fraction, ep.v0);
  const int done = ended || collapsed ? 1 : 0;

  out.units = units;
  out.cash = ep.cash;
  out.value = value;
  out.pnl = pnl;
  out.barrier = barrier;
  out.risk = risk;
  out.diversity = diversity;
  out.curiosity = bonus;
  out.total = step_total(out);
  out.done = done;
  out.truncated = done == 0 && step >= p.episode_bars ? 1 : 0;
}

// state.ts restartEpisode, when the step ended the episode (done or truncated).
COLLECT_DEVICE void restart_if_ended(Episode& ep, const Market& m, const EnvScalars& p, int* window, unsigned e,
                                     const StepOut& out) {
  if (!(out.done || out.truncated)) return;
  ep.restarts += 1;
  start_episode(ep, m, p, window, draw_start_bar(p, e, (unsigned)ep.restarts));
}
