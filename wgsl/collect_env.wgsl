// The simulator step of one episode (SPEC 3-6), a line-by-line port of src/env/ (step.ts,
// portfolio.ts, barrier.ts, trade.ts, diversity.ts, state.ts) for the collection kernels.
// A snippet, not a kernel: collect_dqn.wgsl and collect_ppo.wgsl pull it in with
// `//!include collect_env.wgsl`. It uses the bindings and uniforms of src/kernels/collect_layout.ts
// (features, ohlc, spread, entropy, env_f, env_i, div_window; u.<simulator block>) and the
// layout constants generated from src/env/state.ts (ENV_F, ENVF_*, ENV_I, ENVI_*).
//
// One invocation owns one episode: its state lives in a private `Episode` for the whole launch
// and goes back to env_f / env_i at its end (the diversity window stays in div_window).
//
// Numerics: f32 with the operations and comparisons of the reference in the same order, so the
// step agrees with the TS reference bit for bit except where the compiler fuses a multiply into
// the following add (WGSL allows it) or a division is off by its allowed 2.5 ulp; decisions
// compare products, never quotients, so they only differ at exact ties. No transcendental
// function: the diversity entropy comes from the host-built table `entropy`.
//!include philox.wgsl

const EVENT_NONE = 0;
const EVENT_PROFIT = 1;
const EVENT_STOP = 2;
const EVENT_TIME = 3;
const HALF_BP: f32 = 0.5e-4;

struct Episode {
  cash: f32,
  units: f32,
  entry: f32,
  v0: f32,
  spread: f32,
  last: f32,
  reserve: f32,
  costs: f32,
  profit_level: f32,
  stop_level: f32,
  bar: i32,
  start_bar: i32,
  step: i32,
  expiry: i32,
  restarts: i32,
  div_head: i32,
  div_count: i32,
  hist0: i32,
  hist1: i32,
  hist2: i32,
}

// What one step reports besides the episode's new state (src/env/output.ts StepOut, the fields
// the collectors keep).
struct StepOut {
  pnl: f32,
  barrier: f32,
  risk: f32,
  diversity: f32,
  total: f32,
  done: i32,
  truncated: i32,
}

fn load_episode(e: u32) -> Episode {
  let fb = e * ENV_F;
  let ib = e * ENV_I;
  var ep: Episode;
  ep.cash = env_f[fb + ENVF_CASH];
  ep.units = env_f[fb + ENVF_UNITS];
  ep.entry = env_f[fb + ENVF_ENTRY_PRICE];
  ep.v0 = env_f[fb + ENVF_INITIAL_CAPITAL];
  ep.spread = env_f[fb + ENVF_SPREAD];
  ep.last = env_f[fb + ENVF_LAST_PRICE];
  ep.reserve = env_f[fb + ENVF_RESERVE_PCT];
  ep.costs = env_f[fb + ENVF_CUM_COSTS];
  ep.profit_level = env_f[fb + ENVF_PROFIT_LEVEL];
  ep.stop_level = env_f[fb + ENVF_STOP_LEVEL];
  ep.bar = env_i[ib + ENVI_BAR];
  ep.start_bar = env_i[ib + ENVI_START_BAR];
  ep.step = env_i[ib + ENVI_STEP];
  ep.expiry = env_i[ib + ENVI_EXPIRY];
  ep.restarts = env_i[ib + ENVI_RESTARTS];
  ep.div_head = env_i[ib + ENVI_DIV_HEAD];
  ep.div_count = env_i[ib + ENVI_DIV_COUNT];
  ep.hist0 = env_i[ib + ENVI_HIST];
  ep.hist1 = env_i[ib + ENVI_HIST + 1];
  ep.hist2 = env_i[ib + ENVI_HIST + 2];
  return ep;
}

