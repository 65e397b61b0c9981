/**
 * Triple barrier of the open position (SPEC 4). Levels are f32 products of the entry price and
 * the host-rounded factors of EnvParams; expiry is the integer bar open_bar + maxHoldingBars.
 * Event order inside bar t + 1 (the caller keeps it): the agent's order, then this check for a
 * position that was open before the bar and survived the order, then the exit, then the mark.
 */
import type { Market } from '../data/types.js';
import { BarrierEvent, type StepOut } from './output.js';
import type { EnvParams } from './params.js';
import { ENV_F, ENV_I, EnvF, EnvI, type EnvState } from './state.js';
import { applyTrade, withHalfSpread } from './trade.js';

const f = Math.fround;

/** Records a position opened at `entry` in bar `openBar` and sets its barriers. */
export function armBarrier(
  env: EnvState,
  params: EnvParams,
  e: number,
  entry: number,
  long: boolean,
  openBar: number,
): void {
  const fb = e * ENV_F;
  env.f[fb + EnvF.EntryPrice] = entry;
  env.f[fb + EnvF.ProfitLevel] = f(entry * (long ? params.profitUp : params.profitDown));
  env.f[fb + EnvF.StopLevel] = f(entry * (long ? params.stopDown : params.stopUp));
  env.i[e * ENV_I + EnvI.Expiry] = openBar + params.maxHoldingBars;
}

/** Forgets the position's entry and barriers (the position is closed). */
export function disarmBarrier(env: EnvState, e: number): void {
  const fb = e * ENV_F;
  env.f[fb + EnvF.EntryPrice] = 0;
  env.f[fb + EnvF.ProfitLevel] = 0;
  env.f[fb + EnvF.StopLevel] = 0;
  env.i[e * ENV_I + EnvI.Expiry] = -1;
}

/**
 * Checks slot e's open position against bar t + 1 and, when a barrier fires, closes it with half
 * the spread of bar t against the trader and the market fee. A bar that opens past a barrier
 * (a gap) fills that barrier at the open, the first price there was; otherwise a touched
 * barrier fills at its level, and the time barrier at close_{t+1}. Order: a gap past the stop,
 * a gap past the profit level, a touched stop, a touched profit level, the time barrier. Writes
 * barrierEvent, exitPrice and adds the fee to out.costs. Returns the event.
 */
export function checkBarrier(
  env: EnvState,
  market: Market,
  params: EnvParams,
  e: number,
  out: StepOut,
): number {
  const fb = e * ENV_F;
  const units = env.f[fb + EnvF.Units];
  if (units === 0) return BarrierEvent.None;
  const bar1 = env.i[e * ENV_I + EnvI.Bar] + 1;
  const o1 = bar1 * 4;
  const open = market.ohlc[o1];
  const high = market.ohlc[o1 + 1];
  const low = market.ohlc[o1 + 2];
  const profit = env.f[fb + EnvF.ProfitLevel];
  const stop = env.f[fb + EnvF.StopLevel];
  const long = units > 0;
  let event: number = BarrierEvent.None;
  let level = 0;
  if (long ? open <= stop : open >= stop) {
    event = BarrierEvent.Stop;
    level = open;
  } else if (long ? open >= profit : open <= profit) {
    event = BarrierEvent.Profit;
    level = open;
  } else if (long ? low <= stop : high >= stop) {
    event = BarrierEvent.Stop;
    level = stop;
  } else if (long ? high >= profit : low <= profit) {
    event = BarrierEvent.Profit;
    level = profit;
  } else if (bar1 >= env.i[e * ENV_I + EnvI.Expiry]) {
    event = BarrierEvent.Time;
    level = market.ohlc[o1 + 3];
  }
  if (event === BarrierEvent.None) return event;
  const exit = withHalfSpread(level, long ? -1 : 1, env.f[fb + EnvF.Spread]);
  out.costs = f(out.costs + applyTrade(env, e, -units, exit, params.marketRate));
  env.f[fb + EnvF.Units] = 0;
  disarmBarrier(env, e);
  out.barrierEvent = event;
  out.exitPrice = exit;
  return event;
}
