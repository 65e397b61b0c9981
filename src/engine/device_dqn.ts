/**
 * The DQN-family engine on a device (`--algo dqn|c51|iqn --backend webgpu|cuda`; src/engine/dqn_engine.ts):
 * collect_dqn (DqnDeviceCollector) acts, DeviceReplay holds the replay ring and its PER sum tree,
 * DeviceDqnLearner trains, and the learner's online params reach the collector's nets buffer by a
 * device copy after each train epoch. Nothing of the rollout or the replay crosses to
 * the host on the way:
 *
 *   collect   one launch, then replay_insert from the collector's out_f / out_i (n-step folded,
 *             new rows at the max priority); read back for CollectStats only the rewards +
 *             components floats and the dones + truncateds integers (8 of the 117 values per
 *             sample). With curiosity on, the whole launch is read back instead: the
 *             curiosity model trains on the host.
 *   train     dqn.stepsPerEpoch steps recorded into one run (one submission, WebGPU splits long
 *             runs into chunks; once the ring is full, recorded once per target phase and replayed:
 *             a CUDA graph, or WebGPU's same dispatch list): per step sample + gather, a copy of the IS weights out of the
 *             batch, the learner's step, the priority update from its TD signals, and a copy of
 *             its `td` into a per-epoch history. The host reads back once at the end: that
 *             history (2 x batch floats per step) and the gradient-norm sum.
 *
 *   validate  validate_dqn (DeviceValidator) over the split in launches of up to 512 steps (CUDA:
 *             8,192), enqueued together (on CUDA on the side stream, in order), reading the market and
 *             the online net (float 0) from the collector's buffers; only the trace comes back.
 *             Plain, C51 and IQN (its greedy policy's dqn.iqnActTau fixed taus) validate there;
 *             on CUDA as one thread-block cluster (validate_dqn_cluster). A head the build cannot
 *             hold (WebGPU: C51 past 75 atoms, IQN past 128 act taus;
 *             CUDA: below sm_90, or a net past 16 CTAs' shared memory; validateDqnUnsupported)
 *             has no `validate`: the loop then backtests on the host.
 *
 * train.precision tf32 (auto on CUDA) runs the learner's matmuls on TF32 tensor cores, and the
 * plain head's collector too (its TF32 builds; C51 and IQN collect in exact f32).
 *
 * The draws equal the CPU engine's (same Philox streams, train step numbers and beta schedule),
 * and the DqnSnapshot is the CPU engine's format (ring, actions, tree, max priority, head, size
 * read back and uploaded), so checkpoints are interchangeable (IQN's taus too: the learner draws
 * them from the same Philox stream and train step).
 */
import { capsOf } from '../backend/caps.js';
import type { Backend, ClusterOccupancy, DeviceBuffer, Dispatch } from '../backend/types.js';
import type { DqnRollout } from '../collect/rollout.js';
import { type Config, resolvePrecision } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import {
  type DeviceCollectorInit,
  DqnDeviceCollector,
  dqnCollectorOptions,
  trainCollectPrecision,
} from '../device/collect.js';
import { DeviceDqnLearner } from '../device/dqn.js';
import { GraphCache } from '../device/graphs.js';
import { collectorDqnRollout, DeviceReplay } from '../device/replay.js';
import { ALGO_TILES } from '../device/tile_choice.js';
import { DeviceValidator } from '../device/validate.js';
import { envParams } from '../env/params.js';
import { DQN_OUTPUT } from '../kernels/collect_dqn.js';
import { dqnTargetUpdateDispatch } from '../kernels/dqn_target_update.js';
import { validateDqnSpecFor, validateDqnUnsupported } from '../kernels/validate_dqn.js';
import { headOf } from '../learn/dqn_update.js';
import { perBeta } from '../learn/per.js';
import { REPLAY_F } from '../learn/replay.js';
import { initParams } from '../nets/forward.js';
import { duelingLayout, NetId } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import { assertHostReplayFits } from './cpu_dqn.js';
import { createHostCuriosity } from './dqn_curiosity.js';
import type { DqnEngine, DqnSnapshot, DqnTrainStats } from './dqn_engine.js';
import { type CollectStats, summarizeRollout } from './engine.js';

