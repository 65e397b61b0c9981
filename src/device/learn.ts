/**
 * The PPO learner on a device (SPEC 9): `ppoUpdateReference` (ppo_update.ts) as kernels, with the
 * actor and critic params, their gradients and Adam moments resident on the backend. One update
 * encodes all updateEpochs x floor(count / minibatch) minibatch steps up front and submits them
 * one epoch at a time — on CUDA as one captured graph per epoch, captured once and replayed every
 * update; elsewhere one submission per epoch, so the device runs an epoch while the host encodes
 * the next — with no readback inside; the loss statistics accumulate in a device buffer read back
 * once.
 *
 * One minibatch step is 13 launches (15 with `chain: false`; 11 with the delta chain, the default on
 * CUDA: mlp_delta_chain + 3 mlp_backward instead of 6 mlp_backward; 10 with the delta chain and
 * `fuseLoss`, the default with it: the delta chain launch computes the loss head, no ppo_loss):
 *   ppo_gather                 1  shuffled rows of the rollout -> input rows + per-sample scalars
 *   mlp_forward                3  stage s: actor layer s and critic layer s together
 *   mlp_chain_forward          1  the critic's layers 3..5, which no actor layer pairs with (with
 *                                 `chain: false`, 3 more mlp_forward launches)
 *   ppo_loss                   1  log-softmax, ratio, clipped surrogate, entropy, value loss;
 *                                 advantage normalisation; output deltas; per-workgroup loss sums
 *   mlp_backward               6  stage s: dW, db, dX of the actor's and critic's layer s from the top
 *   adam_step                  1  global norm (from mlp_backward's per-tile partials), clip, Adam;
 *                                 folds ppo_loss's sums into the statistics
 * Everything that changes between updates is data, not launch arguments: the first shuffle epoch
 * (update * updateEpochs) and each step's Adam bias corrections (computed on the host in f64, as
 * optim.ts) sit in a small schedule buffer uploaded before the run. So the launches of an update
 * never change and CUDA graphs of them replay as they are (a graph per epoch keeps each one at
 * 13 x minibatches nodes: 1,625 at the defaults, 13,000 at N = 1024).
 *
 * Params layout: the actor's flat buffer then the critic's (the collectors' nets buffer starts
 * the same way, so `copyParamsTo` refreshes a collector with one device copy).
 */

import { capsOf } from '../backend/caps.js';
import { tuningFor } from '../backend/tuning.js';
import type { Backend, DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import type { PpoConfig, Precision } from '../config.js';
import { type AdamHyper, adamBiasCorrection, adamStepDispatch } from '../kernels/adam_step.js';
import { deltaChainLossGroups } from '../kernels/mlp_delta_chain.js';
import { type PpoGatherArgs, ppoGatherDispatch, type RolloutSections } from '../kernels/ppo_gather.js';
import { LOSS_PARTS, lossGroups, ppoLossDispatch, STAT, STAT_COUNT } from '../kernels/ppo_loss.js';
import type { PpoUpdateStats } from '../learn/ppo_update.js';
import type { NetLayout } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import { canCapture } from './graphs.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwHandoffFor,
  dwSplitBudgetFor,
  forwardDispatches,
  kSplitFor,
  type MlpBuffers,
  type MlpPlan,
  planDeltaChain,
  planMlps,
  ppoGatherRowsFor,
} from './learn_mlp.js';

/** A PPO rollout on the device: f32 and i32 buffers with the PPO fields at element offsets. */
export interface DevicePpoRollout {
  f: DeviceBuffer;
  i: DeviceBuffer;
  /** Samples (N * L). */
  count: number;
  sections: RolloutSections;
}

/** Adam moments and step count of one network, host copies. */
export interface HostAdam {
  m: Float32Array;
  v: Float32Array;
  step: number;
}

