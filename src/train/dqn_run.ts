/**
 * A DQN-family training run (`--algo dqn|c51|iqn`): data and splits, the engine, then the loop of
 * src/algo/dqn.ts. Only the CPU engine exists so far: `--backend webgpu|cuda` is refused with
 * one line, `auto` takes the CPU. Resume is not wired for these runs yet (their checkpoints
 * already hold the replay and the PER tree it needs).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { trainDqn } from '../algo/dqn.js';
import { checkpointDir } from './checkpoint.js';
import { createCpuDqnEngine } from './cpu_dqn_engine.js';
import { prepareData, RunError, type RunOptions, type RunResult } from './run.js';
import { logPath } from './runlog.js';

export async function runDqnTraining(opts: RunOptions): Promise<RunResult> {
  const { cfg } = opts;
  const { algo, backend } = cfg.train;
  if (backend === 'webgpu' || backend === 'cuda') {
    throw new RunError(
      `--algo ${algo} --backend ${backend}: the DQN-family learner on the device is not built yet; use --backend cpu`,
    );
  }
  if (opts.resume) {
    throw new RunError(`--resume of --algo ${algo} runs is not built yet; start a new run without --resume`);
  }
  if (backend === 'auto') opts.onInfo?.(`backend: cpu (the ${algo} learner runs on the CPU only so far)`);
  const outDir = cfg.train.outDir;
  const data = await prepareData(cfg, opts.dataFile);
  let engine: ReturnType<typeof createCpuDqnEngine>;
  try {
    engine = createCpuDqnEngine(cfg, data.market, data.splits.train);
  } catch (err) {
    throw new RunError((err as Error).message);
  }
  try {
    rmSync(checkpointDir(outDir), { recursive: true, force: true });
    rmSync(logPath(outDir), { force: true });
    mkdirSync(outDir, { recursive: true });
    const records = await trainDqn({
      cfg,
      market: data.market,
      splits: data.splits,
      engine,
      outDir,
      barsPerYear: data.barsPerYear,
      data: data.fingerprint,
      firstEpoch: 1,
      onPhase: opts.onPhase,
      onEpoch: opts.onEpoch,
    });
    return { records, backend: 'cpu', outDir };
  } finally {
    engine.destroy();
  }
}