/** Indices of the nets buffer and of out_f / out_i among the collector's device buffers (src/collect/device.ts). */
const NETS = 4;
const OUT_F = 8;
const OUT_I = 9;

/** Offset (in N x L units) of a collect_dqn output section. */
function sectionAt(name: string): number {
  const s = DQN_OUTPUT.sections.find((x) => x.name === name);
  if (!s) throw new Error(`collect_dqn output has no section ${name}`);
  return s.offset;
}

/**
 * What CollectStats reads: out_f's rewards and components sections (contiguous, in that order) and
 * out_i's dones and truncateds, as [first, end) section offsets in N x L units.
 */
const STATS_F = [sectionAt('rewards'), sectionAt('components') + 5] as const;
const STATS_I = [sectionAt('dones'), sectionAt('truncateds') + 1] as const;
if (STATS_F[1] - STATS_F[0] !== 6 || STATS_I[1] - STATS_I[0] !== 2)
  throw new Error('device dqn engine: collect_dqn output sections are not where the stats read expects');

/** An f32 device copy as a dispatch (dqn_target_update's hard copy), so it records into a run. */
const copyFloats = (src: DeviceBuffer, dst: DeviceBuffer, count: number, srcOff: number, dstOff: number) =>
  dqnTargetUpdateDispatch({
    online: src,
    targetNet: dst,
    count,
    onlineOff: srcOff,
    targetOff: dstOff,
    update: 'copy',
  });

/**
 * Episodes per block of the tiled collector when a validation cluster of `sideCtas` CTAs runs beside
 * it (DqnEngine.validatesBeside): the tile doubled, while `fits` the doubled tile, until every block
 * has an SM beside the cluster's. Undefined where the tile already fits, or the backend states no SM
 * count.
 */
export function besideTile(
  episodes: number,
  tile: number,
  smCount: number | undefined,
  sideCtas: number,
  fits: (tileEpisodes: number) => boolean,
): number | undefined {
  if (smCount === undefined || smCount - sideCtas < 1) return undefined;
  let e = tile;
  while (Math.ceil(episodes / e) > smCount - sideCtas && fits(2 * e)) e *= 2;
  return e === tile ? undefined : e;
}

/**
 * besideTile for the collector `init` would build: tiles up to the algorithm's static plan that
 * the collector's own workgroup-memory check accepts (C51's 32-episode tile does not fit 48 KiB).
 */
export function collectorBesideTile(init: DeviceCollectorInit, sideCtas: number): number | undefined {
  const chosen = dqnCollectorOptions(init);
  if (chosen.variant !== 'tiled' || init.algo === 'ppo') return undefined;
  const max = ALGO_TILES[init.algo].staticEpisodes;
  const fits = (tileEpisodes: number) => {
    if (tileEpisodes > max) return false;
    try {
      dqnCollectorOptions({ ...init, tile: { ...init.tile, tileEpisodes } });
      return true;
    } catch {
      return false;
    }
  };
  return besideTile(
    init.cfg.rollout.episodes,
    chosen.tileEpisodes,
    capsOf(init.backend).limits.smCount,
    sideCtas,
    fits,
  );
}

