/**
 * The PPO training-epoch benchmark behind `foxhunt bench train` (docs/LEARNER.md): on one
 * backend, for a rollout of N episodes x L steps, it times each phase of a PPO epoch:
 *   collect   collect_ppo on the device (PpoDeviceCollector); where it cannot run on this backend,
 *             a synthetic rollout of the same size is uploaded instead and the phase says why
 *   update    DevicePpoLearner.update: updateEpochs x floor(N L / minibatch) minibatch steps, one
 *             submission (CUDA: one graph replay), then the device copy of the new weights into the
 *             collector; wall time as training sees it, plus device time of the same launches
 *             (WebGPU timestamp queries around the pass; CUDA events around eager launches)
 *   validate  the greedy policy backtested on the validation split as training does it: on the
 *             device (validate_policy, DeviceValidator: its launches of up to 512 steps (CUDA 8,192), the
 *             trace read back, metrics on the host), or where collect_ppo could not run, params
 *             read back and the host backtest; plus the device time of those launches and, once,
 *             the host backtest's time
 * and, to show where an update's time goes, the device time of each launch of one minibatch step
 * timed alone (backend.time over repeats).
 * The first epoch is a warm-up (kernel compilation, graph capture) and is not counted. FLOPs
 * count the matmuls of the update (forward, dW, dX): 2 multiply-adds' worth per product.
 * `precision` 'tf32' (CUDA) runs the collector and the learner's matmuls on TF32 tensor cores, as
 * train.precision tf32 does.
 */
import type { Backend, Dispatch } from '../backend/types.js';
import type { Config, Precision } from '../config.js';
import type { Market, Splits } from '../data/types.js';
import { PpoDeviceCollector } from '../device/collect.js';
import { DevicePpoLearner, type DevicePpoRollout } from '../device/learn.js';
import type { MlpPlan } from '../device/learn_mlp.js';
import { collectorRollout, syntheticPpoRollout, uploadPpoRollout } from '../device/rollout.js';
import { DeviceValidator } from '../device/validate.js';
import { envParams } from '../env/params.js';
import { backtest } from '../eval/backtest.js';
import { ppoGreedyPolicy } from '../eval/policies.js';
import { MAX_BACKWARD_JOBS } from '../kernels/mlp_backward.js';
import { initParams } from '../nets/forward.js';
import { curiosityLayout, NetId, ppoActorLayout, ppoCriticLayout } from '../nets/layout.js';

/** Multiply-adds of one minibatch step's matmuls: forward, dW (with db), and dX above layer 0. */
export function stepFlops(plan: MlpPlan): number {
  let macs = 0;
  for (const net of plan.nets) {
    net.layout.layers.forEach((l, i) => {
      macs += plan.batch * l.out * (l.in + (l.in + 1) + (i > 0 ? l.in : 0));
    });
  }
  return 2 * macs;
}

export interface PhaseTimes {
  /** Mean wall milliseconds per epoch of the measured repeats. */
  collectMs: number;
  /** Device milliseconds of one collect launch (backend.time). */
  collectDeviceMs: number;
  updateMs: number;
  /** Device milliseconds of one update's launches (backend.time, eager on CUDA). */
  updateDeviceMs: number;
  validateMs: number;
  /** Device milliseconds of one validate_policy launch (0 when validation ran on the host). */
  validateDeviceMs: number;
  /** Wall milliseconds of the host backtest of the same policy (params read back), timed once. */
  validateHostMs: number;
}

export interface StepKernelTime {
  /** Kernel name and what this launch of it does, e.g. `mlp_backward ppo_critic.value_layer_1 + ...`. */
  launch: string;
  groups: number;
  /** Mean device milliseconds over the repeats. */
  ms: number;
}

/** Each launch of `list` timed alone: mean device milliseconds over `repeats` runs of it. */
export async function timeEachLaunch(
  backend: Backend,
  list: Dispatch[],
  repeats: number,
  label: (d: Dispatch) => string = (d) => d.kernel.name,
): Promise<StepKernelTime[]> {
  const out: StepKernelTime[] = [];
  for (const d of list) {
    const ms = await backend.time([d], repeats);
    out.push({ launch: label(d), groups: d.groups[0] * d.groups[1] * d.groups[2], ms });
  }
  return out;
}

