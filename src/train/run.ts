/**
 * A training run from a resolved config: data (bars already in memory, or the built-in synthetic
 * market), splits, backend and engine, fresh start or resume, then the algorithm's loop. The CLI,
 * the browser worker and the tests all come through here; nothing in this file prints or touches
 * a file system: files go through a Storage (./storage.ts), text through the callbacks.
 */

import {
  type Backend,
  type BackendKind,
  type CreateBackendOptions,
  chooseBackend,
  describeChoice,
} from '../backend/index.js';
import { type Config, resolvePrecision } from '../config.js';
import { makeSplits } from '../data/splits.js';
import { generateSynthetic } from '../data/synthetic.js';
import type { Bars, Market, Splits } from '../data/types.js';
import { createCpuPpoEngine } from '../engine/cpu_ppo.js';
import { createDevicePpoEngine } from '../engine/device_ppo.js';
import type { PpoEngine } from '../engine/engine.js';
import { inferBarsPerYear } from '../eval/metrics.js';
import { assertMarketFinite, buildMarket } from '../features/market.js';
import { bestDir, CheckpointError, lastDir, STATE_FILE } from './checkpoint.js';
import { checkpointAlgo, type DqnCheckpoint, loadDqnCheckpoint } from './dqn_checkpoint.js';
import { runDqnTraining } from './dqn_run.js';
import { type Phase, type TrainRun, trainPpo } from './ppo.js';
import { type DataFingerprint, loadPpoCheckpoint, type PpoCheckpoint } from './ppo_checkpoint.js';
import { type EpochRecord, type RunSummary, readSummary, trimLog } from './runlog.js';
import { committedDir, joinPath, PREVIOUS, readText, type Storage, settleDir } from './storage.js';

/** A configuration or usage problem the user can fix; the CLI prints it as one line. */
export class RunError extends Error {
  override name = 'RunError';
}

export interface PreparedData {
  market: Market;
  splits: Splits;
  fingerprint: DataFingerprint;
  barsPerYear: number;
}

/** Market bars a caller already holds (parsed from a file or a dropped CSV) and where they came from. */
export interface SourcedBars {
  bars: Bars;
  /** The file name, shown in messages and kept in checkpoints; never read from. */
  source: string;
}

/**
 * The market of `input`, or of the synthetic market of cfg.data.synthBars bars (seed
 * cfg.train.seed), with its fingerprint and bars per year; no splits (prepareData adds them).
 */
export async function prepareMarket(cfg: Config, input?: SourcedBars): Promise<Omit<PreparedData, 'splits'>> {
  const bars: Bars = input?.bars ?? generateSynthetic({ bars: cfg.data.synthBars, seed: cfg.train.seed });
  const dataFile = input?.source;
  const market = buildMarket(bars, cfg);
  assertMarketFinite(market, dataFile ?? 'the synthetic market');
  let closeSum = 0;
  for (let t = 0; t < market.n; t++) closeSum += market.ohlc[t * 4 + 3];
  return {
    market,
    fingerprint: {
      source: dataFile ?? 'synthetic',
      bars: market.n,
      firstTimestamp: market.timestamp[0],
      lastTimestamp: market.timestamp[market.n - 1],
      closeSum,
    },
    barsPerYear: cfg.train.barsPerYear > 0 ? cfg.train.barsPerYear : inferBarsPerYear(market.timestamp),
  };
}

/** prepareMarket with the train / validation / test splits of cfg.data. */
export async function prepareData(cfg: Config, input?: SourcedBars): Promise<PreparedData> {
  // Splits first: data too short for them is the error to report (before bars per year).
  const splits = makeSplits(input?.bars.n ?? cfg.data.synthBars, cfg);
  return { ...(await prepareMarket(cfg, input)), splits };
}

/** Fields a resume may change; anything else would make the continued run a different run. */
const RESUMABLE = new Set(['train.epochs', 'train.checkpointEvery']);

