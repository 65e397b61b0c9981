/**
 * What a PPO checkpoint holds (docs/TRAINING.md) and how a snapshot maps onto its files:
 *   actor.safetensors, critic.safetensors, curiosity.safetensors   PyTorch-loadable parameters
 *   optimizer.safetensors   `<net>.exp_avg.<tensor>` / `<net>.exp_avg_sq.<tensor>` (PyTorch's
 *                           Adam state names), per layer like the parameters
 *   env.safetensors         `env.f` [N, 10]: the episodes' float buffer (src/env/state.ts)
 *   state.json              epoch, config, seed, backend, data fingerprint, Philox counters,
 *                           optimizer step counts, the episodes' integer buffers, the epoch's
 *                           log record; written last (src/train/checkpoint.ts)
 */
import type { Config } from '../config.js';
import type { PpoParams, PpoSnapshot } from '../engine/engine.js';
import { ENV_F, ENV_I } from '../env/state.js';
import { curiosityLayout, type NetLayout, ppoActorLayout, ppoCriticLayout } from '../nets/layout.js';
import { type NamedTensor, paramsToTensors, tensorsToParams } from '../nets/safetensors.js';
import {
  CheckpointError,
  groupOf,
  type LoadedCheckpoint,
  readCheckpoint,
  tensorOf,
  writeCheckpoint,
} from './checkpoint.js';
import type { EpochRecord } from './runlog.js';
import { joinPath, type Storage } from './storage.js';

/** Identifies the bars a run trained on, so a resume or backtest on other data is refused. */
export interface DataFingerprint {
  /** The data file, or `synthetic` for the built-in market. */
  source: string;
  bars: number;
  firstTimestamp: number;
  lastTimestamp: number;
  /** Sum of the f32 closes in f64: cheap, and any edit of the prices changes it. */
  closeSum: number;
}

export interface PpoCheckpointState {
  algo: 'ppo';
  /** Last finished epoch (1-based). */
  epoch: number;
  seed: number;
  backend: string;
  config: Config;
  data: DataFingerprint;
  /** Philox counters of the next epoch: collection step base and PPO update index. */
  rng: { stepBase: number; update: number };
  optimSteps: Record<keyof PpoParams, number>;
  env: { n: number; w: number; i: number[]; window: number[] };
  /** The log line of this epoch, re-appended if a crash lost it (runlog.trimLog). */
  record: EpochRecord;
}

const layouts: Record<keyof PpoParams, () => NetLayout> = {
  actor: ppoActorLayout,
  critic: ppoCriticLayout,
  curiosity: curiosityLayout,
};
const NETS = ['actor', 'critic', 'curiosity'] as const;

export async function savePpoCheckpoint(
  storage: Storage,
  dir: string,
  snap: PpoSnapshot,
  state: Omit<PpoCheckpointState, 'optimSteps' | 'env'>,
): Promise<void> {
  const groups: Record<string, NamedTensor[]> = {};
  const optimizer: NamedTensor[] = [];
  for (const net of NETS) {
    const layout = layouts[net]();
    groups[net] = paramsToTensors(layout, snap.params[net]);
    optimizer.push(
      ...paramsToTensors(layout, snap.optim[net].m, `${net}.exp_avg.`),
      ...paramsToTensors(layout, snap.optim[net].v, `${net}.exp_avg_sq.`),
    );
  }
  groups.optimizer = optimizer;
  const n = snap.env.i.length / ENV_I;
  groups.env = [{ name: 'env.f', shape: [n, ENV_F], data: snap.env.f }];
  const full: PpoCheckpointState = {
    ...state,
    optimSteps: {
      actor: snap.optim.actor.step,
      critic: snap.optim.critic.step,
      curiosity: snap.optim.curiosity.step,
    },
    env: { n, w: snap.env.window.length / n, i: Array.from(snap.env.i), window: Array.from(snap.env.window) },
  };
  await writeCheckpoint(storage, dir, groups, full, {
    algo: 'ppo',
    epoch: String(state.epoch),
    format: 'foxhunt',
  });
}

export interface PpoCheckpoint {
  state: PpoCheckpointState;
  /** What an engine restores from. */
  snapshot: PpoSnapshot;
}

/** Reads and verifies a PPO checkpoint. */
export async function loadPpoCheckpoint(storage: Storage, dir: string): Promise<PpoCheckpoint> {
  const ckpt: LoadedCheckpoint<PpoCheckpointState> = await readCheckpoint(storage, dir);
  const state = ckpt.state;
  if (state.algo !== 'ppo') {
    throw new CheckpointError(`${dir}: a ${state.algo} checkpoint, not ppo; use the matching --algo`);
  }
  const flat = (group: string, prefix: string, layout: NetLayout): Float32Array => {
    try {
      return tensorsToParams(
        layout,
        groupOf(ckpt, dir, group),
        joinPath(dir, `${group}.safetensors`),
        prefix,
      );
    } catch (err) {
      if (err instanceof CheckpointError) throw err;
      throw new CheckpointError((err as Error).message);
    }
  };
  const params = {} as PpoParams;
  const optim = {} as PpoSnapshot['optim'];
  for (const net of NETS) {
    const layout = layouts[net]();
    params[net] = flat(net, '', layout);
    optim[net] = {
      m: flat('optimizer', `${net}.exp_avg.`, layout),
      v: flat('optimizer', `${net}.exp_avg_sq.`, layout),
      step: state.optimSteps[net],
    };
  }
  const snapshot: PpoSnapshot = {
    params,
    optim,
    env: {
      f: tensorOf(ckpt, dir, 'env', 'env.f'),
      i: Int32Array.from(state.env.i),
      window: Int32Array.from(state.env.window),
    },
  };
  return { state, snapshot };
}
