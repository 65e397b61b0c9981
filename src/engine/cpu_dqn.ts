/**
 * The CPU DQN-family engine (`--algo dqn|c51|iqn --backend cpu`): the TS references behind the
 * engine verbs. collectDqn (epsilon-greedy on the online net) -> insertRollout (n-step folding)
 * -> perInsert (max priority) -> dqnTrainStep x dqn.stepsPerEpoch. Bit-for-bit reproducible for
 * a seed: every random draw is a Philox counter of the round, slot, step or train step.
 *
 * Curiosity (when the bonus is on): src/engine/dqn_curiosity.ts.
 */
import { collectDqn, type DqnNets } from '../collect/dqn.js';
import { createDqnRollout } from '../collect/rollout.js';
import type { Config } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { envParams } from '../env/params.js';
import { createEnv } from '../env/state.js';
import { c51Support, createDqnLearner, dqnTrainStep, headOf } from '../learn/dqn_update.js';
import type { AdamState } from '../learn/optim.js';
import { createPer, perBeta, perInsert } from '../learn/per.js';
import { createReplay, insertRollout, REPLAY_ROW_BYTES } from '../learn/replay.js';
import { initParams } from '../nets/forward.js';
import { duelingLayout, NetId } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import { type StepProgress, stepTicker } from '../ticker.js';
import { createHostCuriosity } from './dqn_curiosity.js';
import type { DqnEngine, DqnSnapshot, DqnTrainStats } from './dqn_engine.js';
import { type CollectStats, summarizeRollout } from './engine.js';

/** Largest replay a host-side replay allocates (bytes). */
const MAX_REPLAY_BYTES = 4 * 2 ** 30;

/** Refuses a dqn.replayCapacity whose host replay would pass MAX_REPLAY_BYTES. */
export function assertHostReplayFits(capacity: number): void {
  const bytes = capacity * REPLAY_ROW_BYTES;
  if (bytes > MAX_REPLAY_BYTES) {
    throw new Error(
      `dqn.replayCapacity ${capacity} needs ${(bytes / 2 ** 30).toFixed(1)} GiB of replay on the host ` +
        `(limit ${MAX_REPLAY_BYTES / 2 ** 30} GiB): lower dqn.replayCapacity`,
    );
  }
}

