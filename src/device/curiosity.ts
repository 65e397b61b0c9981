/**
 * Curiosity forward-model training on a device (SPEC 5; the CPU engine's trainCuriosity): one
 * AdamW step on a batch the device assembles from the PPO rollout, in one submission of 7
 * launches — curiosity_gather, mlp_forward x 2, curiosity_loss, mlp_backward x 2, adam_step —
 * and one readback (the MSE and the batch's row count). The model's params, gradients and AdamW
 * moments stay on the device. An empty batch (no row whose next bar is in the rollout) takes no
 * step, like the CPU engine: adam_step is gated on the row count curiosity_gather wrote, and the
 * host counts the step only when the readback shows rows.
 */
import type { Backend, DeviceBuffer, Dispatch } from '../backend/types.js';
import { adamBiasCorrection, adamStepDispatch } from '../kernels/adam_step.js';
import { type CuriositySections, curiosityGatherDispatch } from '../kernels/curiosity_gather.js';
import { curiosityLossDispatch } from '../kernels/curiosity_loss.js';
import type { NetLayout } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwHandoffFor,
  dwSplitBudgetFor,
  forwardDispatches,
  kSplitFor,
  type MlpBuffers,
  type MlpPlan,
  planMlps,
} from './learn_mlp.js';

/** The rollout fields curiosity reads, on the device (episode-major rows: idx = episode * steps + step). */
export interface DeviceCuriosityRollout {
  f: DeviceBuffer;
  i: DeviceBuffer;
  count: number;
  steps: number;
  sections: CuriositySections;
}

export interface DeviceCuriosityInit {
  backend: Backend;
  layout: NetLayout;
  params: Float32Array;
  /** Rows per step (env.curiosityBatch). */
  batch: number;
  lr: number;
  weightDecay: number;
  /** The run seed (shuffle key). */
  seed: number;
  /** Floats of each rollout state row (the model reads its first `out` and one-hot categories). */
  stateDim: number;
}

/** sched: [rows kept, stepSize bits, bc2Sqrt bits]. */
const ROWS_AT = 0;
const BIAS_AT = 1;

export class DeviceCuriosityLearner {
  readonly backend: Backend;
  readonly plan: MlpPlan;
  /** AdamW steps taken (steps on empty batches are not taken, so not counted). */
  step = 0;
  readonly buffers: MlpBuffers & {
    moments: DeviceBuffer;
    targets: DeviceBuffer;
    sched: DeviceBuffer;
    stats: DeviceBuffer;
  };
  private readonly init: DeviceCuriosityInit;
  private readonly key: [number, number];

  constructor(init: DeviceCuriosityInit) {
    const { backend, layout, batch } = init;
    const layers = layout.layers;
    const nOut = layers[layers.length - 1].out;
    if (layers[layers.length - 1].act !== 'none')
      throw new Error('device curiosity: the output layer must be linear');
    if (layers[0].in !== nOut + 3 || init.stateDim < nOut) {
      throw new Error(
        `device curiosity: the model must read ${nOut} state floats and 3 categories, not ${layers[0].in}`,
      );
    }
    this.backend = backend;
    this.init = init;
    this.key = seedToKey(init.seed);
    this.plan = planMlps(
      [layout],
      batch,
      kSplitFor(backend),
      dwSplitBudgetFor(backend),
      dwHandoffFor(backend),
    );
    this.buffers = {
      ...createMlpBuffers(backend, this.plan, 'curiosity'),
      moments: backend.createBuffer(8 * layout.size, 'curiosity.moments'),
      targets: backend.createBuffer(4 * batch * nOut, 'curiosity.targets'),
      sched: backend.createBuffer(12, 'curiosity.schedule'),
      // [MSE (f32), rows kept (u32 bits)].
      stats: backend.createBuffer(8, 'curiosity.mse'),
    };
    this.writeParams(init.params);
  }

  private get nOut(): number {
    const layers = this.init.layout.layers;
    return layers[layers.length - 1].out;
  }

  writeParams(params: Float32Array): void {
    this.check(params, 'params');
    this.backend.upload(this.buffers.params, params);
  }

  async readParams(): Promise<Float32Array> {
    return new Float32Array(await this.backend.download(this.buffers.params, 0, 4 * this.init.layout.size));
  }