/** `section.field` paths whose values differ between two configs. */
export function configDiff(a: Config, b: Config): string[] {
  const out: string[] = [];
  for (const section of Object.keys(a) as (keyof Config)[]) {
    const x = a[section] as unknown as Record<string, unknown>;
    const y = b[section] as unknown as Record<string, unknown>;
    for (const key of Object.keys(x)) if (x[key] !== y[key]) out.push(`${section}.${key}`);
  }
  return out;
}

/**
 * The checkpoint of `outDir` and the config to resume with: the checkpoint's own config with
 * `override` applied (the command's config file and flags); only train.epochs and
 * train.checkpointEvery may change.
 */
export async function resumeConfig(
  storage: Storage,
  outDir: string,
  override: (base: Config) => Config,
): Promise<{ cfg: Config; checkpoint: PpoCheckpoint | DqnCheckpoint }> {
  // Runs written before last/ and best/ existed kept their one checkpoint in checkpoint/.
  const legacy = joinPath(outDir, 'checkpoint');
  const useLegacy = !(await committedDir(storage, lastDir(outDir))) && (await storage.exists(legacy));
  const dir = useLegacy ? legacy : lastDir(outDir);
  if (!useLegacy && !(await committedDir(storage, dir))) {
    // A run stopped before its first last/ (a log, best/): nothing to resume, and a fresh run
    // into it is refused too, so say the one way on.
    const earlier = [
      ...((await committedDir(storage, bestDir(outDir))) ? ['best'] : []),
      ...((await storage.exists(joinPath(outDir, 'log.jsonl'))) ? ['log.jsonl'] : []),
    ];
    if (earlier.length)
      throw new CheckpointError(
        `${lastDir(outDir)}: no checkpoint here to resume (the run stopped before its first; ${outDir} ` +
          `holds only ${earlier.join(', ')}); --force starts it again, --out DIR trains elsewhere`,
      );
  }
  const checkpoint =
    (await checkpointAlgo(storage, dir)) === 'ppo'
      ? await loadPpoCheckpoint(storage, dir)
      : await loadDqnCheckpoint(storage, dir);
  const { state } = checkpoint;
  // Checkpoints written before train.precision existed trained in exact f32: resume them so.
  state.config.train.precision ??= 'exact';
  const cfg = override(structuredClone(state.config));
  const changed = configDiff(state.config, cfg).filter((p) => !RESUMABLE.has(p) && p !== 'train.outDir');
  if (changed.length) {
    const p = changed[0];
    const [s, k] = p.split('.') as [keyof Config, string];
    const was = (state.config[s] as unknown as Record<string, unknown>)[k];
    const now = (cfg[s] as unknown as Record<string, unknown>)[k];
    throw new RunError(
      `--resume continues the checkpoint's run, but ${p} differs (${JSON.stringify(was)} in the checkpoint, ` +
        `${JSON.stringify(now)} now); drop that option, or start a new run without --resume`,
    );
  }
  // A run that finished its last epoch but crashed before its summary line resumes to write it.
  const finished = (await readSummary(storage, outDir, true))?.epochs === state.epoch;
  if (state.epoch > cfg.train.epochs || (state.epoch === cfg.train.epochs && finished)) {
    throw new RunError(
      `the checkpoint in ${outDir} already finished epoch ${state.epoch} of ${cfg.train.epochs}; ` +
        'raise --epochs to train further',
    );
  }
  return { cfg, checkpoint };
}

