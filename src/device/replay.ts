/**
 * DeviceReplay: the DQN replay ring and its PER sum tree on a Backend (the device side of
 * src/learn/replay.ts + src/learn/per.ts; kernels replay_insert and per_sample).
 *
 *   insert(rollout)         collect_dqn's output buffers -> ring rows (n-step folded) + leaves at
 *                           the max priority + tree refresh: 1 + log2(leaves) dispatches
 *   sample(stepSlot)        Philox stratified sample + gather: 2 dispatches; batch buffers below
 *   updatePriorities(td)    |td| + eps -> leaves, running max, ancestors: 1 dispatch
 *
 * Sampling walks a sum tree rather than a prefix scan + binary search: a step changes at most
 * `batch` leaves, which the tree refreshes in one workgroup (log2(leaves) levels of <= batch
 * nodes), where a scan would redo all `capacity` prefix sums every step; the descent is the same
 * log2(leaves) reads per sample either way.
 *
 * Everything is allocated in the constructor; the calls only record dispatches (no host round
 * trip, no allocation). Head and size are tracked on the host: they depend only on launch sizes.
 * The train step of sample j is state[1] + stepSlot: setFirstStep uploads state[1] once per epoch,
 * so a captured epoch replays with fixed uniforms.
 *
 * Batch (what the DQN loss reads): batchF = [batch, REPLAY_F] rows in the layout of replay.ts,
 * then `batch` importance weights at element batch * REPLAY_F (normalised by their max); batchI =
 * `batch` actions, then the `batch` sampled ring rows at element batch.
 */
import type { Backend, DeviceBuffer, Dispatch } from '../backend/types.js';
import { DQN_OUTPUT } from '../kernels/collect_dqn.js';
import { type PerSampleArgs, perSampleDispatches, perUpdateDispatch } from '../kernels/per_sample.js';
import { type DqnRolloutSections, replayInsertDispatches } from '../kernels/replay_insert.js';
import { REPLAY_F } from '../learn/replay.js';

export interface DeviceReplayInit {
  capacity: number;
  batch: number;
  gamma: number;
  nStep: number;
  alpha: number;
  eps: number;
  betaStart: number;
  betaEnd: number;
  /** Train steps over which beta anneals (0: betaEnd at once). */
  betaSteps: number;
  key: readonly [number, number];
}

/** collect_dqn's out_f / out_i for `episodes` x `steps` samples. */
export interface DeviceDqnRollout {
  f: DeviceBuffer;
  i: DeviceBuffer;
  episodes: number;
  steps: number;
  sections: DqnRolloutSections;
}

/** The DQN sections of collect_dqn's output buffers for N x L samples. */
export function collectorDqnSections(count: number): DqnRolloutSections {
  const at = (name: string) => {
    const s = DQN_OUTPUT.sections.find((x) => x.name === name);
    if (!s) throw new Error(`collect_dqn output has no section ${name}`);
    return s.offset * count;
  };
  return {
    states: at('states'),
    nextStates: at('nextStates'),
    rewards: at('rewards'),
    actions: at('actions'),
    dones: at('dones'),
    truncateds: at('truncateds'),
  };
}

/** The replay's view of a DqnDeviceCollector's out_f / out_i (its deviceBuffers 8 and 9). */
export function collectorDqnRollout(
  outF: DeviceBuffer,
  outI: DeviceBuffer,
  episodes: number,
  steps: number,
): DeviceDqnRollout {
  return { f: outF, i: outI, episodes, steps, sections: collectorDqnSections(episodes * steps) };
}

/** Device bytes a replay of `capacity` rows with its tree takes. */
export function deviceReplayBytes(capacity: number): { ring: number; total: number } {
  let leaves = 1;
  while (leaves < capacity) leaves *= 2;
  const ring = 4 * capacity * REPLAY_F;
  return { ring, total: ring + 4 * capacity + 8 * leaves };
}