fn store_episode(e: u32, ep: Episode) {
  let fb = e * ENV_F;
  let ib = e * ENV_I;
  env_f[fb + ENVF_CASH] = ep.cash;
  env_f[fb + ENVF_UNITS] = ep.units;
  env_f[fb + ENVF_ENTRY_PRICE] = ep.entry;
  env_f[fb + ENVF_INITIAL_CAPITAL] = ep.v0;
  env_f[fb + ENVF_SPREAD] = ep.spread;
  env_f[fb + ENVF_LAST_PRICE] = ep.last;
  env_f[fb + ENVF_RESERVE_PCT] = ep.reserve;
  env_f[fb + ENVF_CUM_COSTS] = ep.costs;
  env_f[fb + ENVF_PROFIT_LEVEL] = ep.profit_level;
  env_f[fb + ENVF_STOP_LEVEL] = ep.stop_level;
  env_i[ib + ENVI_BAR] = ep.bar;
  env_i[ib + ENVI_START_BAR] = ep.start_bar;
  env_i[ib + ENVI_STEP] = ep.step;
  env_i[ib + ENVI_EXPIRY] = ep.expiry;
  env_i[ib + ENVI_RESTARTS] = ep.restarts;
  env_i[ib + ENVI_DIV_HEAD] = ep.div_head;
  env_i[ib + ENVI_DIV_COUNT] = ep.div_count;
  env_i[ib + ENVI_HIST] = ep.hist0;
  env_i[ib + ENVI_HIST + 1] = ep.hist1;
  env_i[ib + ENVI_HIST + 2] = ep.hist2;
}

// actions.ts category: Short 0 (exposure index 0-1), Flat 1 (2), Long 2 (3-4).
fn action_category(a: i32) -> i32 {
  let x = a / 9;
  if (x <= 1) {
    return 0;
  }
  return select(2, 1, x == 2);
}

fn exposure_of(a: i32) -> f32 {
  let x = a / 9;
  return f32(x - 2) * 0.5;
}

fn fraction_of(a: i32) -> f32 {
  let i = a % 3;
  if (i == 0) {
    return f32(1.0 / 3.0);
  }
  return select(1.0, f32(2.0 / 3.0), i == 1);
}

fn portfolio_value(ep: Episode) -> f32 {
  return ep.cash + ep.units * ep.last;
}

// state.ts positionNorm.
fn position_norm(units: f32, price: f32, value: f32) -> f32 {
  if (!(value > 0.0)) {
    return select(select(0.0, -1.0, units < 0.0), 1.0, units > 0.0);
  }
  let x = (units * price) / value;
  return select(select(x, -1.0, x < -1.0), 1.0, x > 1.0);
}

// state.ts buildState's three portfolio features: value_norm, position_norm, spread_norm.
fn portfolio_features(ep: Episode) -> vec3<f32> {
  let value = portfolio_value(ep);
  let vn = value / ep.v0 - 1.0;
  let vc = select(select(vn, -5.0, vn < -5.0), 5.0, vn > 5.0);
  return vec3<f32>(vc, position_norm(ep.units, ep.last, value), ep.spread / 10.0);
}

// trade.ts applyTrade: cash -= u * price, then the fee is paid; returns the fee.
fn apply_trade(ep: ptr<function, Episode>, units: f32, price: f32, rate: f32) -> f32 {
  let notional = units * price;
  let fee = abs(notional) * rate;
  (*ep).cash = ((*ep).cash - notional) - fee;
  (*ep).costs = (*ep).costs + fee;
  return fee;
}

// trade.ts withHalfSpread: side +1 buys higher, -1 sells lower.
fn with_half_spread(price: f32, side: i32, spread_bps: f32) -> f32 {
  let hs = spread_bps * HALF_BP;
  return price * select(1.0 - hs, 1.0 + hs, side > 0);
}

fn arm_barrier(ep: ptr<function, Episode>, entry: f32, long_pos: bool, open_bar: i32) {
  (*ep).entry = entry;
  (*ep).profit_level = entry * select(u.profitDown, u.profitUp, long_pos);
  (*ep).stop_level = entry * select(u.stopUp, u.stopDown, long_pos);
  (*ep).expiry = open_bar + u.maxHoldingBars;
}

fn disarm_barrier(ep: ptr<function, Episode>) {
  (*ep).entry = 0.0;
  (*ep).profit_level = 0.0;
  (*ep).stop_level = 0.0;
  (*ep).expiry = -1;
}

