/**
 * The DQN-family epoch benchmark behind `foxhunt bench train --algo dqn|c51` (docs/LEARNER.md):
 * the engine `foxhunt train` uses on that backend (src/engine/device_dqn.ts on webgpu and
 * cuda, the CPU engine on cpu), timed per phase of an epoch:
 *   collect   one launch of N x L epsilon-greedy steps and its insert into the replay (on a
 *             device: replay_insert, the stats sections read back; on cpu: the host replay)
 *   train     dqn.stepsPerEpoch train steps at dqn.batch (on a device: PER sample, step and
 *             priority update in one submission, the TD history read back at the end; on cpu:
 *             the TS references); `stepMs` = train / steps; `stepAloneMs` the same with
 *             nothing beside the train phase (more train phases after the measured epochs, where
 *             validation overlapped it)
 *   validate  what training's validate phase runs: params read back (the finite check), then the
 *             greedy policy backtested on the validation split (on a device: validate_dqn, one
 *             launch; on cpu: the host backtest)
 *   epoch     the wall time of one epoch. Where training runs epoch e's validation beside epoch
 *             e + 1's collection and train phase (src/train/dqn.ts validationOverlaps: CUDA), so
 *             does the bench, and an epoch is max(collect + train, the previous epoch's
 *             validation) + the params read; elsewhere the sum of the three phases
 * On a device the bench measures training's steady state: collections first fill the replay ring
 * (dqn.replayCapacity rows), then one warm-up epoch runs per target-copy phase (the first step
 * modulo dqn.targetEvery picks the epoch's recorded sequence, src/device/graphs.ts: a CUDA graph,
 * or the same WebGPU dispatch objects; at the defaults 10 phases). Those, and the first epoch on
 * the CPU, are not counted (kernel compilation, recording); the means are over the measured repeats.
 */
import type { Backend } from '../backend/types.js';
import type { Config } from '../config.js';
import type { Market, Splits } from '../data/types.js';
import { createCpuDqnEngine } from '../engine/cpu_dqn.js';
import { createDeviceDqnEngine } from '../engine/device_dqn.js';
import { backtest } from '../eval/backtest.js';
import { dqnGreedyPolicy } from '../eval/policies.js';
import { c51Support, epsilonAt, headOf } from '../learn/dqn_update.js';
import { duelingLayout } from '../nets/layout.js';
import { validationOverlaps } from './dqn.js';
import { EpochTail } from './epoch_end.js';
import { type StepKernelTime, timeEachLaunch } from './ppo_bench.js';

export interface BenchDqnResult {
  algo: string;
  episodes: number;
  steps: number;
  batch: number;
  trainSteps: number;
  /**
   * Mean wall milliseconds per epoch phase over the measured repeats; epochMs is the epoch's wall
   * time (less than the sum where validation overlaps the next collection and train phase).
   */
  times: { collectMs: number; trainMs: number; validateMs: number; epochMs: number };
  /** Epoch e's validation ran beside epoch e + 1's collection and train phase, as training runs it. */
  overlapped: boolean;
  /** Mean wall milliseconds of one train step (trainMs / trainSteps). */
  stepMs: number;
  /**
   * The same with nothing beside the train phase: where validation overlapped it, from as many
   * more train phases run alone after the measured epochs; else stepMs.
   */
  stepAloneMs: number;
  /** Device engines: one train step's launches, each timed alone (where the step's time goes). */
  stepKernels: StepKernelTime[];
  /** Device milliseconds of one train step's launches run together (one submission). */
  stepDeviceMs: number | null;
  /** Device milliseconds of dqn.stepsPerEpoch such steps in one submission (the train phase's device share). */
  trainDeviceMs: number | null;
}

export interface BenchDqnOptions {
  backend: Backend;
  cfg: Config;
  market: Market;
  splits: Splits;
  barsPerYear: number;
  repeats: number;
  /** Repeats when timing each launch of one train step alone (default 20; 0 skips it). */
  kernelRepeats?: number;
  onProgress?: (line: string) => void;
}

