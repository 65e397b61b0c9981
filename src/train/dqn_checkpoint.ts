/**
 * What a DQN-family checkpoint holds and how a snapshot maps onto its files:
 *   online.safetensors, target.safetensors, curiosity.safetensors   PyTorch-loadable parameters
 *                           (the dueling layout's names: shared_layers.0.weight, ...)
 *   optimizer.safetensors   `online.exp_avg.<tensor>`, `online.exp_avg_sq.<tensor>`, the same for
 *                           curiosity (AdamW)
 *   env.safetensors         `env.f` [N, 10]
 *   replay.safetensors      `replay.rows` [rows, 110] (state, bootstrap state, return,
 *                           discount), `replay.actions` [rows] (as f32: exact below 2^24),
 *                           `per.tree` [2 * leaves]: the sum tree; rows = the ring's size while
 *                           it has not wrapped (the rest is zeros), else its capacity
 *   state.json              epoch, config, seed, backend, data fingerprint, train steps, Adam
 *                           steps, the episodes' integer buffers, replay head and size, the max
 *                           priority, the epoch's log record; written last (checkpoint.ts)
 * With the replay and the tree inside, `--resume` continues bit for bit (test/unit/train/dqn.test.ts).
 * With `dqn.checkpointReplay false` replay.safetensors is not written (state.json says
 * `replay.saved: false`): a resume starts from an empty replay, not exactly.
 */
import type { Config } from '../config.js';
import type { DqnSnapshot } from '../engine/dqn_engine.js';
import { ENV_F, ENV_I } from '../env/state.js';
import { dqnGreedyPolicy, type Policy, ppoGreedyPolicy } from '../eval/policies.js';
import { c51Support, headOf } from '../learn/dqn_update.js';
import { createPer } from '../learn/per.js';
import { createReplay, REPLAY_F } from '../learn/replay.js';
import { curiosityLayout, duelingLayout, type NetLayout } from '../nets/layout.js';
import { type NamedTensor, paramsToTensors, tensorsToParams } from '../nets/safetensors.js';
import {
  CheckpointError,
  groupOf,
  type LoadedCheckpoint,
  readCheckpoint,
  STATE_FILE,
  tensorOf,
  writeCheckpoint,
} from './checkpoint.js';
import { type DataFingerprint, loadPpoCheckpoint, type PpoCheckpointState } from './ppo_checkpoint.js';
import type { EpochRecord } from './runlog.js';
import { joinPath, readText, type Storage } from './storage.js';

export interface DqnCheckpointState {
  algo: 'dqn' | 'c51' | 'iqn';
  epoch: number;
  seed: number;
  backend: string;
  config: Config;
  data: DataFingerprint;
  trainSteps: number;
  optimSteps: { online: number; curiosity: number };
  env: { n: number; w: number; i: number[]; window: number[] };
  /** `saved: false` when the replay was left out (dqn.checkpointReplay false); absent means saved. */
  replay: { head: number; size: number; maxPriority: number; saved?: boolean };
  record: EpochRecord;
}

const qLayout = (cfg: Config): NetLayout =>
  duelingLayout(headOf(cfg.train.algo), cfg.dqn.atoms, cfg.dqn.iqnEmbed);

export async function saveDqnCheckpoint(
  storage: Storage,
  dir: string,
  snap: DqnSnapshot,
  state: Omit<DqnCheckpointState, 'optimSteps' | 'env' | 'replay' | 'trainSteps'>,
): Promise<void> {
  const q = qLayout(state.config);
  const c = curiosityLayout();
  const n = snap.env.i.length / ENV_I;
  const capacity = snap.replay.i.length;
  const groups: Record<string, NamedTensor[]> = {
    online: paramsToTensors(q, snap.params.online),
    target: paramsToTensors(q, snap.params.target),
    curiosity: paramsToTensors(c, snap.params.curiosity),
    optimizer: [
      ...paramsToTensors(q, snap.optim.online.m, 'online.exp_avg.'),
      ...paramsToTensors(q, snap.optim.online.v, 'online.exp_avg_sq.'),
      ...paramsToTensors(c, snap.optim.curiosity.m, 'curiosity.exp_avg.'),
      ...paramsToTensors(c, snap.optim.curiosity.v, 'curiosity.exp_avg_sq.'),
    ],
    env: [{ name: 'env.f', shape: [n, ENV_F], data: snap.env.f }],
  };
  const saved = state.config.dqn.checkpointReplay;
  if (saved) {
    // A ring that has not wrapped yet holds rows 0 .. size - 1 and zeros after them: only those
    // rows are written (a run's first epochs, and any run shorter than the ring).
    const rows = Math.min(snap.replay.size, capacity);
    groups.replay = [
      { name: 'replay.rows', shape: [rows, REPLAY_F], data: snap.replay.f.subarray(0, rows * REPLAY_F) },
      { name: 'replay.actions', shape: [rows], data: Float32Array.from(snap.replay.i.subarray(0, rows)) },
      { name: 'per.tree', shape: [snap.per.tree.length], data: snap.per.tree },
    ];
  }
  const full: DqnCheckpointState = {
    ...state,
    trainSteps: snap.trainSteps,
    optimSteps: { online: snap.optim.online.step, curiosity: snap.optim.curiosity.step },
    env: { n, w: snap.env.window.length / n, i: Array.from(snap.env.i), window: Array.from(snap.env.window) },
    replay: saved
      ? { head: snap.replay.head, size: snap.replay.size, maxPriority: snap.per.maxPriority }
      : { head: 0, size: 0, maxPriority: 1, saved: false },
  };
  await writeCheckpoint(storage, dir, groups, full, {
    algo: state.algo,
    epoch: String(state.epoch),
    format: 'foxhunt',
  });
}