  /** Copies the params into `dst` at `dstByteOffset` on the device (a collector's nets buffer). */
  copyParamsTo(dst: DeviceBuffer, dstByteOffset = 0): void {
    this.backend.copy(this.buffers.params, dst, 4 * this.init.layout.size, 0, dstByteOffset);
  }

  async readOptim(): Promise<{ m: Float32Array; v: Float32Array; step: number }> {
    const n = this.init.layout.size;
    const all = new Float32Array(await this.backend.download(this.buffers.moments, 0, 8 * n));
    return { m: all.slice(0, n), v: all.slice(n), step: this.step };
  }

  writeOptim(o: { m: Float32Array; v: Float32Array; step: number }): void {
    this.check(o.m, 'Adam m');
    this.check(o.v, 'Adam v');
    this.backend.upload(this.buffers.moments, o.m);
    this.backend.upload(this.buffers.moments, o.v, 4 * this.init.layout.size);
    this.step = o.step;
  }

  /** The 7 launches of one step on `rollout`, rows taken in the order of shuffle epoch `epoch`. */
  stepDispatches(rollout: DeviceCuriosityRollout, epoch: number): Dispatch[] {
    const { plan, buffers: b, init } = this;
    const net = plan.nets[0];
    const last = net.layout.layers.length - 1;
    return [
      curiosityGatherDispatch(
        {
          rolloutF: rollout.f,
          rolloutI: rollout.i,
          acts: b.acts,
          targets: b.targets,
          sched: b.sched,
          sections: rollout.sections,
          count: rollout.count,
          steps: rollout.steps,
          batch: plan.batch,
          stateDim: init.stateDim,
          inDim: plan.inDim,
          outDim: this.nOut,
          key: this.key,
        },
        epoch,
      ),
      ...forwardDispatches(plan, b),
      curiosityLossDispatch({
        acts: b.acts,
        targets: b.targets,
        rowCount: b.sched,
        deltas: b.deltas,
        stats: b.stats,
        batch: plan.batch,
        outDim: this.nOut,
        predOff: net.outputAt[last],
        dPredOff: net.deltaAt[last],
        statAt: 0,
      }),
      ...backwardDispatches(plan, b),
      adamStepDispatch(
        {
          params: b.params,
          grads: b.grads,
          moments: b.moments,
          partials: b.partials,
          sched: b.sched,
          stats: b.stats,
          n: plan.paramFloats,
          nPartials: plan.partialCount,
          normAt: 0,
          gateAt: ROWS_AT,
        },
        { lr: init.lr, weightDecay: init.weightDecay },
        BIAS_AT,
      ),
    ];
  }

  /**
   * One AdamW step on the batch of `rollout` in the order of shuffle epoch `epoch` (the CPU
   * engine uses round * updateEpochs); returns the batch's MSE before the step (0 when empty).
   */
  async train(rollout: DeviceCuriosityRollout, epoch: number): Promise<number> {
    if (rollout.steps < 1 || rollout.count % rollout.steps !== 0) {
      throw new Error(
        `device curiosity: ${rollout.count} rows are not whole episodes of ${rollout.steps} steps`,
      );
    }
    const sched = new Float32Array(3);
    sched.set(adamBiasCorrection({ lr: this.init.lr }, this.step + 1), BIAS_AT);
    this.backend.upload(this.buffers.sched, sched);
    this.backend.run(this.stepDispatches(rollout, epoch));
    // One readback: the row count joins the MSE.
    this.backend.copy(this.buffers.sched, this.buffers.stats, 4, 4 * ROWS_AT, 4);
    const out = await this.backend.download(this.buffers.stats, 0, 8);
    if (new Uint32Array(out)[1] > 0) this.step++;
    return new Float32Array(out)[0];
  }

  destroy(): void {
    for (const buf of Object.values(this.buffers)) this.backend.destroyBuffer(buf);
  }

  private check(a: Float32Array, what: string): void {
    if (a.length !== this.init.layout.size) {
      throw new Error(
        `device curiosity: ${what} has ${a.length} floats, the layout needs ${this.init.layout.size}`,
      );
    }
  }
}