/** The CUDA backend's graph extension (src/backend/cuda/index.ts), found by duck typing. */
export interface DevicePpoLearnerInit {
  backend: Backend;
  actorLayout: NetLayout;
  criticLayout: NetLayout;
  actor: Float32Array;
  critic: Float32Array;
  cfg: PpoConfig;
  /** The run seed (shuffle key). */
  seed: number;
  /** Replay updates as CUDA graphs where the backend can (default true). */
  graphs?: boolean;
  /**
   * Split the backward launches' dW tiles over batch slices where the backend supports it (CUDA,
   * WebGPU; default true). false keeps one workgroup per dW tile (the earlier kernel, for comparison);
   * a number is the workgroup budget per launch instead of the backend's (dwSplitBudgetFor);
   * 'most' takes the most slices within the backend's budget (WebGPU's first plan; CUDA's default).
   */
  dwSplit?: boolean | number | 'most';
  /**
   * ppo_gather samples per workgroup (default LearnTuning.gatherRows: 4 on CUDA and WebGPU, 64 on the
   * CPU); 64 is the earlier 8-workgroup gather, for comparison.
   */
  gatherRows?: number;
  /**
   * Launch the update's kernels with Programmatic Dependent Launch where the backend can (CUDA on
   * sm_90+; default true): each may start while the previous one finishes and waits in-kernel
   * (LEARN_GRID_DEP_WAIT), which saves the launch gap between dependent kernels. Same results;
   * false launches plainly, for comparison. 'early' (CUDA) also triggers the next kernel's launch
   * as soon as every block of the current one is resident (LEARN_PDL_TRIGGER).
   */
  pdl?: boolean | 'early';
  /**
   * Run the critic's forward tail that no actor layer pairs with (value_layer_3 .. value_output) as
   * one mlp_chain_forward launch (default true; a number: its rows per workgroup, 2, 4, 8 or 16,
   * default CHAIN_ROWS_STAGED on CUDA's staged build, CHAIN_ROWS elsewhere); false: one
   * mlp_forward launch per layer.
   */
  chain?: boolean | number;
  /**
   * Arithmetic of the matmul launches (mlp_forward, mlp_backward): 'exact' (default) f32, the parity
   * mode; 'tf32' (CUDA only) their TF32 tensor-core build, operands rounded to 10-bit mantissas
   * (|err| <= ~2^-10 * sum |a| |b| per output), the loss head and Adam still f32.
   */
  precision?: Precision;
  /**
   * The backward's input deltas of the networks' top layers in one mlp_delta_chain launch, then one
   * mlp_backward launch for every layer whose deltas are known (planDeltaChain: at the PPO networks
   * 4 launches instead of 6, 11 per step). Default: on with CUDA (the staged build), off elsewhere;
   * a number: rows per workgroup.
   */
  deltaChain?: boolean | number;
  /**
   * With a delta chain (deltaChain): compute the PPO loss head inside the mlp_delta_chain launch
   * (its loss mode) instead of a ppo_loss launch of its own: 10 launches per step instead of 11
   * (default true; without a delta chain, or when the chain does not start at both networks'
   * output layers, the ppo_loss launch stays). The gradients and params are the same bits on the
   * CPU; the loss statistics group their sums by the chain's workgroups (ceil(batch / rows)), so
   * they may differ in their last bits.
   */
  fuseLoss?: boolean;
}

/**
 * The learners' kernels whose CUDA source begins with LEARN_GRID_DEP_WAIT, so PDL is safe: PPO's
 * update and the DQN family's train step.
 */
const PDL_KERNELS: ReadonlySet<string> = new Set([
  'ppo_gather',
  'mlp_forward',
  'mlp_chain_forward',
  'mlp_backward',
  'mlp_delta_chain',
  'ppo_loss',
  'adam_step',
  'dqn_inputs',
  'dueling_combine',
  'dqn_loss',
  'delta_sum',
  'dqn_target_update',
  'iqn_taus',
  'iqn_mix',
  'iqn_loss',
]);
/**
 * Kernels that, on CUDA, trigger the next PDL launch as soon as all their blocks are past the wait
 * (LEARN_PDL_TRIGGER) in the default mode too, because the kernel after them works before its own
 * wait: adam_step -> ppo_gather, which loads its rollout rows (nothing in an update writes them)
 * while Adam runs and only stores after it.
 */
const EARLY_TRIGGER = new Set(['adam_step']);
const pdlSpecs = {
  wait: new WeakMap<KernelSpec, KernelSpec>(),
  early: new WeakMap<KernelSpec, KernelSpec>(),
};

