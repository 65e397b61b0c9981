/**
 * One simulator step of one episode (SPEC 3-6): the single function the CLI trace and both
 * reference collectors call, and the one the collection kernels mirror section by section.
 *
 * At bar t with action a: (1) the agent's order executes in bar t + 1; (2) a position that was
 * open before the bar and survived (1) is checked against its barriers; (3) a fired barrier
 * closes it; (4) mark-to-market at close_{t+1}; (5) diversity window and penalty; (6) reward;
 * (7) done / truncated; (8) next state, then an immediate restart if the episode ended.
 */
import type { Market } from '../data/types.js';
import { category } from './actions.js';
import { checkBarrier } from './barrier.js';
import { type CuriosityModel, curiosityBonus } from './curiosity.js';
import { diversityReward, pushCategory } from './diversity.js';
import { BarrierEvent, type StepOut } from './output.js';
import type { EnvParams } from './params.js';
import { executeOrder } from './portfolio.js';
import {
  buildState,
  ENV_F,
  ENV_I,
  EnvF,
  EnvI,
  type EnvState,
  portfolioValue,
  positionNorm,
  restartEpisode,
} from './state.js';

const f = Math.fround;

/**
 * Steps slot `e` with action `a` and writes everything into `out`. `curiosity` null gives a
 * zero curiosity bonus. The episode restarts inside this call when it ends, after `out` (and
 * out.nextState) describe the step that ended it.
 */
export function envStep(
  env: EnvState,
  market: Market,
  params: EnvParams,
  e: number,
  a: number,
  out: StepOut,
  curiosity: CuriosityModel | null,
): void {
  const fb = e * ENV_F;
  const ib = e * ENV_I;
  const t = env.i[ib + EnvI.Bar];
  const valueBefore = portfolioValue(env, e);
  const cat = category(a);
  out.bar = t;
  out.action = a;
  out.category = cat;
  out.filled = 0;
  out.fillPrice = 0;
  out.traded = 0;
  out.barrierEvent = BarrierEvent.None;
  out.exitPrice = 0;
  out.costs = 0;

  const opened = executeOrder(env, market, params, e, a, out);
  const event = opened ? BarrierEvent.None : checkBarrier(env, market, params, e, out);

  const close1 = market.ohlc[(t + 1) * 4 + 3];
  env.f[fb + EnvF.LastPrice] = close1;
  env.f[fb + EnvF.Spread] = market.spreadBps[t + 1];
  env.i[ib + EnvI.Bar] = t + 1;
  const step = env.i[ib + EnvI.Step] + 1;
  env.i[ib + EnvI.Step] = step;
  const value = portfolioValue(env, e);
  const units = env.f[fb + EnvF.Units];

  pushCategory(env, e, cat);
  const diversity = diversityReward(env, params, e);

  const pnl = f(params.pnlScale * f(f(value - valueBefore) / valueBefore));
  const scale =
    event === BarrierEvent.Profit
      ? params.barrierScale
      : event === BarrierEvent.Stop
        ? -params.barrierScale
        : 0;
  const barrier = f(pnl * scale);
  const excess = f(Math.abs(positionNorm(units, close1, value)) - params.riskThreshold);
  const risk = excess > 0 ? -f(params.riskScale * excess) : 0;
  const bonus = curiosity ? curiosityBonus(curiosity, params, market, t, cat) : 0;

  const ended = event !== BarrierEvent.None && params.barrierTerminates;
  const collapsed = value <= f(params.collapseFraction * env.f[fb + EnvF.InitialCapital]);
  const done = ended || collapsed ? 1 : 0;

  out.units = units;
  out.cash = env.f[fb + EnvF.Cash];
  out.value = value;
  out.pnl = pnl;
  out.barrier = barrier;
  out.risk = risk;
  out.diversity = diversity;
  out.curiosity = bonus;
  out.total = f(f(f(f(pnl + barrier) + risk) + diversity) + bonus);
  out.done = done;
  out.truncated = done === 0 && step >= params.episodeBars ? 1 : 0;
  buildState(env, market, e, out.nextState, 0);
  if (out.done || out.truncated) restartEpisode(env, market, params, e);
}