export async function benchDqnTrain(o: BenchDqnOptions): Promise<BenchDqnResult> {
  const { cfg, backend } = o;
  const q = cfg.dqn;
  const engine =
    backend.kind === 'cpu'
      ? createCpuDqnEngine(cfg, o.market, o.splits.train)
      : createDeviceDqnEngine(cfg, o.market, o.splits.train, backend);
  const head = headOf(cfg.train.algo);
  const layout = duelingLayout(head, q.atoms, q.iqnEmbed);
  const sum = { collect: 0, train: 0, validate: 0, epoch: 0 };
  const device = backend.kind !== 'cpu';
  // At least one warm-up: with overlap, the first measured epoch has the warm-up's validation
  // beside it, as every later one.
  const warmups = device ? targetPhases(q.targetEvery, q.stepsPerEpoch) : 1;
  const overlapped = validationOverlaps(cfg, engine);
  let round = 0;
  let stepKernels: StepKernelTime[] = [];
  let stepDeviceMs: number | null = null;
  let trainDeviceMs: number | null = null;
  let trainAlone = 0;
  try {
    if (device) {
      const fills = Math.ceil(q.replayCapacity / (cfg.rollout.episodes * cfg.rollout.steps));
      const t0 = performance.now();
      for (; round < fills; round++) await engine.collect(round, 1);
      o.onProgress?.(`fill: ${fills} collections in ${(performance.now() - t0).toFixed(0)} ms`);
    }
    // The validation of the net in place now, started; resolves to its wall milliseconds.
    const startValidation = (online: Float32Array): Promise<number> => {
      const t0 = performance.now();
      const done = engine.validate
        ? engine.validate(o.splits.val, o.barsPerYear)
        : Promise.resolve(
            backtest(
              o.market,
              o.splits.val,
              cfg.env,
              dqnGreedyPolicy(head, layout, online, c51Support(q), q.iqnActTau),
              o.barsPerYear,
            ),
          );
      return done.then(() => performance.now() - t0);
    };
    const tail = new EpochTail<number>();
    for (let r = 1 - warmups; r <= o.repeats; r++, round++) {
      const start = performance.now();
      let t0 = start;
      // As training: the previous epoch's validation beside this collection and train phase.
      tail.start();
      await engine.collect(round, epsilonAt(q, r));
      const collect = performance.now() - t0;
      t0 = performance.now();
      const trained = await engine.train(r);
      const train = performance.now() - t0;
      let validate = (await tail.settle()) ?? 0;
      if (trained.steps !== q.stepsPerEpoch) {
        throw new Error(
          `bench train: epoch ${round + 1} took ${trained.steps} train steps, not ${q.stepsPerEpoch} (the replay holds ${trained.replaySize} rows, a batch is ${q.batch}): raise --episodes or --steps`,
        );
      }
      t0 = performance.now();
      const params = await engine.params();
      for (const [net, p] of Object.entries(params))
        for (let k = 0; k < p.length; k++)
          if (!Number.isFinite(p[k])) throw new Error(`bench train: ${net} parameter ${k} is ${p[k]}`);
      validate += performance.now() - t0;
      if (overlapped) tail.defer(() => startValidation(params.online));
      else validate += await startValidation(params.online);
      const epoch = performance.now() - start;
      const what = r <= 0 ? 'warm-up' : `epoch ${r}`;
      o.onProgress?.(
        `${what}: collect ${collect.toFixed(1)} ms, train ${train.toFixed(1)} ms, validate ${validate.toFixed(1)} ms` +
          `${overlapped ? " (the previous epoch's, beside the collection and train phase)" : ''}, epoch ${epoch.toFixed(1)} ms`,
      );
      if (r <= 0) continue;
      sum.collect += collect;
      sum.train += train;
      sum.validate += validate;
      sum.epoch += epoch;
    }
    // The last epoch's validation, not timed: the device is idle for what follows.
    await tail.settle();
    // The train phase alone (the learner's own speed), where validation shared the GPU with it.
    for (let k = 0; overlapped && k < o.repeats; k++, round++) {
      const t0 = performance.now();
      await engine.train(round);
      trainAlone += performance.now() - t0;
    }
    const kernelRepeats = o.kernelRepeats ?? 20;
    if (engine.stepKernels && kernelRepeats > 0) {
      const list = engine.stepKernels();
      stepDeviceMs = await backend.time(list, kernelRepeats);
      // The epoch's train steps as one submission of the same step's launches: the device's share
      // of the train phase's wall time.
      trainDeviceMs = await backend.time(Array.from({ length: q.stepsPerEpoch }, () => list).flat(), 1);
      stepKernels = await timeEachLaunch(backend, list, kernelRepeats);
    }
  } finally {
    engine.destroy();
  }
  const r = o.repeats;
  const times = {
    collectMs: sum.collect / r,
    trainMs: sum.train / r,
    validateMs: sum.validate / r,
    epochMs: sum.epoch / r,
  };
  return {
    algo: cfg.train.algo,
    episodes: cfg.rollout.episodes,
    steps: cfg.rollout.steps,
    batch: q.batch,
    trainSteps: q.stepsPerEpoch,
    times,
    overlapped,
    stepMs: times.trainMs / q.stepsPerEpoch,
    stepAloneMs: overlapped ? trainAlone / r / q.stepsPerEpoch : times.trainMs / q.stepsPerEpoch,
    stepKernels,
    stepDeviceMs,
    trainDeviceMs,
  };
}

/** Distinct target-copy phases of consecutive epochs of `steps` train steps (at most 16, GraphCache's size). */
export function targetPhases(targetEvery: number, steps: number): number {
  if (targetEvery <= 0) return 1;
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  return Math.min(16, targetEvery / gcd(targetEvery, steps));
}

/** The table `foxhunt bench train --algo dqn|c51` prints. */
export function dqnTable(results: BenchDqnResult[]): string[] {
  const rows = [
    [
      'N x L',
      'batch',
      'train steps',
      'collect ms',
      'train ms',
      'validate ms',
      'epoch ms',
      'step ms',
      'step ms alone',
    ],
    ...results.map((r) => [
      `${r.episodes} x ${r.steps}`,
      String(r.batch),
      String(r.trainSteps),
      r.times.collectMs.toFixed(1),
      r.times.trainMs.toFixed(1),
      r.times.validateMs.toFixed(1),
      r.times.epochMs.toFixed(1),
      r.stepMs.toFixed(3),
      r.stepAloneMs.toFixed(3),
    ]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) =>
    r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  '),
  );
}