export interface RunOptions {
  cfg: Config;
  /** Where checkpoints and the log go (src/node/storage.ts for files, MemoryStorage, OPFS, ...). */
  storage: Storage;
  /** The bars to train on; default: the synthetic market of the config. */
  bars?: SourcedBars;
  /** How to create the backend (e.g. `gpu: navigator.gpu` in a browser). */
  backendOptions?: CreateBackendOptions;
  /** A fresh run into an outDir that holds a run deletes that run first; without it, it refuses. */
  force?: boolean;
  /** The checkpoint to continue from (from resumeConfig), or null for a fresh run. */
  resume: PpoCheckpoint | DqnCheckpoint | null;
  onInfo?: (line: string) => void;
  /** Awaited (see PpoRun): the browser worker pauses here, and stops by throwing. */
  onPhase?: (epoch: number, phase: Phase) => void | Promise<void>;
  /** The CPU engines' train steps as they run (see PpoRun). */
  onStep?: (epoch: number, phase: Phase, done: number, total: number) => void | Promise<void>;
  onEpoch?: (record: EpochRecord) => void | Promise<void>;
  /** Stops the run after the epoch in progress with a RunStoppedError (src/train/ppo.ts). */
  signal?: AbortSignal;
}

export interface RunResult {
  records: EpochRecord[];
  /** best/, its test-split report and the verdict sentences (also the log's last line). */
  summary: RunSummary;
  backend: BackendKind;
  outDir: string;
}

/**
 * Engines by backend: the CPU runs the TS references directly (no kernel dispatch); WebGPU and
 * CUDA run collect_ppo and the device learners with the rollout kept on the device.
 */
const ppoEngines: Record<
  BackendKind,
  (backend: Backend, cfg: Config, market: Market, splits: Splits) => PpoEngine
> = {
  cpu: (_backend, cfg, market, splits) => createCpuPpoEngine(cfg, market, splits.train),
  webgpu: (backend, cfg, market, splits) => createDevicePpoEngine(backend, cfg, market, splits.train),
  cuda: (backend, cfg, market, splits) => createDevicePpoEngine(backend, cfg, market, splits.train),
};

export async function runTraining(opts: RunOptions): Promise<RunResult> {
  const { cfg } = opts;
  if (cfg.train.algo !== 'ppo') return runDqnTraining(opts);
  const { storage } = opts;
  const { outDir, earlier, data } = await openRun(opts);

  const choice = await chooseBackend(cfg.train.backend, opts.backendOptions);
  const backend = choice.backend;
  try {
    for (const line of describeChoice(choice)) opts.onInfo?.(line);
    if (opts.resume && opts.resume.state.backend !== backend.kind) {
      const was = opts.resume.state.backend;
      throw new RunError(
        `the checkpoint was trained on the ${was} backend, this run would use ${backend.kind}; ` +
          `pass --backend ${was} to resume it exactly`,
      );
    }
    if (backend.kind !== 'cpu') {
      const precision = resolvePrecision(cfg.train.precision, backend.kind);
      opts.onInfo?.(
        `precision: ${precision}${precision === 'tf32' ? ' (TF32 tensor cores in the collector and learner; --train.precision exact for f32)' : ''}`,
      );
    }
    const engine = ppoEngines[backend.kind](backend, cfg, data.market, data.splits);
    try {
      // The config came from this checkpoint (resumeConfig), so algo 'ppo' means a PPO checkpoint.
      const resume = opts.resume as PpoCheckpoint | null;
      const { firstEpoch, bestScore } = await startRun(storage, outDir, earlier, resume?.state ?? null, () =>
        engine.restore((resume as PpoCheckpoint).snapshot),
      );
      const { records, summary } = await trainPpo(loopRun(opts, data, engine, { firstEpoch, bestScore }));
      return { records, summary, backend: backend.kind, outDir };
    } finally {
      engine.destroy();
    }
  } finally {
    backend.destroy();
  }
}

/**
 * A run's place and data: refuses an outDir that holds a run unless resuming or forced, builds the
 * market and its splits, and checks that a resume trains on the data its checkpoint saw.
 */
export async function openRun(
  opts: RunOptions,
): Promise<{ outDir: string; earlier: string[]; data: PreparedData }> {
  const { cfg, storage } = opts;
  const outDir = cfg.train.outDir;
  const earlier = opts.resume ? [] : await earlierRun(storage, outDir);
  if (earlier.length && !opts.force) {
    throw new RunError(
      `${outDir} already holds a run (${earlier.join(', ')}); --resume continues it, --out DIR trains ` +
        'elsewhere, --force deletes it and starts again',
    );
  }
  const data = await prepareData(cfg, opts.bars);
  if (opts.resume) checkSameData(opts.resume.state.data, data.fingerprint, outDir);
  return { outDir, earlier, data };
}

