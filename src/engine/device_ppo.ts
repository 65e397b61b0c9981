/**
 * The PPO engine on a device (src/engine/engine.ts): collect_ppo (PpoDeviceCollector), the device
 * PPO learner and the device curiosity trainer behind the four verbs, so the trainer's loop
 * (src/train/ppo.ts) runs unchanged on WebGPU and CUDA (and on the CPU backend, through the
 * kernels' TS references). The rollout never leaves the device: the learners read it where
 * collect_ppo wrote it, and new weights reach the collector by device copies into its nets buffer
 * (actor, critic, curiosity back to back — the learners' layouts). The host sees only what the
 * verbs return: per-rollout reward sums (one readback of four sections), the update's statistics,
 * the curiosity MSE, and params / snapshots when asked.
 *
 * train.precision 'tf32' (CUDA only) runs the collector's layers (its TF32 constant) and the
 * learner's matmuls (DevicePpoLearnerInit.precision) on TF32 tensor cores; the curiosity learner
 * stays exact. 'exact' is the parity mode; 'auto' (the default) is tf32 on CUDA, exact elsewhere.
 *
 * Same seed, same schedule as the CPU engine: launch r collects with Philox step base r * L, update
 * r shuffles with epochs r * updateEpochs + e, curiosity round r with epoch r * updateEpochs.
 */
import { capsOf } from '../backend/caps.js';
import type { Backend } from '../backend/types.js';
import { type CollectStats, summarizeRollout } from '../collect/rollout.js';
import { type Config, resolvePrecision } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { PpoDeviceCollector } from '../device/collect.js';
import { DeviceCuriosityLearner } from '../device/curiosity.js';
import { DevicePpoLearner } from '../device/learn.js';
import { collectorCuriosityRollout, collectorRollout } from '../device/rollout.js';
import { DeviceValidator } from '../device/validate.js';
import { envParams } from '../env/params.js';
import { PPO_OUTPUT } from '../kernels/collect_ppo.js';
import { initParams } from '../nets/forward.js';
import { curiosityLayout, NetId, ppoActorLayout, ppoCriticLayout, STATE_DIM } from '../nets/layout.js';
import type { PpoEngine, PpoSnapshot, UpdateStats } from './engine.js';

/** Index of the nets buffer among the collector's device buffers (src/device/collect.ts). */
const NETS = 4;
const OUT_F = 8;
const OUT_I = 9;