/**
 * `d` launched with PDL (one spec object per kernel spec and mode, so backends cache it once);
 * `early` adds the CUDA-only LEARN_PDL_TRIGGER constant (WGSL would reject an unknown override).
 */
export function withPdl(d: Dispatch, early = false): Dispatch {
  if (!PDL_KERNELS.has(d.kernel.name)) return d;
  const cache = early ? pdlSpecs.early : pdlSpecs.wait;
  let kernel = cache.get(d.kernel);
  if (kernel === undefined) {
    kernel = early
      ? { ...d.kernel, pdl: true, constants: { ...d.kernel.constants, LEARN_PDL_TRIGGER: 1 } }
      : { ...d.kernel, pdl: true };
    cache.set(d.kernel, kernel);
  }
  return { ...d, kernel };
}

function sameRollout(a: DevicePpoRollout, b: DevicePpoRollout): boolean {
  const keys = Object.keys(a.sections) as (keyof RolloutSections)[];
  return (
    a.f === b.f && a.i === b.i && a.count === b.count && keys.every((k) => a.sections[k] === b.sections[k])
  );
}

export class DevicePpoLearner {
  readonly backend: Backend;
  readonly plan: MlpPlan;
  readonly cfg: PpoConfig;
  /** Adam steps taken so far (both networks share it, as in ppoUpdateReference). */
  step = 0;
  readonly buffers: MlpBuffers & { moments: DeviceBuffer; mb: DeviceBuffer; stats: DeviceBuffer };
  private sched: DeviceBuffer | null = null;
  private schedFloats = 0;
  private readonly key: [number, number];
  private readonly hyper: AdamHyper;
  private readonly graphs: boolean;
  /** DevicePpoLearnerInit.pdl. */
  readonly pdl: boolean | 'early';
  /** DevicePpoLearnerInit.precision. */
  readonly precision: Precision;
  /** ppo_gather samples per workgroup (DevicePpoLearnerInit.gatherRows). */
  private readonly gatherRows: number;
  /** The loss head runs inside the delta chain launch (DevicePpoLearnerInit.fuseLoss, when it applies). */
  readonly fuseLoss: boolean;
  private cached: {
    rollout: DevicePpoRollout;
    dispatches: Dispatch[];
    /** One captured graph per epoch (CUDA). */
    graphs?: { replay(): void; destroy(): void }[];
  } | null = null;

  constructor(init: DevicePpoLearnerInit) {
    const { backend, actorLayout, criticLayout, cfg } = init;
    const outputs = [actorLayout, criticLayout].map((l) => l.layers[l.layers.length - 1]);
    if (outputs.some((l) => l.act !== 'none')) {
      throw new Error('device ppo learner: the actor and critic output layers must be linear');
    }
    if (outputs[1].out !== 1)
      throw new Error(`device ppo learner: the critic outputs ${outputs[1].out} values, not 1`);
    this.precision = init.precision ?? 'exact';
    if (this.precision !== 'exact' && this.precision !== 'tf32') {
      throw new Error(
        `device ppo learner: precision must be 'exact' or 'tf32', got '${String(this.precision)}'`,
      );
    }
    if (this.precision === 'tf32' && !capsOf(backend).features.tf32TensorCores) {
      throw new Error(
        `device ppo learner: precision 'tf32' (tensor cores) needs the CUDA backend, not ${backend.kind}; use precision 'exact'`,
      );
    }
    this.backend = backend;
    this.cfg = cfg;
    this.gatherRows = init.gatherRows ?? ppoGatherRowsFor(backend);
    const splitBudget =
      typeof init.dwSplit === 'number'
        ? init.dwSplit
        : init.dwSplit === false
          ? 0
          : dwSplitBudgetFor(backend);
    this.plan = planMlps(
      [actorLayout, criticLayout],
      cfg.minibatch,
      kSplitFor(backend),
      splitBudget,
      dwHandoffFor(backend),
      init.dwSplit === 'most' ? 'most' : undefined,
      init.chain ?? true,
    );
    if (this.precision === 'tf32') this.plan.tf32 = true;
    const deltaChain = init.deltaChain ?? tuningFor(backend).learn.deltaChain;
    const fuse = init.fuseLoss ?? true;
    if (deltaChain !== false) {
      this.plan.deltaChain = planDeltaChain(this.plan, deltaChain === true ? undefined : deltaChain, fuse);
    }
    // The loss mode needs a chain from both networks' output layers (net 0 the actor).
    this.fuseLoss =
      fuse &&
      (this.plan.deltaChain?.from.every((f, n) => f < this.plan.nets[n].layout.layers.length) ?? false);
    this.key = seedToKey(init.seed);
    this.hyper = { lr: cfg.lr, maxGradNorm: cfg.maxGradNorm };
    this.graphs = init.graphs ?? true;
    this.pdl = init.pdl ?? true;
    const p = this.plan;
    this.buffers = {
      ...createMlpBuffers(backend, p, 'ppo', LOSS_PARTS * this.lossGroupCount),
      moments: backend.createBuffer(8 * p.paramFloats, 'ppo.moments'),
      mb: backend.createBuffer(16 * p.batch, 'ppo.minibatch'),
      stats: backend.createBuffer(4 * STAT_COUNT, 'ppo.stats'),
    };
    this.writeParams(init.actor, init.critic);
  }