/** The table of timeEachLaunch's result, a line a launch: number, label, groups, microseconds. */
export function stepKernelLines(kernels: StepKernelTime[]): string[] {
  const width = Math.max(...kernels.map((k) => k.launch.length));
  return kernels.map(
    (k, i) =>
      `${String(i + 1).padStart(2)}  ${k.launch.padEnd(width)}  ${String(k.groups).padStart(6)} groups  ${(k.ms * 1000).toFixed(1).padStart(8)} us`,
  );
}

/** `mlp_forward value_layer_1 + policy_layer_1`-style labels for the launches of one step. */
function launchLabel(d: Dispatch, plan: MlpPlan): string {
  const u = d.uniforms;
  if (d.kernel.name === 'mlp_chain_forward') {
    const names = Array.from({ length: u.layers }, (_, c) => {
      for (const net of plan.nets) {
        const layer = net.layout.layers.find((l) => net.base + l.wOffset === u[`wOff${c}`]);
        if (layer) return layer.name;
      }
      return '?';
    });
    return `${d.kernel.name} ${names.join(' -> ')}`;
  }
  if (d.kernel.name === 'mlp_delta_chain' && plan.deltaChain) {
    const from = plan.deltaChain.from;
    const nets = plan.nets
      .map((net, n) =>
        net.layout.layers
          .slice(Math.max(1, from[n]))
          .reverse()
          .map((l) => l.name)
          .join(', '),
      )
      .filter((s) => s.length > 0);
    return `${d.kernel.name} ${d.uniforms.loss ? 'loss head + ' : ''}dX of ${nets.join(' + ')}`;
  }
  if (d.kernel.name !== 'mlp_forward' && d.kernel.name !== 'mlp_backward') return d.kernel.name;
  const layerNames = (prefix: string) => {
    const names: string[] = [];
    for (let j = 0; j < MAX_BACKWARD_JOBS; j++) {
      if (!u[`${prefix}${prefix ? 'O' : 'o'}ut${j}`]) continue;
      const wOff = u[`${prefix}${prefix ? 'W' : 'w'}Off${j}`];
      for (const net of plan.nets) {
        const layer = net.layout.layers.find((l) => net.base + l.wOffset === wOff);
        if (layer) names.push(layer.name);
      }
    }
    return names.join(' + ');
  };
  const own = layerNames('');
  if (d.kernel.name === 'mlp_forward') {
    const k = [u.splits0, u.splits1].filter((n, j) => u[`out${j}`] && n > 1);
    return `${d.kernel.name} ${own}${k.length ? `, K in ${k.join(' + ')} slices` : ''}`;
  }
  const split = u.splits > 1 ? `, dW in ${u.splits} slices` : '';
  const sum = u.sumSplits > 1 ? `${own ? ', ' : ''}adds the slices of ${layerNames('sum')}` : '';
  return `${d.kernel.name} ${own}${split}${sum}`;
}

export interface BenchTrainResult {
  /** The matmul arithmetic measured (BenchTrainOptions.precision). */
  precision: Precision;
  episodes: number;
  steps: number;
  samples: number;
  minibatch: number;
  updateEpochs: number;
  /** Minibatch steps per update and launches per step. */
  minibatchSteps: number;
  launchesPerStep: number;
  /** Whether the critic's forward tail ran as one mlp_chain_forward launch. */
  chain: boolean;
  /** Its rows per workgroup (0 without the chain). */
  chainRows: number;
  /** Whether the backward ran a mlp_delta_chain launch (DevicePpoLearnerInit.deltaChain). */
  deltaChain: boolean;
  /** Whether that launch computed the loss head, no ppo_loss launch (DevicePpoLearnerInit.fuseLoss). */
  fuseLoss: boolean;
  /** Why the collect phase used a synthetic rollout, when it did. */
  collectNote?: string;
  times: PhaseTimes;
  updateFlops: number;
  /** Achieved FLOP/s of the update: wall and device. */
  updateFlopsPerSec: number;
  updateDeviceFlopsPerSec: number;
  /** Samples through the loss per second of update wall time. */
  trainSamplesPerSec: number;
  /** Experiences collected and learned from per second of a whole epoch. */
  epochSamplesPerSec: number;
  /** Means over the measured updates (sanity: finite, plausible). */
  losses: { policy: number; value: number; entropy: number; gradNorm: number };
  /** Device time of each launch of one minibatch step, timed alone (where it goes). */
  stepKernels: StepKernelTime[];
  repeats: number;
}