export function createDeviceDqnEngine(
  cfg: Config,
  market: Market,
  train: SplitRange,
  backend: Backend,
): DqnEngine {
  const { algo, seed } = cfg.train;
  const head = headOf(algo);
  const q = cfg.dqn;
  // Snapshots (checkpoints) hold the ring on the host.
  assertHostReplayFits(q.replayCapacity);
  const key = seedToKey(seed);
  const B = q.batch;
  const steps = q.stepsPerEpoch;
  const layout = duelingLayout(head, q.atoms, q.iqnEmbed);
  const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
  const curiosity = createHostCuriosity(cfg);
  const { episodes, steps: launchSteps } = cfg.rollout;
  const count = episodes * launchSteps;
  // train.precision tf32 (auto on CUDA): the learner's matmuls on tensor cores, and the plain
  // head's collector (trainCollectPrecision).
  const precision = resolvePrecision(cfg.train.precision, backend.kind);
  if (precision === 'tf32' && !capsOf(backend).features.tf32TensorCores)
    throw new Error(
      `train.precision tf32 runs on CUDA tensor cores only, this run's backend is ${backend.kind}: use train.precision exact, or --backend cuda`,
    );
  const validatedHead = { head, atoms: q.atoms, actTaus: q.iqnActTau, iqnEmbed: q.iqnEmbed };
  const caps = capsOf(backend);
  const validateSpec =
    validateDqnUnsupported(validatedHead, caps) === null ? validateDqnSpecFor(validatedHead, caps) : null;
  // On CUDA also the GPU must hold the cluster (a 16-CTA cluster is a non-portable size).
  const validateOnDevice =
    validateSpec !== null &&
    ((backend as Partial<ClusterOccupancy>).maxActiveClusters?.(validateSpec) ?? 1) > 0;
  const validatesBeside = validateOnDevice && typeof backend.runBeside === 'function';
  const collectorInit = (tileEpisodes?: number): DeviceCollectorInit => ({
    backend,
    market,
    split: train,
    cfg,
    algo,
    curiosity: curiosityOn,
    ...(tileEpisodes === undefined ? {} : { tile: { tileEpisodes } }),
    ...(trainCollectPrecision(algo, precision) === 'tf32' ? { constants: { TF32: 1 } } : {}),
  });
  // The validation runs beside the next collection (src/train/dqn.ts): the tiled collector's blocks
  // keep an SM each beside the validation cluster's CTAs.
  const wider =
    validatesBeside && validateSpec?.cluster
      ? collectorBesideTile(
          collectorInit(),
          validateSpec.cluster.reduce((a, b) => a * b, 1),
        )
      : undefined;
  const collector = new DqnDeviceCollector(collectorInit(wider));
  const owned: { destroy(): void }[] = [collector];
  let learner!: DeviceDqnLearner;
  let replay!: DeviceReplay;
  try {
    learner = new DeviceDqnLearner({
      backend,
      head,
      cfg: q,
      layout,
      params: initParams(layout, NetId.QOnline, seed),
      maxSteps: Math.max(1, steps),
      key,
      precision,
    });
    owned.push(learner);
    replay = new DeviceReplay(backend, {
      capacity: q.replayCapacity,
      batch: B,
      gamma: q.gamma,
      nStep: q.nStep,
      alpha: q.priorityAlpha,
      eps: q.priorityEps,
      betaStart: q.betaStart,
      betaEnd: q.betaEnd,
      betaSteps: q.betaEpochs * steps,
      key,
    });
    owned.push(replay);
  } catch (err) {
    for (const o of owned.reverse()) o.destroy();
    throw err;
  }
  const weights = backend.createBuffer(4 * B, 'dqn batch weights');
  // Each step's `td` (B priority signals, then B weighted losses), read back once per epoch.
  const history = backend.createBuffer(4 * Math.max(1, steps) * 2 * B, 'dqn td history');
  const batch = { rows: replay.batchF, actions: replay.batchI, weights };
  const rolloutView = collectorDqnRollout(
    collector.deviceBuffers[OUT_F],
    collector.deviceBuffers[OUT_I],
    episodes,
    launchSteps,
  );
  const nets = collector.deviceBuffers[NETS];
  const syncActing = () => learner.copyOnlineTo(nets);
  const syncCuriosity = () => collector.setWeights({ curiosity: curiosity.model.params });
  // validate_dqn reads the market and the online net (float 0 of nets, kept current by
  // syncActing) from the collector's buffers: one validator per split, no copy.
  const validators = new Map<string, DeviceValidator>();
  const validator = (split: SplitRange) => {
    const key = `${split.start}:${split.end}`;
    let v = validators.get(key);
    if (!v) {
      const b = collector.deviceBuffers;
      v = new DeviceValidator(backend, [b[0], b[1], b[2], b[3], nets], envParams(cfg.env), split, {
        kind: 'dqn',
        head,
        atoms: q.atoms,
        vMin: q.vMin,
        vMax: q.vMax,
        actTaus: q.iqnActTau,
        iqnEmbed: q.iqnEmbed,
        netBase: 0,
      });
      validators.set(key, v);
    }
    return v;
  };
  syncActing();
  syncCuriosity();
  // The train epoch recorded once per key when the ring is full (graphs.ts): a CUDA graph, or on
  // WebGPU the same dispatch objects again.
  const graphs = new GraphCache(backend);
  let rollout: DqnRollout | null = null;

  /** CollectStats from the few sections it needs: rewards .. components floats, dones + truncateds. */
  const readStats = async (): Promise<CollectStats> => {
    const [f, i] = await Promise.all([
      backend.download(rolloutView.f, 4 * STATS_F[0] * count, 4 * (STATS_F[1] - STATS_F[0]) * count),
      backend.download(rolloutView.i, 4 * STATS_I[0] * count, 4 * (STATS_I[1] - STATS_I[0]) * count),
    ]);
    const floats = new Float32Array(f);
    const ints = new Int32Array(i);
    return summarizeRollout(
      floats.subarray(count),
      floats.subarray(0, count),
      ints.subarray(0, count),
      ints.subarray(count, 2 * count),
      count,
    );
  };

  const params = async () => ({
    online: await learner.read('params'),
    target: await learner.read('target'),
    curiosity: curiosity.model.params.slice(),
  });

  // Train step k of a recorded epoch: PER sample, the learner's step, the priority update.
  const stepList = (k: number): Dispatch[] => [
    ...replay.sample(k),
    copyFloats(replay.batchF, weights, B, B * REPLAY_F, 0),
    ...learner.stepDispatches(batch, k),
    ...replay.updatePriorities(learner.buffers.td),
    copyFloats(learner.buffers.td, history, 2 * B, 0, 2 * B * k),
  ];

  return {
    backend: backend.kind,

    async collect(round: number, epsilon: number): Promise<CollectStats> {
      collector.stepBase = (round * launchSteps) >>> 0;
      collector.launch(epsilon);
      backend.run(replay.insert(rolloutView));
      if (!curiosityOn) return readStats();
      rollout = await collector.readDqn();
      return summarizeRollout(rollout.components, rollout.rewards, rollout.dones, rollout.truncateds, count);
    },

    stepKernels(): Dispatch[] {
      if (replay.size < B)
        throw new Error('device dqn engine: stepKernels needs a replay of at least a batch');
      learner.uploadSchedule(1);
      replay.setFirstStep(learner.step);
      return stepList(0);
    },

    async train(_round: number): Promise<DqnTrainStats> {
      const out: DqnTrainStats = { steps: 0, loss: 0, gradNorm: 0, td: 0, beta: 0, replaySize: replay.size };
      if (replay.size < B || steps < 1) return out;
      const first = learner.step;
      learner.resetNormSum();
      learner.uploadSchedule(steps);
      replay.setFirstStep(first);
      const record = () => {
        const list = [];
        for (let k = 0; k < steps; k++) list.push(...stepList(k));
        return list;
      };
      // The epoch's uniforms depend on the replay's size (fixed once the ring is full) and on
      // which of its steps copy the target net (the first step modulo targetEvery).
      if (replay.size === replay.capacity) {
        graphs.replay(`${q.targetEvery > 0 ? first % q.targetEvery : 'polyak'}`, record);
      } else {
        backend.run(record());
      }
      learner.advance(steps);
      const td = new Float32Array(await backend.download(history, 0, 4 * steps * 2 * B));
      for (let k = 0; k < steps; k++) {
        let loss = 0;
        let signal = 0;
        for (let b = 0; b < B; b++) {
          signal += Math.abs(td[2 * B * k + b]);
          loss += td[2 * B * k + B + b];
        }
        out.loss += loss / B;
        out.td += signal / B;
      }
      out.steps = steps;
      out.beta = perBeta(q.betaStart, q.betaEnd, first + steps - 1, q.betaEpochs * steps);
      out.gradNorm = (await learner.readNormSum()) / steps;
      out.loss /= steps;
      out.td /= steps;
      syncActing();
      return out;
    },

    async trainCuriosity(round: number): Promise<number> {
      if (!rollout) throw new Error('device dqn engine: trainCuriosity needs a launch; call collect first');
      const mse = curiosity.train(rollout, round);
      syncCuriosity();
      return mse;
    },

    ...(validateOnDevice
      ? { validate: (split: SplitRange, barsPerYear: number) => validator(split).run(barsPerYear) }
      : {}),
    validatesBeside,

    params,

    async snapshot(withReplay = true): Promise<DqnSnapshot> {
      const env = await collector.readEnv();
      const { m, v } = await learner.readMoments();
      const a = curiosity.adam;
      const ring = await replay.read(withReplay);
      return {
        params: await params(),
        optim: {
          online: { m, v, step: learner.step },
          curiosity: { m: (a.m as Float32Array).slice(), v: (a.v as Float32Array).slice(), step: a.step },
        },
        env: { f: env.f.slice(), i: env.i.slice(), window: env.window.slice() },
        trainSteps: learner.step,
        replay: { f: ring.f, i: ring.i, head: replay.head, size: replay.size },
        per: { tree: ring.tree, maxPriority: ring.maxPriority },
      };
    },

    async restore(s: DqnSnapshot): Promise<void> {
      const put = (
        dst: { length: number; set(a: ArrayLike<number>): void },
        src: ArrayLike<number>,
        what: string,
      ) => {
        if (src.length !== dst.length) {
          throw new Error(
            `device dqn engine: ${what} has ${src.length} values, this run needs ${dst.length}`,
          );
        }
        dst.set(src);
      };
      if (s.optim.online.step !== s.trainSteps) {
        throw new Error(
          `device dqn engine: the snapshot's Adam step ${s.optim.online.step} differs from its train steps ${s.trainSteps}`,
        );
      }
      const env = await collector.readEnv();
      put(env.f, s.env.f, 'env floats');
      put(env.i, s.env.i, 'env integers');
      put(env.window, s.env.window, 'env window');
      put(curiosity.model.params, s.params.curiosity, 'curiosity');
      put(curiosity.adam.m, s.optim.curiosity.m, 'curiosity AdamW m');
      put(curiosity.adam.v, s.optim.curiosity.v, 'curiosity AdamW v');
      curiosity.adam.step = s.optim.curiosity.step;
      replay.write({
        f: s.replay.f,
        i: s.replay.i,
        head: s.replay.head,
        size: s.replay.size,
        tree: s.per.tree,
        maxPriority: s.per.maxPriority,
      });
      learner.write('params', s.params.online);
      learner.write('target', s.params.target);
      learner.writeMoments(s.optim.online.m, s.optim.online.v);
      learner.step = s.trainSteps;
      collector.writeEnv(env);
      syncActing();
      syncCuriosity();
      rollout = null;
    },

    destroy() {
      for (const v of validators.values()) v.destroy();
      graphs.destroy();
      backend.destroyBuffer(weights);
      backend.destroyBuffer(history);
      replay.destroy();
      learner.destroy();
      collector.destroy();
    },
  };
}
