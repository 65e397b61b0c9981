/**
 * Validation backtest (SPEC 10): one policy run as one continuous episode over a split, through
 * the reference simulator's single-step API (src/env/step.ts), with the configured costs.
 *
 * Choices (docs/TRAINING.md): the episode starts flat with V_0 at the split's first bar and takes
 * a decision at every bar t = start .. end - 2 (bar t + 1 executes it), so `end - start - 1` steps.
 * Barriers still close positions (profit, stop, time), but they do not end the backtest: the
 * policy simply decides again at the next bar. No truncation applies. If the account collapses
 * (V <= 1% of V_0, the simulator's `done`) the backtest stops trading and the rest of the curve
 * stays flat at the last value. The curiosity bonus is off; rewards play no part in the metrics.
 * Buy-and-hold (`buyAndHold`) is no policy: one market buy at the first bar, then held.
 */
import type { EnvConfig } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { encodeAction, OrderType } from '../env/actions.js';
import { createStepOut } from '../env/output.js';
import { type EnvParams, envParams } from '../env/params.js';
import { executeOrder } from '../env/portfolio.js';
import { buildState, createEnv, EnvF, portfolioValue, positionNorm } from '../env/state.js';
import { envStep } from '../env/step.js';
import { STATE_DIM } from '../nets/layout.js';
import { finish, finishTicked, type StepProgress } from '../ticker.js';
import type { ValidationReport } from './metrics.js';
import { computeMetrics, type EquityTrace, type Metrics } from './metrics.js';
import { type Policy, randomPolicy } from './policies.js';

export interface BacktestResult {
  metrics: Metrics;
  trace: EquityTrace;
  /** The action taken at each step. */
  actions: Int32Array;
}

/** Runs `policy` over `split` and returns its metrics and per-step trace. */
export function backtest(
  market: Market,
  split: SplitRange,
  envCfg: EnvConfig,
  policy: Policy,
  barsPerYear: number,
): BacktestResult {
  const { trace, actions } = policyRollout(market, split, envParams(envCfg), policy);
  return { metrics: computeMetrics(trace, barsPerYear), trace, actions };
}

/**
 * backtest handing the event loop a turn every TICK_MS and reporting the bars done to `onStep`
 * (the CPU's validation of a long split: ~12 us a bar for PPO's actor, 100-250 us for C51's net).
 */
export async function backtestAsync(
  market: Market,
  split: SplitRange,
  envCfg: EnvConfig,
  policy: Policy,
  barsPerYear: number,
  onStep?: StepProgress,
): Promise<BacktestResult> {
  const { trace, actions } = await finishTicked(
    policyRolloutSteps(market, split, envParams(envCfg), policy),
    split.end - split.start - 1,
    onStep,
  );
  return { metrics: computeMetrics(trace, barsPerYear), trace, actions };
}

/** The simulator parameters of a backtest over `steps` steps: no truncation, barriers do not end it. */
export function backtestParams(params: EnvParams, steps: number): EnvParams {
  return { ...params, barrierTerminates: false, episodeBars: steps };
}

/**
 * The backtest's episode without the metrics: the trace and actions of `policy` over `split` with
 * the simulator parameters `base` (src/kernels/validate_policy.ts runs the same as one launch).
 */
export function policyRollout(
  market: Market,
  split: SplitRange,
  base: EnvParams,
  policy: Policy,
): { trace: EquityTrace; actions: Int32Array } {
  return finish(policyRolloutSteps(market, split, base, policy));
}

/** Bars between policyRolloutSteps' yields. */
const ROLLOUT_YIELD_BARS = 256;

/** policyRollout that yields the steps done every ROLLOUT_YIELD_BARS bars. */
export function* policyRolloutSteps(
  market: Market,
  split: SplitRange,
  base: EnvParams,
  policy: Policy,
): Generator<number, { trace: EquityTrace; actions: Int32Array }> {
  const steps = split.end - split.start - 1;
  if (steps < 1) {
    throw new Error(`backtest: split [${split.start}, ${split.end}) has no step (it needs at least 2 bars)`);
  }
  // One episode slot whose only start bar is split.start, long enough never to truncate, and
  // whose barriers close positions without ending it.
  const params = backtestParams(base, steps);
  const env = createEnv(market, split, params, 1, 0);
  const out = createStepOut();
  const state = new Float32Array(STATE_DIM);
  const equity = new Float64Array(steps + 1);
  const exposure = new Float64Array(steps);
  const traded = new Float64Array(steps);
  const actions = new Int32Array(steps);
  equity[0] = params.initialCapital;
  let k = 0;
  for (; k < steps; k++) {
    const t = split.start + k;
    buildState(env, market, 0, state, 0);
    const a = policy(state, t);
    if (!(Number.isInteger(a) && a >= 0 && a < 45)) {
      throw new Error(`backtest: the policy returned action ${a} at bar ${t}; actions are integers 0..44`);
    }
    const unitsBefore = env.f[EnvF.Units];
    envStep(env, market, params, 0, a, out, null);
    actions[k] = a;
    equity[k + 1] = out.value;
    exposure[k] = positionNorm(out.units, market.ohlc[(t + 1) * 4 + 3], out.value);
    const afterOrder = out.filled ? unitsBefore + out.traded : unitsBefore;
    traded[k] =
      Math.abs(out.traded) * out.fillPrice + (out.exitPrice > 0 ? Math.abs(afterOrder) * out.exitPrice : 0);
    if (out.done) {
      k++;
      break;
    }
    if ((k + 1) % ROLLOUT_YIELD_BARS === 0) yield k + 1;
  }
  // After a collapse the simulator restarted the slot: the backtest's account stays where it ended.
  for (let j = k; j < steps; j++) equity[j + 1] = equity[k];
  return { trace: { equity, exposure, traded }, actions };
}

