/**
 * The two primitives every fill uses: the half-spread price adjustment and the cash/fee
 * bookkeeping of one trade. f32 at every step, in the order written.
 */
import { HALF_BP } from './params.js';
import { ENV_F, EnvF, type EnvState } from './state.js';

const f = Math.fround;

/**
 * Trades `u` units at `price` in slot e: cash -= u * price, then the fee |u * price| * rate is
 * paid from cash and added to cum_costs. Returns the fee.
 */
export function applyTrade(env: EnvState, e: number, u: number, price: number, rate: number): number {
  const fb = e * ENV_F;
  const notional = f(u * price);
  const fee = f(Math.abs(notional) * rate);
  env.f[fb + EnvF.Cash] = f(f(env.f[fb + EnvF.Cash] - notional) - fee);
  env.f[fb + EnvF.CumCosts] = f(env.f[fb + EnvF.CumCosts] + fee);
  return fee;
}

/** Price with half the bar's spread against the trader: side +1 buys higher, -1 sells lower. */
export function withHalfSpread(price: number, side: number, spreadBps: number): number {
  const hs = f(spreadBps * HALF_BP);
  return f(price * (side > 0 ? f(1 + hs) : f(1 - hs)));
}