export function createCpuDqnEngine(cfg: Config, market: Market, train: SplitRange): DqnEngine {
  const seed = cfg.train.seed;
  const key = seedToKey(seed);
  const q = cfg.dqn;
  const { episodes: n, steps } = cfg.rollout;
  assertHostReplayFits(q.replayCapacity);
  const params = envParams(cfg.env);
  const env = createEnv(market, train, params, n, seed);
  const head = headOf(cfg.train.algo);
  const layout = duelingLayout(head, q.atoms, q.iqnEmbed);
  const learner = createDqnLearner(head, q, initParams(layout, NetId.QOnline, seed));
  const replay = createReplay(q.replayCapacity);
  const per = createPer(q.replayCapacity, q.priorityAlpha, q.priorityEps);
  const nets: DqnNets = {
    head,
    layout,
    online: learner.online as Float32Array,
    support: c51Support(q),
    actTaus: q.iqnActTau,
  };
  const curiosity = createHostCuriosity(cfg);
  const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
  const rollout = createDqnRollout(n, steps);
  const count = n * steps;
  let collected = false;

  return {
    backend: 'cpu',

    async collect(round: number, epsilon: number): Promise<CollectStats> {
      const launch = { steps, epsilon, stepBase: round * steps, gamma: q.gamma };
      collectDqn(env, market, params, nets, curiosityOn ? curiosity.model : null, launch, rollout);
      const { first, count: added } = insertRollout(replay, rollout, q.gamma, q.nStep);
      perInsert(per, first, added);
      collected = true;
      return summarizeRollout(rollout.components, rollout.rewards, rollout.dones, rollout.truncateds, count);
    },

    async train(_round: number, onStep?: StepProgress): Promise<DqnTrainStats> {
      const out: DqnTrainStats = { steps: 0, loss: 0, gradNorm: 0, td: 0, beta: 0, replaySize: replay.size };
      if (replay.size < q.batch) return out;
      const tick = stepTicker(q.stepsPerEpoch, onStep);
      for (let k = 0; k < q.stepsPerEpoch; k++) {
        out.beta = perBeta(q.betaStart, q.betaEnd, learner.steps, q.betaEpochs * q.stepsPerEpoch);
        const s = dqnTrainStep(learner, replay, per, key, out.beta);
        out.loss += s.loss;
        out.gradNorm += s.gradNorm;
        out.td += s.td;
        out.steps++;
        // A diverged step wrote non-finite priorities, which the next one cannot sample from: stop
        // here, and the trainer reports the non-finite averages as a divergence.
        if (!Number.isFinite(s.loss + s.gradNorm + s.td)) break;
        await tick(out.steps);
      }
      out.loss /= out.steps;
      out.gradNorm /= out.steps;
      out.td /= out.steps;
      return out;
    },

    async trainCuriosity(round: number): Promise<number> {
      if (!collected) throw new Error('cpu dqn engine: trainCuriosity needs a launch; call collect first');
      return curiosity.train(rollout, round);
    },

    async params() {
      return {
        online: learner.online as Float32Array,
        target: learner.target as Float32Array,
        curiosity: curiosity.model.params,
      };
    },

    async snapshot(withReplay = true): Promise<DqnSnapshot> {
      const moments = (a: AdamState) => ({
        m: (a.m as Float32Array).slice(),
        v: (a.v as Float32Array).slice(),
        step: a.step,
      });
      return {
        params: {
          online: (learner.online as Float32Array).slice(),
          target: (learner.target as Float32Array).slice(),
          curiosity: curiosity.model.params.slice(),
        },
        optim: { online: moments(learner.adam), curiosity: moments(curiosity.adam) },
        env: { f: env.f.slice(), i: env.i.slice(), window: env.window.slice() },
        trainSteps: learner.steps,
        replay: {
          f: withReplay ? replay.f.slice() : new Float32Array(0),
          i: withReplay ? replay.i.slice() : new Int32Array(0),
          head: replay.head,
          size: replay.size,
        },
        per: { tree: withReplay ? per.tree.slice() : new Float32Array(0), maxPriority: per.maxPriority },
      };
    },

    async restore(s: DqnSnapshot): Promise<void> {
      const put = (
        dst: { length: number; set(a: ArrayLike<number>): void },
        src: ArrayLike<number>,
        what: string,
      ) => {
        if (src.length !== dst.length) {
          throw new Error(`cpu dqn engine: ${what} has ${src.length} values, this run needs ${dst.length}`);
        }
        dst.set(src);
      };
      put(learner.online, s.params.online, 'online');
      put(learner.target, s.params.target, 'target');
      put(curiosity.model.params, s.params.curiosity, 'curiosity');
      put(learner.adam.m, s.optim.online.m, 'online Adam m');
      put(learner.adam.v, s.optim.online.v, 'online Adam v');
      learner.adam.step = s.optim.online.step;
      put(curiosity.adam.m, s.optim.curiosity.m, 'curiosity AdamW m');
      put(curiosity.adam.v, s.optim.curiosity.v, 'curiosity AdamW v');
      curiosity.adam.step = s.optim.curiosity.step;
      put(env.f, s.env.f, 'env floats');
      put(env.i, s.env.i, 'env integers');
      put(env.window, s.env.window, 'env window');
      learner.steps = s.trainSteps;
      put(replay.f, s.replay.f, 'replay rows');
      put(replay.i, s.replay.i, 'replay actions');
      replay.head = s.replay.head;
      replay.size = s.replay.size;
      put(per.tree, s.per.tree, 'PER tree');
      per.maxPriority = s.per.maxPriority;
      collected = false;
    },

    destroy() {},
  };
}