// portfolio.ts executeOrder: returns true when a position was opened in this bar.
fn execute_order(ep: ptr<function, Episode>, a: i32) -> bool {
  let t = (*ep).bar;
  let o1 = u32(t + 1) * 4u;
  let close = (*ep).last;
  let units = (*ep).units;
  let value = portfolio_value(*ep);

  let exposure = exposure_of(a);
  let target_exposure = exposure * (1.0 - (*ep).reserve);
  let target_notional = target_exposure * value;
  let notional = units * close;
  var side = 0;
  if (target_notional > notional) {
    side = 1;
  } else if (target_notional < notional) {
    side = -1;
  }
  if (side == 0) {
    return false;
  }

  let order_type = (a % 9) / 3;
  var price: f32;
  var rate: f32;
  var fills: bool;
  if (order_type == 0) {
    price = with_half_spread(ohlc[o1], side, (*ep).spread);
    rate = u.marketRate;
    fills = true;
  } else if (order_type == 1) {
    price = close;
    rate = u.marketRate;
    fills = ohlc[o1 + 2u] <= price && price <= ohlc[o1 + 1u];
  } else {
    price = close * select(u.passiveUp, u.passiveDown, side > 0);
    rate = u.passiveRate;
    fills = select(ohlc[o1 + 1u] > price, ohlc[o1 + 2u] < price, side > 0);
  }
  if (!fills) {
    return false;
  }

  let target_units = target_notional / price;
  let fraction = fraction_of(a);
  let reversal = (units > 0.0 && exposure < 0.0) || (units < 0.0 && exposure > 0.0);
  if (reversal) {
    let opened = fraction * target_units;
    apply_trade(ep, -units, price, rate);
    apply_trade(ep, opened, price, rate);
    (*ep).units = opened;
    arm_barrier(ep, price, opened > 0.0, t + 1);
    return true;
  }

  let gap_notional = target_notional - units * price;
  if (f32(side) * gap_notional <= 0.0) {
    return false;
  }
  let traded = fraction * (target_units - units);
  apply_trade(ep, traded, price, rate);
  let next = units + traded;
  (*ep).units = next;
  if (units == 0.0) {
    arm_barrier(ep, price, next > 0.0, t + 1);
    return true;
  }
  if (next == 0.0) {
    disarm_barrier(ep);
  }
  return false;
}

// barrier.ts checkBarrier: a gap past a barrier fills at the open (stop first), then a touched
// barrier at its level (the adverse one wins), then the time barrier at the close.
fn check_barrier(ep: ptr<function, Episode>) -> i32 {
  let units = (*ep).units;
  if (units == 0.0) {
    return EVENT_NONE;
  }
  let bar1 = (*ep).bar + 1;
  let o1 = u32(bar1) * 4u;
  let open = ohlc[o1];
  let high = ohlc[o1 + 1u];
  let low = ohlc[o1 + 2u];
  let profit = (*ep).profit_level;
  let stop = (*ep).stop_level;
  let long_pos = units > 0.0;
  var event = EVENT_NONE;
  var level = 0.0;
  if (select(open >= stop, open <= stop, long_pos)) {
    event = EVENT_STOP;
    level = open;
  } else if (select(open <= profit, open >= profit, long_pos)) {
    event = EVENT_PROFIT;
    level = open;
  } else if (select(high >= stop, low <= stop, long_pos)) {
    event = EVENT_STOP;
    level = stop;
  } else if (select(low <= profit, high >= profit, long_pos)) {
    event = EVENT_PROFIT;
    level = profit;
  } else if (bar1 >= (*ep).expiry) {
    event = EVENT_TIME;
    level = ohlc[o1 + 3u];
  }
  if (event == EVENT_NONE) {
    return event;
  }
  let exit_price = with_half_spread(level, select(1, -1, long_pos), (*ep).spread);
  apply_trade(ep, -units, exit_price, u.marketRate);
  (*ep).units = 0.0;
  disarm_barrier(ep);
  return event;
}

// diversity.ts pushCategory: the window lives in div_window, the histogram in the episode.
fn push_category(e: u32, ep: ptr<function, Episode>, cat: i32) {
  let w = u.diversityWindow;
  let slot = e * u32(w) + u32((*ep).div_head);
  if ((*ep).div_count == w) {
    let old = div_window[slot];
    if (old == 0) {
      (*ep).hist0 -= 1;
    } else if (old == 1) {
      (*ep).hist1 -= 1;
    } else {
      (*ep).hist2 -= 1;
    }
  } else {
    (*ep).div_count += 1;
  }
  div_window[slot] = cat;
  if (cat == 0) {
    (*ep).hist0 += 1;
  } else if (cat == 1) {
    (*ep).hist1 += 1;
  } else {
    (*ep).hist2 += 1;
  }
  (*ep).div_head = select((*ep).div_head + 1, 0, (*ep).div_head + 1 == w);
}

