/**
 * PPO training, top to bottom (CleanRL style). One epoch:
 *   1. collect    N episodes x L steps with the current stochastic policy (episodes carry over)
 *   2. update     updateEpochs passes of shuffled minibatches: clipped surrogate + value + entropy,
 *                 global grad-norm clip, Adam
 *   3. curiosity  one AdamW step of the forward model, every env.curiosityEvery rounds
 *   4. validate   the greedy policy over the validation split, next to buy-and-hold and random
 *                 (computed once per run); on a device engine validate_policy (launches of up to
 *                 512 steps, CUDA 8,192)
 *   5. checkpoint last/ every train.checkpointEvery epochs and after the last one; best/ when the
 *                 validation score (src/eval/verdict.ts) beats every earlier epoch's
 *   6. log        one JSON line to <outDir>/log.jsonl
 * After the last epoch, best/ is evaluated once on the test split and a summary line ends the log.
 * The engine (src/engine/engine.ts) runs 1-3 on its backend; this file owns the schedule. A
 * non-finite loss, reward or parameter stops the run before anything is written for that epoch,
 * so the last checkpoint on disk is the last good one.
 */
import type { Config } from '../config.js';
import type { Market, Splits } from '../data/types.js';
import type { PpoEngine, PpoParams } from '../engine/engine.js';
import { backtestAsync, baselines } from '../eval/backtest.js';
import { ppoGreedyPolicy } from '../eval/policies.js';
import { validationScore, verdictSentence } from '../eval/verdict.js';
import { describeNonFinite, firstNonFinite } from '../features/market.js';
import { bestDir, lastDir } from './checkpoint.js';
import { type EpochLoop, endEpoch, type Phase } from './epoch_end.js';
import { type DataFingerprint, loadPpoCheckpoint, savePpoCheckpoint } from './ppo_checkpoint.js';
import { appendLog, type EpochRecord, type RunSummary } from './runlog.js';
import type { Storage } from './storage.js';

export { type Phase, RunStoppedError } from './epoch_end.js';

/** One training run of either family, on its engine (PpoRun, DqnRun). */
export interface TrainRun<Engine> {
  cfg: Config;
  market: Market;
  splits: Splits;
  engine: Engine;
  /** Where the checkpoints and the log go, under outDir. */
  storage: Storage;
  outDir: string;
  /** Annualisation of the validation metrics. */
  barsPerYear: number;
  data: DataFingerprint;
  /** 1 for a fresh run; the checkpoint's epoch + 1 on resume. */
  firstEpoch: number;
  /** The score of best/ so far (on resume), or -Infinity. */
  bestScore: number;
  /** Awaited: a caller may hold the run at a phase boundary (the page's pause) or throw to stop it. */
  onPhase?: (epoch: number, phase: Phase) => void | Promise<void>;
  /** A host engine's train steps as they run (the CPU's update phase: minutes at the spec's sizes). */
  onStep?: (epoch: number, phase: Phase, done: number, total: number) => void | Promise<void>;
  /** Awaited, after the epoch's checkpoints and log line are written. */
  onEpoch?: (record: EpochRecord) => void | Promise<void>;
  /** Stops the run after the epoch in progress (a browser's Stop button); see RunStoppedError. */
  signal?: AbortSignal;
}

export type PpoRun = TrainRun<PpoEngine>;

/** Training produced a NaN or an infinity: the message names the epoch and the quantity. */
export class TrainingDivergedError extends Error {
  override name = 'TrainingDivergedError';
  /** divergenceCause's sentence: what to check or change. */
  readonly reason: string;
  /** The inputs were finite and an update had run: the optimisation diverged (a lower lr helps). */
  readonly optimisation: boolean;
  constructor(
    /** The epoch and the quantity, e.g. `epoch 2: the PPO loss total is NaN`. */
    readonly symptom: string,
    /** What the run kept, e.g. `the last good checkpoint (epoch 1) in DIR is kept`. */
    kept: string,
    market: Market,
    section: 'ppo' | 'dqn',
    beforeUpdate: boolean,
  ) {
    const reason = divergenceCause(market, section, beforeUpdate);
    super(`${symptom}; the run stopped and ${kept}. ${reason}`);
    this.reason = reason;
    this.optimisation = !beforeUpdate && !reason.startsWith(NON_FINITE_INPUTS);
  }
}

const NON_FINITE_INPUTS = 'The market inputs are not finite';

/**
 * Why a run went non-finite: the inputs were checked finite before epoch 1 (prepareData), so a
 * non-finite input found now names the data; otherwise the optimisation diverged.
 */
export function divergenceCause(
  market: Market,
  section: 'ppo' | 'dqn' = 'ppo',
  beforeUpdate = false,
): string {
  const bad = firstNonFinite(market);
  if (bad) return `${NON_FINITE_INPUTS} (${describeNonFinite(bad)}): check the data`;
  // Epoch 1's rewards come from the initial nets: only the environment's scales can overflow them.
  if (beforeUpdate)
    return 'The market inputs are finite and no update has run yet, so the environment overflows f32: start a new run with env.initialCapital and env.pnlScale nearer their defaults (1 and 100)';
  return `The market inputs are finite, so the optimisation diverged: start a new run with a lower ${section}.lr or ${section}.maxGradNorm`;
}

export interface PpoResult {
  records: EpochRecord[];
  summary: RunSummary;
}