  /** Rows of loss sums per step: ppo_loss's workgroups, or the fused loss's delta chain blocks. */
  private get lossGroupCount(): number {
    const dc = this.plan.deltaChain;
    return this.fuseLoss && dc ? deltaChainLossGroups(this.plan.batch, dc.rows) : lossGroups(this.plan.batch);
  }

  private get actorPlan() {
    return this.plan.nets[0];
  }

  private get criticPlan() {
    return this.plan.nets[1];
  }

  /** Replaces both networks' params (Adam state is kept). */
  writeParams(actor: Float32Array, critic: Float32Array): void {
    this.put(this.buffers.params, actor, this.actorPlan.base, 'actor');
    this.put(this.buffers.params, critic, this.criticPlan.base, 'critic');
  }

  async readParams(): Promise<{ actor: Float32Array; critic: Float32Array }> {
    const all = new Float32Array(
      await this.backend.download(this.buffers.params, 0, 4 * this.plan.paramFloats),
    );
    return {
      actor: this.slice(all, this.actorPlan.base, 0),
      critic: this.slice(all, this.criticPlan.base, 1),
    };
  }

  /** Copies the actor then critic params (P floats) into `dst` at `dstByteOffset`, on the device. */
  copyParamsTo(dst: DeviceBuffer, dstByteOffset = 0): void {
    this.backend.copy(this.buffers.params, dst, 4 * this.plan.paramFloats, 0, dstByteOffset);
  }

  async readOptim(): Promise<{ actor: HostAdam; critic: HostAdam }> {
    const all = new Float32Array(
      await this.backend.download(this.buffers.moments, 0, 8 * this.plan.paramFloats),
    );
    const v = all.subarray(this.plan.paramFloats);
    const adam = (base: number, net: number): HostAdam => ({
      m: this.slice(all, base, net),
      v: this.slice(v, base, net),
      step: this.step,
    });
    return { actor: adam(this.actorPlan.base, 0), critic: adam(this.criticPlan.base, 1) };
  }

  /** Restores Adam state; both networks must have taken the same number of steps. */
  writeOptim(o: { actor: HostAdam; critic: HostAdam }): void {
    if (o.actor.step !== o.critic.step) {
      throw new Error(
        `device ppo learner: actor and critic Adam steps differ (${o.actor.step}, ${o.critic.step})`,
      );
    }
    const P = this.plan.paramFloats;
    this.put(this.buffers.moments, o.actor.m, this.actorPlan.base, 'actor Adam m');
    this.put(this.buffers.moments, o.critic.m, this.criticPlan.base, 'critic Adam m');
    this.put(this.buffers.moments, o.actor.v, P + this.actorPlan.base, 'actor Adam v');
    this.put(this.buffers.moments, o.critic.v, P + this.criticPlan.base, 'critic Adam v');
    this.step = o.actor.step;
  }

  /** Minibatch steps per epoch of a rollout of `count` samples. */
  minibatchesPerEpoch(count: number): number {
    return Math.floor(count / this.plan.batch);
  }

