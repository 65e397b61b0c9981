/**
 * A training run from a resolved config: data (a file or the built-in synthetic market), splits,
 * backend and engine, fresh start or resume, then the algorithm's loop. The CLI and the tests
 * both come through here; nothing in this file prints.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { type Phase, trainPpo } from '../algo/ppo.js';
import { type Backend, type BackendKind, chooseBackend, describeChoice } from '../backend/index.js';
import { type Config, resolvePrecision } from '../config.js';
import { loadBars } from '../data/load.js';
import { buildMarket } from '../data/market.js';
import { makeSplits } from '../data/splits.js';
import { generateSynthetic } from '../data/synthetic.js';
import type { Bars, Market, Splits } from '../data/types.js';
import { createDevicePpoEngine } from '../learn/device_engine.js';
import { checkpointDir } from './checkpoint.js';
import { createCpuPpoEngine } from './cpu_ppo_engine.js';
import { runDqnTraining } from './dqn_run.js';
import type { PpoEngine } from './engine.js';
import { inferBarsPerYear } from './metrics.js';
import { type DataFingerprint, loadPpoCheckpoint, type PpoCheckpoint } from './ppo_checkpoint.js';
import { type EpochRecord, logPath, trimLog } from './runlog.js';

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

/** Loads `dataFile` (or generates the synthetic market of cfg.data.synthBars bars, seed cfg.train.seed). */
export async function prepareData(cfg: Config, dataFile?: string): Promise<PreparedData> {
  let bars: Bars;
  if (dataFile) bars = (await loadBars(dataFile)).bars;
  else bars = generateSynthetic({ bars: cfg.data.synthBars, seed: cfg.train.seed });
  const market = buildMarket(bars, cfg);
  let closeSum = 0;
  for (let t = 0; t < market.n; t++) closeSum += market.ohlc[t * 4 + 3];
  return {
    market,
    splits: makeSplits(market.n, cfg),
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
export function resumeConfig(
  outDir: string,
  override: (base: Config) => Config,
): { cfg: Config; checkpoint: PpoCheckpoint } {
  const checkpoint = loadPpoCheckpoint(checkpointDir(outDir));
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
  if (state.epoch >= cfg.train.epochs) {
    throw new RunError(
      `the checkpoint in ${outDir} already finished epoch ${state.epoch} of ${cfg.train.epochs}; ` +
        'raise --epochs to train further',
    );
  }
  return { cfg, checkpoint };
}

export interface RunOptions {
  cfg: Config;
  dataFile?: string;
  /** The checkpoint to continue from (from resumeConfig), or null for a fresh run. */
  resume: PpoCheckpoint | null;
  onInfo?: (line: string) => void;
  onPhase?: (epoch: number, phase: Phase) => void;
  onEpoch?: (record: EpochRecord) => void;
}

export interface RunResult {
  records: EpochRecord[];
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
  const outDir = cfg.train.outDir;
  const data = await prepareData(cfg, opts.dataFile);
  if (opts.resume) checkSameData(opts.resume.state.data, data.fingerprint, outDir);

  const choice = await chooseBackend(cfg.train.backend);
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
      let firstEpoch = 1;
      if (opts.resume) {
        const { snapshot, state } = opts.resume;
        await engine.restore(snapshot);
        trimLog(outDir, state.epoch, state.record);
        firstEpoch = state.epoch + 1;
      } else {
        // A fresh run replaces whatever an earlier run left in this directory.
        rmSync(checkpointDir(outDir), { recursive: true, force: true });
        rmSync(logPath(outDir), { force: true });
        mkdirSync(outDir, { recursive: true });
      }
      const records = await trainPpo({
        cfg,
        market: data.market,
        splits: data.splits,
        engine,
        outDir,
        barsPerYear: data.barsPerYear,
        data: data.fingerprint,
        firstEpoch,
        onPhase: opts.onPhase,
        onEpoch: opts.onEpoch,
      });
      return { records, backend: backend.kind, outDir };
    } finally {
      engine.destroy();
    }
  } finally {
    backend.destroy();
  }
}

/** Refuses to continue or evaluate a checkpoint on bars other than those it trained on. */
export function checkSameData(was: DataFingerprint, now: DataFingerprint, where: string): void {
  const same =
    was.bars === now.bars &&
    was.firstTimestamp === now.firstTimestamp &&
    was.lastTimestamp === now.lastTimestamp &&
    was.closeSum === now.closeSum;
  if (!same) {
    throw new RunError(
      `the checkpoint in ${where} was trained on ${was.source} (${was.bars} bars), which differs from ` +
        `${now.source} (${now.bars} bars); pass the same --data (and seed for the synthetic market)`,
    );
  }
}
