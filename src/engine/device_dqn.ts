/**
 * The DQN-family engine on a device (`--algo dqn|c51 --backend webgpu|cuda`; src/engine/dqn_engine.ts):
 * collect_dqn (DqnDeviceCollector) acts, DeviceDqnLearner trains, and the learner's online and
 * target params reach the collector's nets buffer by device copies after each train epoch (no host
 * round trip). The replay and the PER tree live on the host for now (a device replay + PER is
 * being built separately): each launch is read back and folded in with the TS references
 * (insertRollout, perInsert); each train step samples on the host exactly as dqnTrainStep does
 * (same Philox draws, same beta schedule), uploads the batch rows, actions and IS weights, runs
 * the device step and reads back its priority signals for perUpdate. So for a seed the run
 * matches the CPU engine to float noise, and the DqnSnapshot is the CPU engine's (checkpoints
 * are interchangeable). Curiosity (off by default) trains on the host on the read-back launch.
 * IQN is refused: its device learner lacks the tau embedding.
 */
import type { Backend } from '../backend/types.js';
import type { DqnRollout } from '../collect/rollout.js';
import type { Config } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { DqnDeviceCollector } from '../device/collect.js';
import { DeviceDqnLearner } from '../device/dqn.js';
import { headOf } from '../learn/dqn_update.js';
import { createPer, perBeta, perInsert, perSample, perUpdate } from '../learn/per.js';
import { createReplay, insertRollout, REPLAY_F } from '../learn/replay.js';
import { initParams } from '../nets/forward.js';
import { duelingLayout, NetId } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import { assertHostReplayFits } from './cpu_dqn.js';
import { createHostCuriosity } from './dqn_curiosity.js';
import type { DqnEngine, DqnSnapshot, DqnTrainStats } from './dqn_engine.js';
import { type CollectStats, summarizeRollout } from './engine.js';

/** The one line that refuses IQN on a device backend. */
export const iqnOnDevice = (backend: string): string =>
  `--algo iqn --backend ${backend}: the device learner has no IQN tau embedding yet; use --backend cpu, or --algo dqn|c51`;

/** Index of the nets buffer among the collector's device buffers (src/device/collect.ts). */
const NETS = 4;