  /**
   * The launches of one whole update on `rollout` (updateEpochs x minibatches steps). They read
   * the schedule written by `prepareUpdate`; running them without it repeats the last update's.
   */
  updateDispatches(rollout: DevicePpoRollout): Dispatch[] {
    if (this.cached && sameRollout(this.cached.rollout, rollout)) return this.cached.dispatches;
    this.dropGraphs();
    const perEpoch = this.checkRollout(rollout);
    const { plan, buffers: b, cfg } = this;
    this.ensureSched(1 + 2 * cfg.updateEpochs * perEpoch);
    const gather: PpoGatherArgs = {
      rolloutF: rollout.f,
      rolloutI: rollout.i,
      sched: this.sched!,
      acts: b.acts,
      mb: b.mb,
      sections: rollout.sections,
      count: rollout.count,
      batch: plan.batch,
      stateDim: plan.inDim,
      key: this.key,
      rowsPerGroup: this.gatherRows,
    };
    const actor = this.actorPlan;
    const critic = this.criticPlan;
    const lastA = actor.layout.layers.length - 1;
    const lastC = critic.layout.layers.length - 1;
    const head = {
      lossAt: plan.partialCount,
      nActions: actor.layout.layers[lastA].out,
      logitsOff: actor.outputAt[lastA],
      valuesOff: critic.outputAt[lastC],
      dLogitsOff: actor.deltaAt[lastA],
      dValueOff: critic.deltaAt[lastC],
      clip: cfg.clip,
      valueCoef: cfg.valueCoef,
      entropyCoef: cfg.entropyCoef,
      normalize: cfg.normalizeAdvantages,
    };
    // Fused: the delta chain launch computes the loss head (no ppo_loss launch).
    const loss = this.fuseLoss
      ? []
      : [
          ppoLossDispatch({
            ...head,
            acts: b.acts,
            mb: b.mb,
            deltas: b.deltas,
            partials: b.partials,
            batch: plan.batch,
          }),
        ];
    const forward = forwardDispatches(plan, b);
    const backward = backwardDispatches(
      plan,
      b,
      this.fuseLoss ? { mb: b.mb, partials: b.partials, loss: head } : undefined,
    );
    const adamArgs = {
      params: b.params,
      grads: b.grads,
      moments: b.moments,
      partials: b.partials,
      sched: this.sched!,
      stats: b.stats,
      n: plan.paramFloats,
      nPartials: plan.partialCount,
      normAt: STAT.gradNorm,
      loss: { at: plan.partialCount, groups: this.lossGroupCount, count: plan.batch },
    };
    const dispatches: Dispatch[] = [];
    let s = 0;
    for (let e = 0; e < cfg.updateEpochs; e++) {
      for (let k = 0; k < perEpoch; k++, s++) {
        dispatches.push(
          ppoGatherDispatch(gather, e, k),
          ...forward,
          ...loss,
          ...backward,
          adamStepDispatch(adamArgs, this.hyper, 1 + 2 * s),
        );
      }
    }
    const trigger = tuningFor(this.backend).learn.pdlEarlyTrigger;
    const early = this.pdl === 'early' && trigger;
    const launched = this.pdl
      ? dispatches.map((d) => withPdl(d, early || (trigger && EARLY_TRIGGER.has(d.kernel.name))))
      : dispatches;
    this.cached = { rollout: { ...rollout, sections: { ...rollout.sections } }, dispatches: launched };
    return launched;
  }

  /** Writes the schedule of update number `update` (the next `steps` Adam steps) and zeroes the statistics. */
  prepareUpdate(rollout: DevicePpoRollout, update: number): number {
    const perEpoch = this.checkRollout(rollout);
    const steps = this.cfg.updateEpochs * perEpoch;
    this.ensureSched(1 + 2 * steps);
    const sched = new Uint32Array(1 + 2 * steps);
    const schedF = new Float32Array(sched.buffer);
    sched[0] = (update * this.cfg.updateEpochs) >>> 0;
    for (let s = 0; s < steps; s++) {
      const [stepSize, bc2Sqrt] = adamBiasCorrection(this.hyper, this.step + s + 1);
      schedF[1 + 2 * s] = stepSize;
      schedF[2 + 2 * s] = bc2Sqrt;
    }
    this.backend.upload(this.sched!, sched);
    this.backend.upload(this.buffers.stats, new Float32Array(STAT_COUNT));
    return steps;
  }

