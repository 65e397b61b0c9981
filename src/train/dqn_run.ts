/**
 * A DQN-family training run (`--algo dqn|c51|iqn`): data and splits, the engine, fresh start or
 * resume, then the loop of src/algo/dqn.ts. Only the CPU engine exists so far: `--backend
 * webgpu|cuda` is refused with one line, `auto` takes the CPU. A resume restores the replay and
 * the PER tree with the rest, so it continues bit for bit.
 */
import { trainDqn } from '../algo/dqn.js';
import { bestDir, lastDir } from './checkpoint.js';
import { createCpuDqnEngine } from './cpu_dqn_engine.js';
import type { DqnCheckpoint } from './dqn_checkpoint.js';
import type { DqnEngine } from './dqn_engine.js';
import {
  bestScoreOf,
  checkSameData,
  earlierRun,
  prepareData,
  RunError,
  type RunOptions,
  type RunResult,
} from './run.js';
import { trimLog } from './runlog.js';
import { joinPath, settleDir } from './storage.js';

export async function runDqnTraining(opts: RunOptions): Promise<RunResult> {
  const { cfg, storage } = opts;
  const { algo, backend } = cfg.train;
  if (backend === 'webgpu' || backend === 'cuda') {
    throw new RunError(
      `--algo ${algo} --backend ${backend}: the DQN-family learner on the device is not built yet; use --backend cpu`,
    );
  }
  const resume = opts.resume as DqnCheckpoint | null;
  const outDir = cfg.train.outDir;
  const earlier = resume ? [] : await earlierRun(storage, outDir);
  if (earlier.length && !opts.force) {
    throw new RunError(
      `${outDir} already holds a run (${earlier.join(', ')}); --resume continues it, --out DIR trains ` +
        'elsewhere, --force deletes it and starts again',
    );
  }
  if (backend === 'auto') opts.onInfo?.(`backend: cpu (the ${algo} learner runs on the CPU only so far)`);
  const data = await prepareData(cfg, opts.bars);
  if (resume) checkSameData(resume.state.data, data.fingerprint, outDir);
  let engine: DqnEngine;
  try {
    engine = createCpuDqnEngine(cfg, data.market, data.splits.train);
  } catch (err) {
    throw new RunError((err as Error).message);
  }
  try {
    let firstEpoch = 1;
    let bestScore = Number.NEGATIVE_INFINITY;
    if (resume) {
      for (const dir of [lastDir(outDir), bestDir(outDir)]) await settleDir(storage, dir);
      await engine.restore(resume.snapshot);
      await trimLog(storage, outDir, resume.state.epoch, resume.state.record);
      firstEpoch = resume.state.epoch + 1;
      bestScore = await bestScoreOf(storage, outDir);
    } else {
      for (const name of earlier) await storage.remove(joinPath(outDir, name));
    }
    const { records, summary } = await trainDqn({
      cfg,
      market: data.market,
      splits: data.splits,
      engine,
      storage,
      outDir,
      barsPerYear: data.barsPerYear,
      data: data.fingerprint,
      firstEpoch,
      bestScore,
      onPhase: opts.onPhase,
      onEpoch: opts.onEpoch,
      signal: opts.signal,
    });
    return { records, summary, backend: 'cpu', outDir };
  } finally {
    engine.destroy();
  }
}