export async function trainPpo(run: PpoRun): Promise<PpoResult> {
  const { cfg, engine, market, splits } = run;
  const seed = cfg.train.seed;
  const ckptDir = lastDir(run.outDir);
  const { buyHold, random } = baselines(market, splits.val, cfg.env, seed, run.barsPerYear);
  const records: EpochRecord[] = [];
  const loop: EpochLoop = {
    ...run,
    epochs: cfg.train.epochs,
    checkpointEvery: cfg.train.checkpointEvery,
    lastSaved: run.firstEpoch - 1,
  };

  for (let epoch = run.firstEpoch; epoch <= cfg.train.epochs; epoch++) {
    const round = epoch - 1;
    const diverged = (what: string, value: number, beforeUpdate = false) =>
      new TrainingDivergedError(
        `epoch ${epoch}: ${what} is ${value}`,
        loop.lastSaved > 0
          ? `the last good checkpoint (epoch ${loop.lastSaved}) in ${ckptDir} is kept (--resume continues from it)`
          : 'no checkpoint was written',
        market,
        'ppo',
        beforeUpdate,
      );
    const finite = (what: string, values: Record<string, number>, beforeUpdate = false) => {
      for (const [k, v] of Object.entries(values))
        if (!Number.isFinite(v)) throw diverged(`${what} ${k}`, v, beforeUpdate);
    };

    // 1. Collect N x L experiences with the current policy.
    await run.onPhase?.(epoch, 'collect');
    let t0 = performance.now();
    const rollout = await engine.collect(round);
    const collectMs = performance.now() - t0;
    finite('the mean reward', rollout.reward, epoch === 1);

    // 2. PPO update on the rollout.
    await run.onPhase?.(epoch, 'update');
    t0 = performance.now();
    const update = await engine.update(round, run.onStep && ((d, t) => run.onStep?.(epoch, 'update', d, t)));
    const updateMs = performance.now() - t0;
    const { samples, ...losses } = update;
    finite('the PPO loss', losses);

    // 3. Curiosity forward model.
    await run.onPhase?.(epoch, 'curiosity');
    t0 = performance.now();
    let curiosityLoss: number | undefined;
    if ((round + 1) % cfg.env.curiosityEvery === 0) {
      curiosityLoss = await engine.trainCuriosity(round);
      finite('the curiosity loss', { mse: curiosityLoss });
    }
    const curiosityMs = performance.now() - t0;

    // 4. Validate the greedy policy.
    await run.onPhase?.(epoch, 'validate');
    t0 = performance.now();
    const params = await engine.params();
    assertFiniteParams(params, (net, value) =>
      diverged(`${/^[aeiou]/.test(net) ? 'an' : 'a'} ${net} parameter`, value),
    );
    // On a device the backtest runs there (validate_policy); the CPU engine runs the host one.
    const policy = engine.validate
      ? (await engine.validate(splits.val, run.barsPerYear)).metrics
      : (
          await backtestAsync(
            market,
            splits.val,
            cfg.env,
            ppoGreedyPolicy(params.actor),
            run.barsPerYear,
            run.onStep && ((d, t) => run.onStep?.(epoch, 'validate', d, t)),
          )
        ).metrics;
    const validateMs = performance.now() - t0;

    const record: EpochRecord = {
      epoch,
      algo: 'ppo',
      backend: engine.backend,
      losses: {
        policy: losses.policyLoss,
        value: losses.valueLoss,
        entropy: losses.entropy,
        total: losses.total,
        approxKl: losses.approxKl,
        clipFrac: losses.clipFrac,
        gradNorm: losses.gradNorm,
        ...(curiosityLoss === undefined ? {} : { curiosity: curiosityLoss }),
      },
      reward: rollout.reward,
      entropy: losses.entropy,
      throughput: {
        envStepsPerSec: rollout.steps / (collectMs / 1000),
        samplesPerSec: samples / (updateMs / 1000),
      },
      timeMs: {
        collect: collectMs,
        update: updateMs,
        curiosity: curiosityMs,
        validate: validateMs,
        checkpoint: 0,
      },
      validation: { policy, buyHold, random },
      score: validationScore(policy),
    };

    await endEpoch(loop, record, async () => {
      const snapshot = await engine.snapshot();
      const state = {
        algo: 'ppo' as const,
        epoch,
        seed,
        backend: engine.backend,
        config: cfg,
        data: run.data,
        rng: { stepBase: epoch * cfg.rollout.steps, update: epoch },
        record,
      };
      return (dir) => savePpoCheckpoint(run.storage, dir, snapshot, state);
    });
    records.push(record);
  }
  const summary = await summarize(run);
  await appendLog(run.storage, run.outDir, summary);
  return { records, summary };
}

/** best/ as it is stored, on the test split (once, here), and the verdict sentences. */
async function summarize(run: PpoRun): Promise<RunSummary> {
  const { cfg, market, splits } = run;
  const best = await loadPpoCheckpoint(run.storage, bestDir(run.outDir));
  const test = {
    policy: (
      await backtestAsync(
        market,
        splits.test,
        cfg.env,
        ppoGreedyPolicy(best.snapshot.params.actor),
        run.barsPerYear,
      )
    ).metrics,
    ...baselines(market, splits.test, cfg.env, cfg.train.seed, run.barsPerYear),
  };
  const { epoch, validation, score } = best.state.record;
  const who = `best/ (epoch ${epoch} of ${cfg.train.epochs})`;
  return {
    summary: true,
    algo: 'ppo',
    backend: run.engine.backend,
    epochs: cfg.train.epochs,
    best: { epoch, score, validation },
    test,
    verdict: {
      validation: verdictSentence(who, 'validation', validation),
      test: verdictSentence(who, 'test', test),
    },
  };
}

function assertFiniteParams(params: PpoParams, fail: (net: string, value: number) => Error): void {
  for (const [net, p] of Object.entries(params) as [string, Float32Array][]) {
    for (let k = 0; k < p.length; k++) if (!Number.isFinite(p[k])) throw fail(net, p[k]);
  }
}