/** Throws one clear error when the ring cannot live on this backend. */
function checkFits(backend: Backend, capacity: number): void {
  const { ring, total } = deviceReplayBytes(capacity);
  const lim = backend.info.limits;
  const fix = 'lower dqn.replayCapacity';
  const binding = Number(lim.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY);
  const buffer = Number(lim.maxBufferSize ?? Number.POSITIVE_INFINITY);
  if (ring > Math.min(binding, buffer)) {
    throw new Error(
      `dqn.replayCapacity ${capacity}: the replay ring takes ${ring} bytes, over this device's largest ` +
        `storage buffer (${Math.min(binding, buffer)} bytes); ${fix}`,
    );
  }
  const freeMiB = Number(lim.freeMemoryMiB ?? lim.memoryMiB ?? Number.POSITIVE_INFINITY);
  if (total > 0.8 * freeMiB * 2 ** 20) {
    throw new Error(
      `dqn.replayCapacity ${capacity}: replay + PER tree take ${(total / 2 ** 30).toFixed(2)} GiB, over 80% ` +
        `of the device's ${(freeMiB / 1024).toFixed(1)} GiB free; ${fix}`,
    );
  }
}

/** Host copy of a DeviceReplay (the replay.ts + per.ts state of a DqnSnapshot). */
export interface DeviceReplayState {
  f: Float32Array;
  i: Int32Array;
  tree: Float32Array;
  maxPriority: number;
  head: number;
  size: number;
}

export class DeviceReplay {
  readonly capacity: number;
  readonly batch: number;
  readonly leaves: number;
  readonly ringF: DeviceBuffer;
  readonly ringI: DeviceBuffer;
  readonly tree: DeviceBuffer;
  /** [0] max priority (f32 bits), [1] first train step of the recorded steps. */
  readonly state: DeviceBuffer;
  readonly batchF: DeviceBuffer;
  readonly batchI: DeviceBuffer;
  /** Next ring row written and rows filled (host-tracked). */
  head = 0;
  size = 0;
  private readonly init: DeviceReplayInit;

  constructor(
    private readonly backend: Backend,
    init: DeviceReplayInit,
  ) {
    const { capacity, batch, nStep } = init;
    if (!Number.isInteger(capacity) || capacity < 1 || capacity >= 2 ** 31)
      throw new Error(`dqn.replayCapacity ${capacity} must be an integer in [1, 2^31)`);
    if (!Number.isInteger(batch) || batch < 1) throw new Error(`dqn.batch ${batch} must be an integer >= 1`);
    if (!Number.isInteger(nStep) || nStep < 1) throw new Error(`dqn.nStep ${nStep} must be an integer >= 1`);
    checkFits(backend, capacity);
    this.init = init;
    this.capacity = capacity;
    this.batch = batch;
    let leaves = 1;
    while (leaves < capacity) leaves *= 2;
    this.leaves = leaves;
    this.ringF = backend.createBuffer(4 * capacity * REPLAY_F, 'replay.ringF');
    this.ringI = backend.createBuffer(4 * capacity, 'replay.ringI');
    this.tree = backend.createBuffer(8 * leaves, 'replay.tree');
    this.state = backend.createBuffer(16, 'replay.state');
    this.batchF = backend.createBuffer(4 * batch * (REPLAY_F + 1), 'replay.batchF');
    this.batchI = backend.createBuffer(8 * batch, 'replay.batchI');
    backend.upload(this.tree, new Float32Array(2 * leaves));
    backend.upload(this.state, Uint32Array.of(new Uint32Array(Float32Array.of(1).buffer)[0], 0, 0, 0));
  }

  /** Sets the train step that stepSlot 0 samples (state[1]). */
  setFirstStep(step: number): void {
    this.backend.upload(this.state, Uint32Array.of(step >>> 0), 4);
  }