export function createDevicePpoEngine(
  backend: Backend,
  cfg: Config,
  market: Market,
  train: SplitRange,
): PpoEngine {
  const seed = cfg.train.seed;
  const { episodes: n, steps } = cfg.rollout;
  const count = n * steps;
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  const curLayout = curiosityLayout();
  const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
  // train.precision tf32 (or auto on CUDA): tensor cores in the collector (its TF32 constant) and
  // the learner's matmuls.
  const precision = resolvePrecision(cfg.train.precision, backend.kind);
  const tf32 = precision === 'tf32';
  if (tf32 && !capsOf(backend).features.tf32TensorCores) {
    throw new Error(
      `train.precision tf32 runs on CUDA tensor cores only, this run's backend is ${backend.kind}: use train.precision exact, or --backend cuda`,
    );
  }
  const collector = new PpoDeviceCollector({
    backend,
    market,
    split: train,
    cfg,
    algo: 'ppo',
    curiosity: curiosityOn,
    ...(tf32 ? { constants: { TF32: 1 } } : {}),
  });
  const learner = new DevicePpoLearner({
    backend,
    actorLayout,
    criticLayout,
    actor: initParams(actorLayout, NetId.Actor, seed),
    critic: initParams(criticLayout, NetId.Critic, seed),
    cfg: cfg.ppo,
    seed,
    precision,
  });
  const curiosity = new DeviceCuriosityLearner({
    backend,
    layout: curLayout,
    params: initParams(curLayout, NetId.Curiosity, seed),
    batch: cfg.env.curiosityBatch,
    lr: cfg.env.curiosityLr,
    weightDecay: cfg.env.curiosityWeightDecay,
    seed,
    stateDim: STATE_DIM,
  });
  const nets = collector.deviceBuffers[NETS];
  const [outF, outI] = [collector.deviceBuffers[OUT_F], collector.deviceBuffers[OUT_I]];
  const rollout = collectorRollout(outF, outI, count);
  const curRollout = collectorCuriosityRollout(outF, outI, n, steps);
  const syncActing = () => learner.copyParamsTo(nets);
  const syncCuriosity = () => curiosity.copyParamsTo(nets, 4 * (actorLayout.size + criticLayout.size));
  syncActing();
  syncCuriosity();
  let collected = false;
  // validate_policy reads the market and the actor from the collector's buffers (one per split).
  const validators = new Map<string, DeviceValidator>();
  const validator = (split: SplitRange) => {
    const key = `${split.start}:${split.end}`;
    let v = validators.get(key);
    if (!v) {
      const b = collector.deviceBuffers;
      v = new DeviceValidator(backend, [b[0], b[1], b[2], b[3], nets], envParams(cfg.env), split);
      validators.set(key, v);
    }
    return v;
  };

  const params = async () => {
    const { actor, critic } = await learner.readParams();
    return { actor, critic, curiosity: await curiosity.readParams() };
  };
  const requireRollout = (verb: string) => {
    if (!collected) throw new Error(`device ppo engine: ${verb} needs a rollout; call collect first`);
  };
  /** One section of the rollout, downloaded alone. */
  const section = async (name: string) => {
    const s = PPO_OUTPUT.sections.find((x) => x.name === name);
    if (!s) throw new Error(`collect_ppo output has no section ${name}`);
    const bytes = await backend.download(
      s.type === 'f32' ? outF : outI,
      4 * s.offset * count,
      4 * s.width * count,
    );
    return s.type === 'f32' ? new Float32Array(bytes) : new Int32Array(bytes);
  };

  return {
    backend: backend.kind,

    async collect(round: number): Promise<CollectStats> {
      collector.stepBase = (round * steps) >>> 0;
      collector.launch();
      collected = true;
      const [components, rewards, dones, truncateds] = await Promise.all(
        ['components', 'rewards', 'dones', 'truncateds'].map(section),
      );
      return summarizeRollout(components, rewards, dones, truncateds, count);
    },

    async update(round: number): Promise<UpdateStats> {
      requireRollout('update');
      const s = await learner.update(rollout, round);
      syncActing();
      return {
        total: s.total,
        policyLoss: s.policyLoss,
        valueLoss: s.valueLoss,
        entropy: s.entropy,
        approxKl: s.approxKl,
        clipFrac: s.clipFrac,
        gradNorm: s.gradNorm,
        samples: s.minibatches * cfg.ppo.minibatch,
      };
    },

    async trainCuriosity(round: number): Promise<number> {
      requireRollout('trainCuriosity');
      const mse = await curiosity.train(curRollout, round * cfg.ppo.updateEpochs);
      syncCuriosity();
      return mse;
    },

    validate: (split, barsPerYear) => validator(split).run(barsPerYear),

    params,

    async snapshot(): Promise<PpoSnapshot> {
      const env = await collector.readEnv();
      const { actor: actorOptim, critic: criticOptim } = await learner.readOptim();
      return {
        params: await params(),
        optim: { actor: actorOptim, critic: criticOptim, curiosity: await curiosity.readOptim() },
        env: { f: env.f.slice(), i: env.i.slice(), window: env.window.slice() },
      };
    },

    async restore(s: PpoSnapshot): Promise<void> {
      learner.writeParams(s.params.actor, s.params.critic);
      learner.writeOptim({ actor: s.optim.actor, critic: s.optim.critic });
      curiosity.writeParams(s.params.curiosity);
      curiosity.writeOptim(s.optim.curiosity);
      const env = await collector.readEnv();
      const put = (dst: { length: number }, src: { length: number }, what: string) => {
        if (src.length !== dst.length) {
          throw new Error(
            `device ppo engine: ${what} has ${src.length} values, this run needs ${dst.length}`,
          );
        }
      };
      put(env.f, s.env.f, 'env floats');
      put(env.i, s.env.i, 'env integers');
      put(env.window, s.env.window, 'env window');
      collector.writeEnv({ ...env, f: s.env.f, i: s.env.i, window: s.env.window });
      syncActing();
      syncCuriosity();
      collected = false;
    },

    destroy() {
      for (const v of validators.values()) v.destroy();
      learner.destroy();
      curiosity.destroy();
      collector.destroy();
    },
  };
}
