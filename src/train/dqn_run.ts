/**
 * A DQN-family training run (`--algo dqn|c51|iqn`): data and splits, the engine, fresh start or
 * resume, then the loop of src/train/dqn.ts. `--backend cpu` runs the CPU engine (the TS
 * references); `webgpu|cuda` run the device engine (src/engine/device_dqn.ts) for dqn, c51 and
 * iqn; `auto` takes CUDA, then hardware WebGPU, then the CPU. A resume restores the replay and the
 * PER tree with the rest, so it continues bit for bit on the backend that wrote it (both engines
 * write the same snapshot, so a checkpoint also resumes on the other, to float noise).
 */

import { chooseBackend, describeChoice } from '../backend/index.js';
import type { Backend } from '../backend/types.js';
import type { Config } from '../config.js';
import { createCpuDqnEngine } from '../engine/cpu_dqn.js';
import { createDeviceDqnEngine } from '../engine/device_dqn.js';
import type { DqnEngine } from '../engine/dqn_engine.js';
import { trainDqn } from './dqn.js';
import type { DqnCheckpoint } from './dqn_checkpoint.js';
import { loopRun, openRun, RunError, type RunOptions, type RunResult, startRun } from './run.js';

export async function runDqnTraining(opts: RunOptions): Promise<RunResult> {
  const { cfg, storage } = opts;
  const { backend } = cfg.train;
  const resume = opts.resume as DqnCheckpoint | null;
  const { outDir, earlier, data } = await openRun(opts);
  // Its BackendUnavailableError is a user error, as on the PPO path; the CPU engine needs no backend.
  const choice = await chooseBackend(backend, opts.backendOptions);
  for (const line of describeChoice(choice)) opts.onInfo?.(line);
  let device: Backend | null = choice.backend;
  if (device.kind === 'cpu') {
    device.destroy();
    device = null;
  }
  const kind = device?.kind ?? 'cpu';
  if (resume && resume.state.backend !== kind) {
    opts.onInfo?.(
      `resuming a ${resume.state.backend} checkpoint on ${kind}: it continues to float noise, not bit for bit`,
    );
  }
  let engine: DqnEngine;
  try {
    engine = device
      ? createDeviceDqnEngine(cfg, data.market, data.splits.train, device)
      : createCpuDqnEngine(cfg, data.market, data.splits.train);
  } catch (err) {
    device?.destroy();
    throw new RunError((err as Error).message);
  }
  try {
    const { firstEpoch, bestScore } = await startRun(
      storage,
      outDir,
      earlier,
      resume?.state ?? null,
      async () => {
        await engine.restore((resume as DqnCheckpoint).snapshot);
        if (resume?.state.replay.saved === false) {
          opts.onInfo?.(
            'this checkpoint has no replay (dqn.checkpointReplay false): the run continues from an empty replay, not exactly as it would have',
          );
        }
      },
    );
    const warning = noTrainStepWarning(cfg, firstEpoch, resume !== null);
    if (warning) opts.onInfo?.(warning);
    const { records, summary } = await trainDqn(loopRun(opts, data, engine, { firstEpoch, bestScore }));
    return { records, summary, backend: engine.backend, outDir };
  } finally {
    engine.destroy();
    device?.destroy();
  }
}

/**
 * A fresh run whose collections cannot fill a batch before its last epoch trains nothing: each
 * epoch adds at most rollout.episodes x rollout.steps rows to the replay, and a train step needs
 * dqn.batch of them. Null where some step can run (or on resume, whose replay size is not known here).
 */
export function noTrainStepWarning(cfg: Config, firstEpoch: number, resumed: boolean): string | null {
  if (resumed) return null;
  const { episodes, steps } = cfg.rollout;
  const epochs = cfg.train.epochs - firstEpoch + 1;
  const rows = Math.min(cfg.dqn.replayCapacity, epochs * episodes * steps);
  if (rows >= cfg.dqn.batch) return null;
  return (
    `warning: no train step will run: ${epochs} epoch${epochs === 1 ? '' : 's'} of ${episodes} x ${steps} ` +
    `steps put at most ${rows} rows in the replay, fewer than dqn.batch ${cfg.dqn.batch}; raise --epochs, ` +
    '--rollout.episodes or --rollout.steps, or lower --dqn.batch'
  );
}
