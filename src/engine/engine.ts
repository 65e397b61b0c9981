/**
 * The PPO engine: the four verbs the trainer's loop (src/train/ppo.ts) needs, so one loop drives
 * every backend. The CPU engine calls the TS references directly; a GPU engine implements the
 * same verbs with the collect_ppo and learner kernels, keeping the rollout on the device.
 * No RL decision lives in an engine beyond what its verbs name; the loop owns the schedule.
 */

import type { BackendKind } from '../backend/types.js';
import type { CollectStats } from '../collect/rollout.js';
import type { SplitRange } from '../data/types.js';
import type { BacktestResult } from '../eval/backtest.js';
import type { StepProgress } from '../ticker.js';

// The rollout summary lives beside the rollout it reads (src/collect/rollout.ts).
export { type CollectStats, summarizeRollout } from '../collect/rollout.js';

/** Means over the update's minibatches. */
export interface UpdateStats {
  total: number;
  policyLoss: number;
  valueLoss: number;
  /** Mean policy entropy, nats. */
  entropy: number;
  approxKl: number;
  clipFrac: number;
  /** Global actor + critic gradient norm before clipping. */
  gradNorm: number;
  /** Samples passed through the loss (minibatches * minibatch size). */
  samples: number;
}

export interface PpoParams {
  actor: Float32Array;
  critic: Float32Array;
  curiosity: Float32Array;
}

/** Everything a resume needs to continue bit for bit: host copies of the device state. */
export interface PpoSnapshot {
  params: PpoParams;
  /** Adam moments (m, v) and step count per network (curiosity's is AdamW). */
  optim: Record<keyof PpoParams, { m: Float32Array; v: Float32Array; step: number }>;
  /** Persistent episode buffers (src/env/state.ts layout). */
  env: { f: Float32Array; i: Int32Array; window: Int32Array };
}

export interface PpoEngine {
  readonly backend: BackendKind;
  /** Runs one rollout of N x L steps (launch `round`), episodes continuing from the last one. */
  collect(round: number): Promise<CollectStats>;
  /**
   * PPO update on the last rollout; `round` seeds its shuffles. A host engine reports its minibatch
   * steps to `onStep` as it goes (src/ticker.ts); a device engine runs them in one submission.
   */
  update(round: number, onStep?: StepProgress): Promise<UpdateStats>;
  /** One AdamW step of the curiosity model on the last rollout; returns its MSE before the step. */
  trainCuriosity(round: number): Promise<number>;
  /**
   * The validation backtest of the current greedy actor over `split` where the engine runs it on
   * its device (validate_policy: the same trace as src/eval/backtest.ts, the weights never leave
   * the device); absent, the loop runs the host backtest on params().actor.
   */
  validate?(split: SplitRange, barsPerYear: number): Promise<BacktestResult>;
  /** Current parameters (host copies or views that stay valid until the next verb). */
  params(): Promise<PpoParams>;
  snapshot(): Promise<PpoSnapshot>;
  restore(snapshot: PpoSnapshot): Promise<void>;
  destroy(): void;
}
