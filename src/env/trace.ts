/**
 * A fixed action sequence replayed through the simulator as a CSV trace (the `foxhunt sim`
 * command): one episode slot whose only possible start bar is the chosen one (split
 * [start, start + steps + 1), episodeBars = steps), so it never truncates before the actions
 * run out; it stops at the first done. Values are printed as the shortest decimal that reads
 * back as the same f32, so a trace can be compared bit for bit with a kernel's outputs.
 */
import type { Config } from '../config.js';
import type { Market } from '../data/types.js';
import type { CuriosityModel } from './curiosity.js';
import { BarrierEvent, createStepOut, type StepOut } from './output.js';
import { envParams } from './params.js';
import { createEnv } from './state.js';
import { envStep } from './step.js';

/** Columns of the trace: `bar` is the decision bar t; the portfolio is marked at close_{t+1}. */
export const TRACE_COLUMNS = [
  'bar',
  'action',
  'fill_price',
  'exit_price',
  'units',
  'cash',
  'value',
  'costs',
  'barrier',
  'done',
  'pnl',
  'barrier_reward',
  'risk',
  'diversity',
  'curiosity',
  'total',
] as const;

/** Shortest decimal that reads back as the same f32. */
export function formatF32(x: number): string {
  for (let p = 1; p < 9; p++) {
    const s = Number(x.toPrecision(p));
    if (Math.fround(s) === x) return String(s);
  }
  return String(Number(x.toPrecision(9)));
}

/** The barrier column: the SPEC label, empty when no barrier fired. */
const LABELS: Record<number, string> = {
  [BarrierEvent.None]: '',
  [BarrierEvent.Profit]: '+1',
  [BarrierEvent.Stop]: '-1',
  [BarrierEvent.Time]: '0',
};

/** One trace row; fill and exit prices are empty when there was none. */
export function traceRow(o: StepOut): string {
  return [
    String(o.bar),
    String(o.action),
    o.filled ? formatF32(o.fillPrice) : '',
    o.barrierEvent !== BarrierEvent.None ? formatF32(o.exitPrice) : '',
    formatF32(o.units),
    formatF32(o.cash),
    formatF32(o.value),
    formatF32(o.costs),
    LABELS[o.barrierEvent],
    String(o.done),
    formatF32(o.pnl),
    formatF32(o.barrier),
    formatF32(o.risk),
    formatF32(o.diversity),
    formatF32(o.curiosity),
    formatF32(o.total),
  ].join(',');
}

export interface Replay {
  rows: string[];
  /** The last step's record. */
  last: StepOut;
  /** Fees paid over the replay. */
  costs: number;
  /** Actions not replayed because the data ended. */
  unplayed: number;
}

/** Replays `actions` (integers 0..44) from decision bar `start` (0 <= start <= n - 2). */
export function replayActions(
  market: Market,
  cfg: Pick<Config, 'env' | 'train'>,
  start: number,
  actions: readonly number[],
  curiosity: CuriosityModel | null,
): Replay {
  if (!(Number.isInteger(start) && start >= 0 && start <= market.n - 2)) {
    throw new Error(`replay: start bar ${start} is outside 0..${market.n - 2}`);
  }
  const steps = Math.min(actions.length, market.n - 1 - start);
  const params = { ...envParams(cfg.env), episodeBars: steps };
  const env = createEnv(market, { start, end: start + steps + 1 }, params, 1, cfg.train.seed);
  const out = createStepOut();
  const rows: string[] = [];
  let costs = 0;
  for (let k = 0; k < steps; k++) {
    envStep(env, market, params, 0, actions[k], out, curiosity);
    rows.push(traceRow(out));
    costs += out.costs;
    if (out.done) break;
  }
  return { rows, last: out, costs, unplayed: actions.length - steps };
}
