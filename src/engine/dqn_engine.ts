/**
 * The DQN-family engine: the verbs the loop (src/train/dqn.ts) needs, so one loop can drive every
 * backend. The CPU engine (cpu_dqn.ts) calls the TS references; the device engine (device_dqn.ts)
 * implements the same verbs with the replay, PER tree and learner resident on the device.
 */
import type { BackendKind, Dispatch } from '../backend/types.js';
import type { SplitRange } from '../data/types.js';
import type { BacktestResult } from '../eval/backtest.js';
import type { StepProgress } from '../ticker.js';
import type { CollectStats } from './engine.js';

/** Means over an epoch's train steps. */
export interface DqnTrainStats {
  /** Train steps taken (0 while the replay holds fewer rows than a batch). */
  steps: number;
  loss: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Mean |TD error| (C51, IQN: the per-sample loss) of the sampled rows. */
  td: number;
  /** Importance-sampling exponent of the epoch's last step. */
  beta: number;
  /** Rows in the replay. */
  replaySize: number;
}

export interface DqnParams {
  online: Float32Array;
  target: Float32Array;
  curiosity: Float32Array;
}

type Moments = { m: Float32Array; v: Float32Array; step: number };

/** Everything a resume needs to continue bit for bit. */
export interface DqnSnapshot {
  params: DqnParams;
  optim: { online: Moments; curiosity: Moments };
  env: { f: Float32Array; i: Int32Array; window: Int32Array };
  /** Train steps taken (the Philox step of PER and IQN taus, the target schedule). */
  trainSteps: number;
  replay: { f: Float32Array; i: Int32Array; head: number; size: number };
  per: { tree: Float32Array; maxPriority: number };
}

export interface DqnEngine {
  readonly backend: BackendKind;
  /** One launch of N x L epsilon-greedy steps, folded into the replay. */
  collect(round: number, epsilon: number): Promise<CollectStats>;
  /**
   * `dqn.stepsPerEpoch` train steps; beta anneals over dqn.betaEpochs * dqn.stepsPerEpoch steps. A
   * host engine reports its steps to `onStep` as it goes (src/ticker.ts); a device engine runs
   * them in one submission.
   */
  train(round: number, onStep?: StepProgress): Promise<DqnTrainStats>;
  /** One AdamW step of the curiosity model on the last launch; its MSE before the step. */
  trainCuriosity(round: number): Promise<number>;
  /**
   * The validation backtest of the online net's greedy policy over `split` where the engine runs
   * it on its device (validate_dqn: the same trace as src/eval/backtest.ts with dqnGreedyPolicy,
   * the weights never leave the device); absent, the loop runs the host backtest on params().online.
   */
  validate?(split: SplitRange, barsPerYear: number): Promise<BacktestResult>;
  /**
   * `validate` runs beside later work (Backend.runBeside, a second CUDA stream): the loop starts
   * epoch e's validation before epoch e + 1's collection, beside it and its train phase.
   */
  readonly validatesBeside?: boolean;
  params(): Promise<DqnParams>;
  /**
   * Device engines: one train step's launches in order (PER sample, the learner's step, the
   * priority update), step 0 of a one-step schedule, for per-launch timing (`foxhunt bench train --algo dqn|c51|iqn`).
   * Running them changes the weights and the replay's priorities.
   */
  stepKernels?(): Dispatch[];
  /**
   * The engine's whole state. `replay` false (a checkpoint without it, dqn.checkpointReplay false)
   * leaves the ring and the tree out (empty arrays; head, size and the max priority stay), so that
   * the device does not copy them back.
   */
  snapshot(replay?: boolean): Promise<DqnSnapshot>;
  restore(snapshot: DqnSnapshot): Promise<void>;
  destroy(): void;
}