  /** Dispatches writing one collect_dqn launch into the ring; advances head and size. */
  insert(rollout: DeviceDqnRollout): Dispatch[] {
    const out = replayInsertDispatches({
      rolloutF: rollout.f,
      rolloutI: rollout.i,
      ringF: this.ringF,
      ringI: this.ringI,
      tree: this.tree,
      state: this.state,
      sections: rollout.sections,
      episodes: rollout.episodes,
      steps: rollout.steps,
      capacity: this.capacity,
      head: this.head,
      leaves: this.leaves,
      gamma: this.init.gamma,
      nStep: this.init.nStep,
      alpha: this.init.alpha,
    });
    const total = rollout.episodes * rollout.steps;
    this.head = (this.head + total) % this.capacity;
    this.size = Math.min(this.capacity, this.size + total);
    return out;
  }

  private args(td: DeviceBuffer): PerSampleArgs {
    const i = this.init;
    return {
      ringF: this.ringF,
      ringI: this.ringI,
      tree: this.tree,
      state: this.state,
      batchF: this.batchF,
      batchI: this.batchI,
      td,
      batch: this.batch,
      leaves: this.leaves,
      key: i.key,
      betaSteps: i.betaSteps,
      betaStart: i.betaStart,
      betaEnd: i.betaEnd,
      alpha: i.alpha,
      eps: i.eps,
    };
  }

  /** Dispatches sampling train step state[1] + stepSlot into batchF / batchI. */
  sample(stepSlot: number): Dispatch[] {
    if (this.size < 1) throw new Error('replay: sampling from an empty replay');
    // td is not read by the sample phases; any buffer fills the binding.
    return perSampleDispatches(this.args(this.ringF), this.size, stepSlot);
  }

  /** Dispatch setting the last sample's priorities from `td` ([batch] f32 TD errors). */
  updatePriorities(td: DeviceBuffer): Dispatch[] {
    return [perUpdateDispatch(this.args(td))];
  }

  /**
   * Host copies of the ring, its actions, the sum tree and the max priority (a snapshot);
   * `withRing` false: the max priority only (empty ring, actions and tree).
   */
  async read(withRing = true): Promise<DeviceReplayState> {
    const b = this.backend;
    const none = async () => new ArrayBuffer(0);
    const [f, i, tree, state] = await Promise.all([
      withRing ? b.download(this.ringF) : none(),
      withRing ? b.download(this.ringI) : none(),
      withRing ? b.download(this.tree) : none(),
      b.download(this.state, 0, 4),
    ]);
    return {
      f: new Float32Array(f),
      i: new Int32Array(i),
      tree: new Float32Array(tree),
      maxPriority: new Float32Array(state)[0],
      head: this.head,
      size: this.size,
    };
  }

  /** Replaces the ring, actions, tree, max priority, head and size (a restore). */
  write(s: DeviceReplayState): void {
    const check = (what: string, got: number, want: number) => {
      if (got !== want)
        throw new Error(`replay: the snapshot's ${what} has ${got} values, this replay needs ${want}`);
    };
    check('ring', s.f.length, this.capacity * REPLAY_F);
    check('actions', s.i.length, this.capacity);
    check('PER tree', s.tree.length, 2 * this.leaves);
    const whole = (x: number, hi: number) => Number.isInteger(x) && x >= 0 && x <= hi;
    if (!whole(s.size, this.capacity) || !whole(s.head, this.capacity - 1))
      throw new Error(
        `replay: the snapshot's head ${s.head} / size ${s.size} do not fit a capacity of ${this.capacity}`,
      );
    if (!(s.maxPriority > 0))
      throw new Error(`replay: the snapshot's max priority ${s.maxPriority} must be > 0`);
    const b = this.backend;
    b.upload(this.ringF, s.f);
    b.upload(this.ringI, s.i);
    b.upload(this.tree, s.tree);
    b.upload(this.state, Float32Array.of(s.maxPriority));
    this.head = s.head;
    this.size = s.size;
  }

  destroy(): void {
    for (const b of [this.ringF, this.ringI, this.tree, this.state, this.batchF, this.batchI])
      this.backend.destroyBuffer(b);
  }
}