/** Reads and verifies a DQN-family checkpoint into its state and an engine snapshot. */
export interface DqnCheckpoint {
  state: DqnCheckpointState;
  snapshot: DqnSnapshot;
}

export async function loadDqnCheckpoint(storage: Storage, dir: string): Promise<DqnCheckpoint> {
  const ckpt: LoadedCheckpoint<DqnCheckpointState> = await readCheckpoint(storage, dir);
  const state = ckpt.state;
  if (!['dqn', 'c51', 'iqn'].includes(state.algo)) {
    throw new CheckpointError(`${dir}: a ${state.algo} checkpoint, not a DQN-family one`);
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
  const q = qLayout(state.config);
  const c = curiosityLayout();
  const snapshot: DqnSnapshot = {
    params: {
      online: flat('online', '', q),
      target: flat('target', '', q),
      curiosity: flat('curiosity', '', c),
    },
    optim: {
      online: {
        m: flat('optimizer', 'online.exp_avg.', q),
        v: flat('optimizer', 'online.exp_avg_sq.', q),
        step: state.optimSteps.online,
      },
      curiosity: {
        m: flat('optimizer', 'curiosity.exp_avg.', c),
        v: flat('optimizer', 'curiosity.exp_avg_sq.', c),
        step: state.optimSteps.curiosity,
      },
    },
    env: {
      f: tensorOf(ckpt, dir, 'env', 'env.f'),
      i: Int32Array.from(state.env.i),
      window: Int32Array.from(state.env.window),
    },
    trainSteps: state.trainSteps,
    ...(state.replay.saved === false ? emptyReplay(state.config) : savedReplay()),
  };
  return { state, snapshot };

  function savedReplay(): Pick<DqnSnapshot, 'replay' | 'per'> {
    // An unwrapped ring was saved up to its size (saveDqnCheckpoint): padded back with the zeros
    // it held, to the capacity of the run that wrote it.
    const capacity = state.config.dqn.replayCapacity;
    const rows = tensorOf(ckpt, dir, 'replay', 'replay.rows');
    const actions = tensorOf(ckpt, dir, 'replay', 'replay.actions');
    const kept = actions.length;
    const { head, size } = state.replay;
    if (rows.length !== kept * REPLAY_F || (kept !== capacity && (kept !== size || head !== size % capacity)))
      throw new CheckpointError(
        `${dir}: replay.safetensors holds ${kept} actions and ${rows.length / REPLAY_F} rows, not the ring's ${capacity} nor its ${size} filled ones (head ${head})`,
      );
    const f = new Float32Array(capacity * REPLAY_F);
    f.set(rows);
    const i = new Int32Array(capacity);
    i.set(actions);
    return {
      replay: { f, i, head, size },
      per: { tree: tensorOf(ckpt, dir, 'replay', 'per.tree'), maxPriority: state.replay.maxPriority },
    };
  }
}

/** An empty replay and PER tree of the configured capacity (a checkpoint written without them). */
function emptyReplay(cfg: Config): Pick<DqnSnapshot, 'replay' | 'per'> {
  const q = cfg.dqn;
  const replay = createReplay(q.replayCapacity);
  const per = createPer(q.replayCapacity, q.priorityAlpha, q.priorityEps);
  return {
    replay: { f: replay.f, i: replay.i, head: 0, size: 0 },
    per: { tree: per.tree, maxPriority: per.maxPriority },
  };
}

/** The algorithm named by the checkpoint's state.json ('ppo' when it cannot be read: the PPO loader then says why). */
export async function checkpointAlgo(storage: Storage, dir: string): Promise<string> {
  try {
    const text = await readText(storage, joinPath(dir, STATE_FILE));
    return (text !== null && JSON.parse(text).state?.algo) || 'ppo';
  } catch {
    return 'ppo';
  }
}

/** A DQN-family checkpoint's state and the greedy policy of its online net. */
export async function dqnCheckpointPolicy(
  storage: Storage,
  dir: string,
): Promise<{ state: DqnCheckpointState; policy: Policy }> {
  const { state, snapshot } = await loadDqnCheckpoint(storage, dir);
  const q = state.config.dqn;
  const policy = dqnGreedyPolicy(
    headOf(state.algo),
    qLayout(state.config),
    snapshot.params.online,
    c51Support(q),
    q.iqnActTau,
  );
  return { state, policy };
}

/** Any checkpoint's state and greedy policy: PPO's actor, or a DQN-family online net (by its state.json). */
export async function checkpointPolicy(
  storage: Storage,
  dir: string,
): Promise<{ state: PpoCheckpointState | DqnCheckpointState; policy: Policy }> {
  if ((await checkpointAlgo(storage, dir)) !== 'ppo') return dqnCheckpointPolicy(storage, dir);
  const { state, snapshot } = await loadPpoCheckpoint(storage, dir);
  return { state, policy: ppoGreedyPolicy(snapshot.params.actor) };
}