export interface BenchTrainOptions {
  backend: Backend;
  /** Config with rollout.episodes / rollout.steps set to the setting to measure. */
  cfg: Config;
  market: Market;
  splits: Splits;
  barsPerYear: number;
  /** Measured epochs after the warm-up one. */
  repeats: number;
  /** Split dW over batch slices where the backend can (DevicePpoLearnerInit.dwSplit; default true). */
  dwSplit?: boolean | number | 'most';
  /** ppo_gather samples per workgroup (DevicePpoLearnerInit.gatherRows; default the backend's). */
  gatherRows?: number;
  /** Launch the update's kernels with PDL where the backend can (DevicePpoLearnerInit.pdl; default true). */
  pdl?: boolean | 'early';
  /**
   * The critic's forward tail as one mlp_chain_forward launch (DevicePpoLearnerInit.chain; default
   * true; a number: rows per workgroup).
   */
  chain?: boolean | number;
  /** The backward's delta chain (DevicePpoLearnerInit.deltaChain; default: the learner's). */
  deltaChain?: boolean | number;
  /** The loss head inside the delta chain launch (DevicePpoLearnerInit.fuseLoss; default true). */
  fuseLoss?: boolean;
  /**
   * 'exact' (default) or 'tf32' (CUDA: TF32 tensor cores in the collector, its TF32 constant, and in
   * the learner's matmuls, DevicePpoLearnerInit.precision).
   */
  precision?: Precision;
  /** Skip the validation backtest (large settings: it does not depend on N). */
  validate?: boolean;
  /** Repeats when timing each launch of one step alone (default 20). */
  kernelRepeats?: number;
  onProgress?: (line: string) => void;
}

const now = () => globalThis.performance.now();