/** Exposure index 4 (+1.0), market order, the full gap: buy-and-hold's one order. */
export const BUY_AND_HOLD_ACTION = encodeAction(4, OrderType.Market, 2);

/**
 * Buy-and-hold over `split`: a passive benchmark, not a policy. At the split's first decision it
 * places the simulator's market order of BUY_AND_HOLD_ACTION (executeOrder: fill at the next open
 * plus half the spread of the decision bar, units = (1 - reservePct) * V_0 / fill, fee
 * env.feeBps), then holds those units unchanged to the end of the split: no barrier, no
 * rebalancing, no exit order. The equity is marked at every close (not liquidated at the end, as
 * a policy's is not). The backtest's collapse rule applies: at V <= 1% of V_0 it stops and the
 * rest of the curve stays at the last value. The trace has the backtest's shape; its actions are
 * BUY_AND_HOLD_ACTION at every step (the target it holds; only the first places an order).
 */
export function buyAndHold(
  market: Market,
  split: SplitRange,
  envCfg: EnvConfig,
  barsPerYear: number,
): BacktestResult {
  const { trace, actions } = buyAndHoldRollout(market, split, envParams(envCfg));
  return { metrics: computeMetrics(trace, barsPerYear), trace, actions };
}

/** buyAndHold's trace and actions with the simulator parameters `base`. */
export function buyAndHoldRollout(
  market: Market,
  split: SplitRange,
  base: EnvParams,
): { trace: EquityTrace; actions: Int32Array } {
  const steps = split.end - split.start - 1;
  if (steps < 1) {
    throw new Error(
      `buy-and-hold: split [${split.start}, ${split.end}) has no step (it needs at least 2 bars)`,
    );
  }
  // The backtest's slot: flat with V_0 at split.start, the spread and close of that bar.
  const params = backtestParams(base, steps);
  const env = createEnv(market, split, params, 1, 0);
  const out = createStepOut();
  const equity = new Float64Array(steps + 1);
  const exposure = new Float64Array(steps);
  const traded = new Float64Array(steps);
  const actions = new Int32Array(steps);
  equity[0] = params.initialCapital;
  const collapse = Math.fround(params.collapseFraction * env.f[EnvF.InitialCapital]);
  // The order arms the position's barriers too; nothing here checks them.
  executeOrder(env, market, params, 0, BUY_AND_HOLD_ACTION, out);
  traded[0] = Math.abs(out.traded) * out.fillPrice;
  let k = 0;
  for (; k < steps; k++) {
    const close = market.ohlc[(split.start + k + 1) * 4 + 3];
    env.f[EnvF.LastPrice] = close;
    const value = portfolioValue(env, 0);
    actions[k] = BUY_AND_HOLD_ACTION;
    equity[k + 1] = value;
    exposure[k] = positionNorm(env.f[EnvF.Units], close, value);
    if (value <= collapse) {
      k++;
      break;
    }
  }
  for (let j = k; j < steps; j++) equity[j + 1] = equity[k];
  return { trace: { equity, exposure, traded }, actions };
}

/**
 * Buy-and-hold and the random baseline on a split. Both are fixed for a run (the random one is
 * keyed by the run seed and the bar), so the trainer computes them once.
 */
export function baselines(
  market: Market,
  split: SplitRange,
  envCfg: EnvConfig,
  seed: number,
  barsPerYear: number,
): Omit<ValidationReport, 'policy'> {
  return {
    buyHold: buyAndHold(market, split, envCfg, barsPerYear).metrics,
    random: backtest(market, split, envCfg, randomPolicy(seed), barsPerYear).metrics,
  };
}
