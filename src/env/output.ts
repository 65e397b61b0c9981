/**
 * What one simulator step reports: the trade, the portfolio after marking at close_{t+1}, the
 * barrier event, the flags and the reward split into its components. One record is allocated
 * per caller and overwritten every step (no objects per step).
 */
import { STATE_DIM } from '../nets/layout.js';

/** Barrier event of a step. Its SPEC label: Profit +1, Stop -1, Time 0; None has no label. */
export const BarrierEvent = { None: 0, Profit: 1, Stop: 2, Time: 3 } as const;

export interface StepOut {
  /** Decision bar t (the order executes and the portfolio is marked in bar t + 1). */
  bar: number;
  action: number;
  /** Short 0, Flat 1, Long 2. */
  category: number;
  /** 1 when the agent's order traded (both phases of a reversal count as one fill). */
  filled: number;
  /** Price of the agent's fill, 0 when nothing traded. */
  fillPrice: number;
  /** Units the agent's order traded (signed; a reversal's two phases summed). */
  traded: number;
  /** BarrierEvent of this step. */
  barrierEvent: number;
  /** Price of the barrier exit (half-spread included), 0 when no barrier fired. */
  exitPrice: number;
  /** Portfolio after the step, marked at close_{t+1}. */
  units: number;
  cash: number;
  value: number;
  /** Fees paid in this step (agent order and barrier exit). */
  costs: number;
  /** pnlScale * (V_{t+1} - V_t) / V_t. */
  pnl: number;
  /** pnl * (+barrierScale on profit, -barrierScale on stop, 0 otherwise). */
  barrier: number;
  /** -riskScale * max(0, |position_norm| - riskThreshold) (<= 0). */
  risk: number;
  diversity: number;
  curiosity: number;
  /** f32(f32(f32(f32(pnl + barrier) + risk) + diversity) + curiosity). */
  total: number;
  /** 1 when the episode ended (barrier with barrierTerminates, or value collapse). */
  done: number;
  /** 1 when the episode reached episodeBars steps without ending (bootstrapped). */
  truncated: number;
  /** State at bar t + 1 computed after the step, before any restart of the episode. */
  nextState: Float32Array;
}

export function createStepOut(): StepOut {
  return {
    bar: 0,
    action: 0,
    category: 0,
    filled: 0,
    fillPrice: 0,
    traded: 0,
    barrierEvent: BarrierEvent.None,
    exitPrice: 0,
    units: 0,
    cash: 0,
    value: 0,
    costs: 0,
    pnl: 0,
    barrier: 0,
    risk: 0,
    diversity: 0,
    curiosity: 0,
    total: 0,
    done: 0,
    truncated: 0,
    nextState: new Float32Array(STATE_DIM),
  };
}