/** Runs 1 + repeats epochs and returns the per-phase means of the last `repeats`. */
export async function benchPpoTrain(o: BenchTrainOptions): Promise<BenchTrainResult> {
  const { backend, cfg } = o;
  const { episodes, steps } = cfg.rollout;
  const samples = episodes * steps;
  const seed = cfg.train.seed;
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  const precision = o.precision ?? 'exact';
  const learner = new DevicePpoLearner({
    backend,
    actorLayout,
    criticLayout,
    actor: initParams(actorLayout, NetId.Actor, seed),
    critic: initParams(criticLayout, NetId.Critic, seed),
    cfg: cfg.ppo,
    seed,
    dwSplit: o.dwSplit,
    gatherRows: o.gatherRows,
    pdl: o.pdl,
    chain: o.chain,
    deltaChain: o.deltaChain,
    fuseLoss: o.fuseLoss,
    precision,
  });
  let collector: PpoDeviceCollector | null = null;
  let rollout: DevicePpoRollout;
  let collectNote: string | undefined;
  let synthetic: DevicePpoRollout | null = null;
  try {
    collector = new PpoDeviceCollector({
      backend,
      market: o.market,
      split: o.splits.train,
      cfg,
      algo: 'ppo',
      ...(precision === 'tf32' ? { constants: { TF32: 1 } } : {}),
    });
    collector.setWeights({ curiosity: initParams(curiosityLayout(), NetId.Curiosity, seed) });
    learner.copyParamsTo(collector.deviceBuffers[4]);
    collector.launch();
    await backend.sync();
    const [outF, outI] = [collector.deviceBuffers[8], collector.deviceBuffers[9]];
    rollout = collectorRollout(outF, outI, samples);
  } catch (err) {
    collector?.destroy();
    collector = null;
    collectNote = `collect_ppo did not run here (${(err as Error).message.split('\n')[0]}); the update used a synthetic rollout`;
    synthetic = uploadPpoRollout(
      backend,
      syntheticPpoRollout(samples, actorLayout.layers[0].in, 45, 3),
      actorLayout.layers[0].in,
    );
    rollout = synthetic;
  }
  // Training's validation: validate_policy on the collector's market and nets buffers.
  const b = collector?.deviceBuffers;
  const validator =
    b && o.validate !== false
      ? new DeviceValidator(backend, [b[0], b[1], b[2], b[3], b[4]], envParams(cfg.env), o.splits.val)
      : null;
  const hostValidate = async () => {
    const { actor } = await learner.readParams();
    backtest(o.market, o.splits.val, cfg.env, ppoGreedyPolicy(actor, actorLayout), o.barsPerYear);
  };
  const perEpoch = learner.minibatchesPerEpoch(samples);
  const minibatchSteps = cfg.ppo.updateEpochs * perEpoch;
  const dispatches = learner.updateDispatches(rollout);
  const chained = dispatches.some((d) => d.kernel.name === 'mlp_chain_forward');
  const sum = { collect: 0, update: 0, validate: 0, policy: 0, value: 0, entropy: 0, gradNorm: 0 };
  try {
    for (let epoch = 0; epoch <= o.repeats; epoch++) {
      const counted = epoch > 0;
      const add = (k: keyof typeof sum, v: number) => {
        if (counted) sum[k] += v;
      };
      await backend.sync();
      let t0 = now();
      if (collector) {
        collector.launch();
        await backend.sync();
      }
      add('collect', now() - t0);
      t0 = now();
      const s = await learner.update(rollout, epoch);
      if (collector) learner.copyParamsTo(collector.deviceBuffers[4]);
      await backend.sync();
      const updateMs = now() - t0;
      add('update', updateMs);
      add('policy', s.policyLoss);
      add('value', s.valueLoss);
      add('entropy', s.entropy);
      add('gradNorm', s.gradNorm);
      t0 = now();
      if (validator) await validator.run(o.barsPerYear);
      else if (o.validate !== false) await hostValidate();
      add('validate', now() - t0);
      o.onProgress?.(
        `${counted ? 'epoch' : 'warm-up'} ${epoch}: update ${updateMs.toFixed(0)} ms, policy loss ${s.policyLoss.toFixed(4)}`,
      );
    }
    const collectDeviceMs = collector ? await backend.time([collector.dispatch()]) : 0;
    // Every launch of the backtest, as training enqueues them.
    const validateDeviceMs = validator ? await backend.time(validator.dispatches()) : 0;
    let validateHostMs = 0;
    if (o.validate !== false) {
      const t0 = now();
      await hostValidate();
      validateHostMs = now() - t0;
    }
    learner.prepareUpdate(rollout, o.repeats + 1);
    const updateDeviceMs = await backend.time(dispatches);
    const stepKernels = await timeEachLaunch(
      backend,
      dispatches.slice(0, dispatches.length / minibatchSteps),
      o.kernelRepeats ?? 20,
      (d) => launchLabel(d, learner.plan),
    );
    const r = o.repeats;
    const times: PhaseTimes = {
      collectMs: collector ? sum.collect / r : 0,
      collectDeviceMs,
      updateMs: sum.update / r,
      updateDeviceMs,
      validateMs: sum.validate / r,
      validateDeviceMs,
      validateHostMs,
    };
    const flops = minibatchSteps * stepFlops(learner.plan);
    const epochMs = times.collectMs + times.updateMs + times.validateMs;
    return {
      precision,
      episodes,
      steps,
      samples,
      minibatch: cfg.ppo.minibatch,
      updateEpochs: cfg.ppo.updateEpochs,
      minibatchSteps,
      launchesPerStep: dispatches.length / minibatchSteps,
      chain: chained,
      chainRows: chained ? learner.plan.chainRows : 0,
      deltaChain: dispatches.some((d) => d.kernel.name === 'mlp_delta_chain'),
      fuseLoss: learner.fuseLoss,
      collectNote,
      times,
      updateFlops: flops,
      updateFlopsPerSec: flops / (times.updateMs / 1000),
      updateDeviceFlopsPerSec: updateDeviceMs > 0 ? flops / (updateDeviceMs / 1000) : 0,
      trainSamplesPerSec: (minibatchSteps * cfg.ppo.minibatch) / (times.updateMs / 1000),
      epochSamplesPerSec: samples / (epochMs / 1000),
      losses: {
        policy: sum.policy / r,
        value: sum.value / r,
        entropy: sum.entropy / r,
        gradNorm: sum.gradNorm / r,
      },
      repeats: r,
      stepKernels,
    };
  } finally {
    learner.destroy();
    validator?.destroy();
    collector?.destroy();
    if (synthetic) {
      backend.destroyBuffer(synthetic.f);
      backend.destroyBuffer(synthetic.i);
    }
  }
}