  /**
   * One PPO update on `rollout` (update number `update` of the run: it seeds the shuffles as
   * update * updateEpochs + epoch). Returns the means over its minibatches, like ppoUpdateReference.
   */
  async update(rollout: DevicePpoRollout, update: number): Promise<PpoUpdateStats> {
    const steps = this.prepareUpdate(rollout, update);
    const dispatches = this.updateDispatches(rollout);
    const chunk = dispatches.length / this.cfg.updateEpochs;
    const epochs = Array.from({ length: this.cfg.updateEpochs }, (_, e) =>
      dispatches.slice(e * chunk, (e + 1) * chunk),
    );
    if (this.graphs && canCapture(this.backend)) {
      const backend = this.backend;
      this.cached!.graphs ??= epochs.map((d) => backend.capture(d));
      for (const g of this.cached!.graphs) g.replay();
    } else {
      await this.runEach(epochs);
    }
    this.step += steps;
    return this.readStats(steps);
  }

  /**
   * Runs the update one epoch per submission: `sync()` submits what `run` encoded before its first
   * await, so the device executes epoch e while the host encodes epoch e + 1 (WebGPU encoding
   * costs tens of microseconds per dispatch on the host). Still no readback between epochs.
   */
  private async runEach(submissions: Dispatch[][]): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const d of submissions) {
      this.backend.run(d);
      pending.push(this.backend.sync());
    }
    const failed = (await Promise.allSettled(pending)).find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  /** Means of the statistics the last `steps` minibatch steps accumulated. */
  async readStats(steps: number): Promise<PpoUpdateStats> {
    const s = new Float32Array(await this.backend.download(this.buffers.stats, 0, 4 * STAT_COUNT));
    const mean = (slot: number) => s[slot] / steps;
    const policyLoss = mean(STAT.policy);
    const valueLoss = mean(STAT.value);
    const entropy = mean(STAT.entropy);
    return {
      total: policyLoss + this.cfg.valueCoef * valueLoss - this.cfg.entropyCoef * entropy,
      policyLoss,
      valueLoss,
      entropy,
      approxKl: mean(STAT.approxKl),
      clipFrac: mean(STAT.clipFrac),
      gradNorm: mean(STAT.gradNorm),
      minibatches: steps,
    };
  }

  destroy(): void {
    this.dropGraphs();
    this.cached = null;
    for (const buf of Object.values(this.buffers)) this.backend.destroyBuffer(buf);
    if (this.sched) this.backend.destroyBuffer(this.sched);
  }

  private dropGraphs(): void {
    for (const g of this.cached?.graphs ?? []) g.destroy();
    if (this.cached) this.cached.graphs = undefined;
  }

  private checkRollout(rollout: DevicePpoRollout): number {
    const perEpoch = this.minibatchesPerEpoch(rollout.count);
    if (perEpoch < 1) {
      throw new Error(`ppo update: ${rollout.count} samples cannot fill one minibatch of ${this.plan.batch}`);
    }
    return perEpoch;
  }

  private ensureSched(words: number): void {
    if (this.sched && this.schedFloats >= words) return;
    if (this.sched) this.backend.destroyBuffer(this.sched);
    this.sched = this.backend.createBuffer(4 * words, 'ppo.schedule');
    this.schedFloats = words;
    this.dropGraphs();
    this.cached = null;
  }

  private put(dst: DeviceBuffer, data: Float32Array, at: number, what: string): void {
    const net = what.startsWith('actor') ? this.actorPlan : this.criticPlan;
    if (data.length !== net.layout.size) {
      throw new Error(
        `device ppo learner: ${what} has ${data.length} floats, the layout needs ${net.layout.size}`,
      );
    }
    this.backend.upload(dst, data, 4 * at);
  }

  private slice(all: Float32Array, base: number, net: number): Float32Array {
    return all.slice(base, base + this.plan.nets[net].layout.size);
  }
}
