/**
 * Execution of the agent's order in bar t + 1 (SPEC 3). Every quantity is f32, rounded after
 * each multiply, add and divide in the order written here. The decisions (side, fill,
 * "nothing trades") compare products only, never quotients, so they are bit-exact on a backend
 * whose division is not correctly rounded (WGSL allows 2.5 ulp).
 */
import type { Market } from '../data/types.js';
import { EXPOSURES, exposureIndex, FRACTIONS, fractionIndex, OrderType, orderType } from './actions.js';
import { armBarrier, disarmBarrier } from './barrier.js';
import type { StepOut } from './output.js';
import type { EnvParams } from './params.js';
import { ENV_F, ENV_I, EnvF, EnvI, type EnvState, portfolioValue } from './state.js';
import { applyTrade, withHalfSpread } from './trade.js';

const f = Math.fround;

/**
 * Executes action `a`, decided at bar t, against bar t + 1 for slot e. Writes filled,
 * fillPrice, traded and adds the fees to out.costs. Returns true when a position was opened
 * in this bar (from flat or by a reversal): such a position is not barrier-checked until the
 * next bar.
 */
export function executeOrder(
  env: EnvState,
  market: Market,
  params: EnvParams,
  e: number,
  a: number,
  out: StepOut,
): boolean {
  const fb = e * ENV_F;
  const t = env.i[e * ENV_I + EnvI.Bar];
  const o1 = (t + 1) * 4;
  const close = env.f[fb + EnvF.LastPrice];
  const units = env.f[fb + EnvF.Units];
  const value = portfolioValue(env, e);

  const exposure = EXPOSURES[exposureIndex(a)];
  const target = f(exposure * f(1 - env.f[fb + EnvF.ReservePct]));
  const targetNotional = f(target * value);
  const notional = f(units * close);
  // Buy iff target exposure > units * close / V, i.e. (V > 0) target * V > units * close.
  const side = targetNotional > notional ? 1 : targetNotional < notional ? -1 : 0;
  if (side === 0) return false;

  const type = orderType(a);
  let price: number;
  let rate: number;
  let fills: boolean;
  if (type === OrderType.Market) {
    price = withHalfSpread(market.ohlc[o1], side, env.f[fb + EnvF.Spread]);
    rate = params.marketRate;
    fills = true;
  } else if (type === OrderType.Limit) {
    price = close;
    rate = params.marketRate;
    fills = market.ohlc[o1 + 2] <= price && price <= market.ohlc[o1 + 1];
  } else {
    price = f(close * (side > 0 ? params.passiveDown : params.passiveUp));
    rate = params.passiveRate;
    fills = side > 0 ? market.ohlc[o1 + 2] < price : market.ohlc[o1 + 1] > price;
  }
  if (!fills) return false;

  const targetUnits = f(targetNotional / price);
  const fraction = FRACTIONS[fractionIndex(a)];
  const reversal = (units > 0 && exposure < 0) || (units < 0 && exposure > 0);
  if (reversal) {
    // Phase 1 closes the whole position, phase 2 opens `fraction` of the target from flat;
    // both at the same price, both pay the order's cost.
    const opened = f(fraction * targetUnits);
    out.costs = f(out.costs + applyTrade(env, e, -units, price, rate));
    out.costs = f(out.costs + applyTrade(env, e, opened, price, rate));
    env.f[fb + EnvF.Units] = opened;
    armBarrier(env, params, e, price, opened > 0, t + 1);
    out.filled = 1;
    out.fillPrice = price;
    out.traded = f(opened - units);
    return true;
  }

  // sign(target_units - units) == sign(target * V - units * price) since price > 0.
  const gapNotional = f(targetNotional - f(units * price));
  if (side * gapNotional <= 0) return false;
  const u = f(fraction * f(targetUnits - units));
  out.costs = f(out.costs + applyTrade(env, e, u, price, rate));
  const next = f(units + u);
  env.f[fb + EnvF.Units] = next;
  out.filled = 1;
  out.fillPrice = price;
  out.traded = u;
  if (units === 0) {
    armBarrier(env, params, e, price, next > 0, t + 1);
    return true;
  }
  if (next === 0) disarmBarrier(env, e);
  return false;
}