// diversity.ts diversityReward: n * H from the entropy table, f32 adds only.
fn diversity_reward(ep: Episode) -> f32 {
  let n = ep.div_count;
  if (n < u.diversityMinActions) {
    return 0.0;
  }
  let nh = ((entropy[n] - entropy[ep.hist0]) - entropy[ep.hist1]) - entropy[ep.hist2];
  return select(0.0, u.diversityPenalty, nh < f32(n) * u.diversityCutoff);
}

// state.ts startEpisode: flat, cash V_0, empty window, at `bar`.
fn start_episode(e: u32, ep: ptr<function, Episode>, bar: i32) {
  (*ep).cash = u.initialCapital;
  (*ep).units = 0.0;
  (*ep).entry = 0.0;
  (*ep).v0 = u.initialCapital;
  (*ep).spread = spread[bar];
  (*ep).last = ohlc[u32(bar) * 4u + 3u];
  (*ep).reserve = u.reservePct;
  (*ep).costs = 0.0;
  (*ep).profit_level = 0.0;
  (*ep).stop_level = 0.0;
  (*ep).bar = bar;
  (*ep).start_bar = bar;
  (*ep).step = 0;
  (*ep).expiry = -1;
  (*ep).div_head = 0;
  (*ep).div_count = 0;
  (*ep).hist0 = 0;
  (*ep).hist1 = 0;
  (*ep).hist2 = 0;
  let w = u32(u.diversityWindow);
  for (var k = 0u; k < w; k++) {
    div_window[e * w + k] = 0;
  }
}

// state.ts restartEpisode + drawStartBar: split.start + word0 % count of
// Philox(EpisodeStart, e, restarts, 0).
fn restart_episode(e: u32, ep: ptr<function, Episode>) {
  let restarts = (*ep).restarts + 1;
  (*ep).restarts = restarts;
  let count = u32(u.splitEnd - u.splitStart - u.episodeBars);
  let r = philox4x32(vec4<u32>(STREAM_EPISODE_START, e, u32(restarts), 0u), vec2<u32>(u.key0, u.key1));
  start_episode(e, ep, u.splitStart + i32(r.x % count));
}

// step.ts envStep up to the reward, for slot e with action a and curiosity bonus `bonus`
// (computed by the caller from the bar and category: it needs no simulator state). Leaves the
// episode at bar t + 1; the caller builds the next state and then calls `finish_step`.
fn env_step(e: u32, ep: ptr<function, Episode>, a: i32, bonus: f32) -> StepOut {
  let t = (*ep).bar;
  let value_before = portfolio_value(*ep);
  let cat = action_category(a);

  let opened = execute_order(ep, a);
  var event = EVENT_NONE;
  if (!opened) {
    event = check_barrier(ep);
  }

  let close1 = ohlc[u32(t + 1) * 4u + 3u];
  (*ep).last = close1;
  (*ep).spread = spread[t + 1];
  (*ep).bar = t + 1;
  let step = (*ep).step + 1;
  (*ep).step = step;
  let value = portfolio_value(*ep);
  let units = (*ep).units;

  push_category(e, ep, cat);
  var out: StepOut;
  out.diversity = diversity_reward(*ep);

  out.pnl = u.pnlScale * ((value - value_before) / value_before);
  var scale = 0.0;
  if (event == EVENT_PROFIT) {
    scale = u.barrierScale;
  } else if (event == EVENT_STOP) {
    scale = -u.barrierScale;
  }
  out.barrier = out.pnl * scale;
  let excess = abs(position_norm(units, close1, value)) - u.riskThreshold;
  out.risk = select(0.0, -(u.riskScale * excess), excess > 0.0);

  let ended = event != EVENT_NONE && u.barrierTerminates != 0;
  let collapsed = value <= u.collapseFraction * (*ep).v0;
  out.done = select(0, 1, ended || collapsed);
  out.total = (((out.pnl + out.barrier) + out.risk) + out.diversity) + bonus;
  out.truncated = select(0, 1, out.done == 0 && step >= u.episodeBars);
  return out;
}

// The rest of envStep after the next state was read: restart an episode that ended.
fn finish_step(e: u32, ep: ptr<function, Episode>, out: StepOut) {
  if (out.done != 0 || out.truncated != 0) {
    restart_episode(e, ep);
  }
}