/** The loop's run (trainPpo, trainDqn): the data, the place, where it starts and the caller's hooks. */
export function loopRun<Engine>(
  opts: RunOptions,
  data: PreparedData,
  engine: Engine,
  start: { firstEpoch: number; bestScore: number },
): TrainRun<Engine> {
  return {
    cfg: opts.cfg,
    market: data.market,
    splits: data.splits,
    engine,
    storage: opts.storage,
    outDir: opts.cfg.train.outDir,
    barsPerYear: data.barsPerYear,
    data: data.fingerprint,
    ...start,
    onPhase: opts.onPhase,
    onStep: opts.onStep,
    onEpoch: opts.onEpoch,
    signal: opts.signal,
  };
}

/** What a run leaves in its outDir; any of them makes the directory occupied. */
const RUN_ENTRIES = ['last', 'best', 'checkpoint', 'log.jsonl'].flatMap((n) =>
  n.includes('.') ? [n] : [n, n + PREVIOUS],
);

/** The entries of an earlier run in `outDir` (empty when there is none). */
export async function earlierRun(storage: Storage, outDir: string): Promise<string[]> {
  const present = new Set(await storage.list(outDir));
  return RUN_ENTRIES.filter((n) => present.has(n));
}

/**
 * Where a run starts. On --resume (`resumed` = the checkpoint's epoch and log record): finishes a
 * half-done checkpoint swap in last/ and best/, restores the engine, drops log lines past the
 * checkpoint and reads best/'s score. Otherwise removes the earlier run's files (the callers
 * reach this only with --force or an empty directory).
 */
export async function startRun(
  storage: Storage,
  outDir: string,
  earlier: readonly string[],
  resumed: { epoch: number; record: EpochRecord } | null,
  restore: () => Promise<void>,
): Promise<{ firstEpoch: number; bestScore: number }> {
  if (!resumed) {
    for (const name of earlier) await storage.remove(joinPath(outDir, name));
    return { firstEpoch: 1, bestScore: Number.NEGATIVE_INFINITY };
  }
  for (const dir of [lastDir(outDir), bestDir(outDir)]) await settleDir(storage, dir);
  await restore();
  await trimLog(storage, outDir, resumed.epoch, resumed.record);
  return { firstEpoch: resumed.epoch + 1, bestScore: await bestScoreOf(storage, outDir) };
}

/** The validation score of best/ (only its state.json is read), or -Infinity without one. */
export async function bestScoreOf(storage: Storage, outDir: string): Promise<number> {
  const dir = await committedDir(storage, bestDir(outDir));
  const text = dir === null ? null : await readText(storage, joinPath(dir, STATE_FILE));
  const score = text === null ? undefined : JSON.parse(text).state?.record?.score;
  return typeof score === 'number' ? score : Number.NEGATIVE_INFINITY;
}

/** Whether two fingerprints name the same bars (their sources' names may differ). */
export function sameData(was: DataFingerprint, now: DataFingerprint): boolean {
  return (
    was.bars === now.bars &&
    was.firstTimestamp === now.firstTimestamp &&
    was.lastTimestamp === now.lastTimestamp &&
    was.closeSum === now.closeSum
  );
}

/** Refuses to continue a checkpoint on bars other than those it trained on. */
export function checkSameData(was: DataFingerprint, now: DataFingerprint, where: string): void {
  if (!sameData(was, now)) {
    throw new RunError(
      `the checkpoint in ${where} was trained on ${was.source} (${was.bars} bars), which differs from ` +
        `${now.source} (${now.bars} bars); pass the same --data (and seed for the synthetic market)`,
    );
  }
}