export function createDeviceDqnEngine(
  cfg: Config,
  market: Market,
  train: SplitRange,
  backend: Backend,
): DqnEngine {
  const { algo, seed } = cfg.train;
  const head = headOf(algo);
  if (head === 'iqn') {
    throw new Error(iqnOnDevice(backend.kind));
  }
  const q = cfg.dqn;
  assertHostReplayFits(q.replayCapacity);
  const key = seedToKey(seed);
  const B = q.batch;
  const layout = duelingLayout(head, q.atoms, q.iqnEmbed);
  const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
  const curiosity = createHostCuriosity(cfg);
  const collector = new DqnDeviceCollector({
    backend,
    market,
    split: train,
    cfg,
    algo,
    curiosity: curiosityOn,
  });
  let learner: DeviceDqnLearner;
  try {
    learner = new DeviceDqnLearner({
      backend,
      head,
      cfg: q,
      layout,
      params: initParams(layout, NetId.QOnline, seed),
    });
  } catch (err) {
    collector.destroy();
    throw err;
  }
  const batch = {
    rows: backend.createBuffer(4 * B * REPLAY_F, 'dqn batch rows'),
    actions: backend.createBuffer(4 * B, 'dqn batch actions'),
    weights: backend.createBuffer(4 * B, 'dqn batch weights'),
  };
  const hostBatch = { rows: new Float32Array(B * REPLAY_F), actions: new Int32Array(B) };
  const index = new Int32Array(B);
  const weights = new Float32Array(B);
  const replay = createReplay(q.replayCapacity);
  const per = createPer(q.replayCapacity, q.priorityAlpha, q.priorityEps);
  const nets = collector.deviceBuffers[NETS];
  const syncActing = () => {
    learner.copyNetsTo(nets);
    const pack = collector.packDispatch();
    if (pack.length) backend.run(pack);
  };
  const syncCuriosity = () => collector.setWeights({ curiosity: curiosity.model.params });
  syncActing();
  syncCuriosity();
  const count = cfg.rollout.episodes * cfg.rollout.steps;
  let rollout: DqnRollout | null = null;

  const params = async () => ({
    online: await learner.read('params'),
    target: await learner.read('target'),
    curiosity: curiosity.model.params.slice(),
  });

  return {
    backend: backend.kind,

    async collect(round: number, epsilon: number): Promise<CollectStats> {
      collector.stepBase = (round * cfg.rollout.steps) >>> 0;
      collector.launch(epsilon);
      rollout = await collector.readDqn();
      const { first, count: added } = insertRollout(replay, rollout, q.gamma, q.nStep);
      perInsert(per, first, added);
      return summarizeRollout(rollout.components, rollout.rewards, rollout.dones, rollout.truncateds, count);
    },

    async train(_round: number): Promise<DqnTrainStats> {
      const out: DqnTrainStats = { steps: 0, loss: 0, gradNorm: 0, td: 0, beta: 0, replaySize: replay.size };
      if (replay.size < B) return out;
      learner.resetNormSum();
      for (let k = 0; k < q.stepsPerEpoch; k++) {
        out.beta = perBeta(q.betaStart, q.betaEnd, learner.step, q.betaEpochs * q.stepsPerEpoch);
        perSample(per, replay.size, B, out.beta, key, learner.step, index, weights);
        for (let b = 0; b < B; b++) {
          const row = index[b];
          hostBatch.rows.set(replay.f.subarray(row * REPLAY_F, (row + 1) * REPLAY_F), b * REPLAY_F);
          hostBatch.actions[b] = replay.i[row];
        }
        backend.upload(batch.rows, hostBatch.rows);
        backend.upload(batch.actions, hostBatch.actions);
        backend.upload(batch.weights, weights);
        learner.train(batch);
        const td = await learner.readTd();
        perUpdate(per, index, td, B);
        let loss = 0;
        let signal = 0;
        for (let b = 0; b < B; b++) {
          signal += Math.abs(td[b]);
          loss += td[B + b];
        }
        out.loss += loss / B;
        out.td += signal / B;
        out.steps++;
      }
      out.gradNorm = (await learner.readNormSum()) / out.steps;
      out.loss /= out.steps;
      out.td /= out.steps;
      syncActing();
      return out;
    },

    async trainCuriosity(round: number): Promise<number> {
      if (!rollout) throw new Error('device dqn engine: trainCuriosity needs a launch; call collect first');
      const mse = curiosity.train(rollout, round);
      syncCuriosity();
      return mse;
    },

    params,

    async snapshot(): Promise<DqnSnapshot> {
      const env = await collector.readEnv();
      const { m, v } = await learner.readMoments();
      const a = curiosity.adam;
      return {
        params: await params(),
        optim: {
          online: { m, v, step: learner.step },
          curiosity: { m: (a.m as Float32Array).slice(), v: (a.v as Float32Array).slice(), step: a.step },
        },
        env: { f: env.f.slice(), i: env.i.slice(), window: env.window.slice() },
        trainSteps: learner.step,
        replay: { f: replay.f.slice(), i: replay.i.slice(), head: replay.head, size: replay.size },
        per: { tree: per.tree.slice(), maxPriority: per.maxPriority },
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
      put(replay.f, s.replay.f, 'replay rows');
      put(replay.i, s.replay.i, 'replay actions');
      replay.head = s.replay.head;
      replay.size = s.replay.size;
      put(per.tree, s.per.tree, 'PER tree');
      per.maxPriority = s.per.maxPriority;
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
      for (const b of Object.values(batch)) backend.destroyBuffer(b);
      learner.destroy();
      collector.destroy();
    },
  };
}
