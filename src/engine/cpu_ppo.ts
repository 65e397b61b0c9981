/**
 * The CPU PPO engine: the TS references (collectPpo, ppoUpdateReference, curiosity AdamW) behind
 * the engine verbs. Bit-for-bit reproducible for a seed: every random draw is a Philox counter
 * derived from the round, the episode slot and the step (SPEC 7).
 *
 * Curiosity batch of round r: the rollout rows taken in the order of the permutation of the
 * round's first PPO update epoch (src/learn/shuffle.ts, epoch r * updateEpochs), keeping rows
 * whose next row is the same episode's next bar (not done, not truncated, not the slot's last
 * step), until `curiosityBatch` rows or the rollout runs out. Input = state[0..32) ++
 * one-hot(category), target = the next row's state[0..32) (the features of bar t + 1).
 */
import { collectPpo, type PpoLaunch } from '../collect/ppo.js';
import { createPpoRollout } from '../collect/rollout.js';
import type { Config } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { category } from '../env/actions.js';
import type { CuriosityModel } from '../env/curiosity.js';
import { envParams } from '../env/params.js';
import { createEnv } from '../env/state.js';
import { curiosityTrainStep } from '../learn/curiosity.js';
import { createMlpCache } from '../learn/mlp.js';
import { type AdamState, createAdam } from '../learn/optim.js';
import { createPpoLearner, ppoUpdateSteps } from '../learn/ppo_update.js';
import { shuffleIndex } from '../learn/shuffle.js';
import { initParams } from '../nets/forward.js';
import {
  CURIOSITY_OUT,
  curiosityLayout,
  NetId,
  ppoActorLayout,
  ppoCriticLayout,
  STATE_DIM,
} from '../nets/layout.js';
import { finishTicked, type StepProgress } from '../ticker.js';
import {
  type CollectStats,
  type PpoEngine,
  type PpoSnapshot,
  summarizeRollout,
  type UpdateStats,
} from './engine.js';

export function createCpuPpoEngine(cfg: Config, market: Market, train: SplitRange): PpoEngine {
  const seed = cfg.train.seed;
  const { episodes: n, steps } = cfg.rollout;
  const params = envParams(cfg.env);
  const env = createEnv(market, train, params, n, seed);
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  const learner = createPpoLearner(
    actorLayout,
    initParams(actorLayout, NetId.Actor, seed),
    criticLayout,
    initParams(criticLayout, NetId.Critic, seed),
  );
  const curiosity: CuriosityModel = {
    layout: curiosityLayout(),
    params: initParams(curiosityLayout(), NetId.Curiosity, seed),
  };
  const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
  let curiosityAdam: AdamState = createAdam(curiosity.params.length);
  const batch = cfg.env.curiosityBatch;
  const cache = createMlpCache(curiosity.layout, batch);
  const targets = new Float32Array(batch * CURIOSITY_OUT);
  const grad = new Float32Array(curiosity.params.length);
  const dPred = new Float32Array(batch * CURIOSITY_OUT);
  const rollout = createPpoRollout(n, steps);
  const count = n * steps;
  let collected = false;

  const requireRollout = (verb: string) => {
    if (!collected) throw new Error(`cpu ppo engine: ${verb} needs a rollout; call collect first`);
  };

  return {
    backend: 'cpu',

    async collect(round: number): Promise<CollectStats> {
      const launch: PpoLaunch = {
        steps,
        stepBase: round * steps,
        gamma: cfg.ppo.gamma,
        lambda: cfg.ppo.lambda,
      };
      const nets = {
        actorLayout,
        actor: learner.actor as Float32Array,
        criticLayout,
        critic: learner.critic as Float32Array,
      };
      collectPpo(env, market, params, nets, curiosityOn ? curiosity : null, launch, rollout);
      collected = true;
      return summarizeRollout(rollout.components, rollout.rewards, rollout.dones, rollout.truncateds, count);
    },

    async update(round: number, onStep?: StepProgress): Promise<UpdateStats> {
      requireRollout('update');
      const steps = ppoUpdateSteps(
        learner,
        {
          states: rollout.states,
          actions: rollout.actions,
          logProbs: rollout.logProbs,
          advantages: rollout.advantages,
          returns: rollout.returns,
          count,
        },
        cfg.ppo,
        seed,
        round,
      );
      const s = await finishTicked(
        steps,
        cfg.ppo.updateEpochs * Math.floor(count / cfg.ppo.minibatch),
        onStep,
      );
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
      const input = cache.acts[0];
      const inDim = curiosity.layout.layers[0].in;
      const epoch = round * cfg.ppo.updateEpochs;
      let rows = 0;
      for (let j = 0; j < count && rows < batch; j++) {
        const idx = shuffleIndex(j, count, epoch, seed);
        if (rollout.dones[idx] || rollout.truncateds[idx] || idx % steps === steps - 1) continue;
        const s = idx * STATE_DIM;
        const o = rows * inDim;
        for (let k = 0; k < CURIOSITY_OUT; k++) {
          input[o + k] = rollout.states[s + k];
          targets[rows * CURIOSITY_OUT + k] = rollout.states[s + STATE_DIM + k];
        }
        const cat = category(rollout.actions[idx]);
        for (let k = 0; k < 3; k++) input[o + CURIOSITY_OUT + k] = k === cat ? 1 : 0;
        rows++;
      }
      if (rows === 0) return 0;
      return curiosityTrainStep(
        curiosity.layout,
        curiosity.params,
        curiosityAdam,
        cache,
        targets,
        rows,
        grad,
        dPred,
        {
          lr: cfg.env.curiosityLr,
          weightDecay: cfg.env.curiosityWeightDecay,
        },
      );
    },

    async params() {
      return {
        actor: learner.actor as Float32Array,
        critic: learner.critic as Float32Array,
        curiosity: curiosity.params,
      };
    },

    async snapshot(): Promise<PpoSnapshot> {
      const adam = (a: AdamState) => ({
        m: (a.m as Float32Array).slice(),
        v: (a.v as Float32Array).slice(),
        step: a.step,
      });
      return {
        params: {
          actor: (learner.actor as Float32Array).slice(),
          critic: (learner.critic as Float32Array).slice(),
          curiosity: curiosity.params.slice(),
        },
        optim: {
          actor: adam(learner.actorAdam),
          critic: adam(learner.criticAdam),
          curiosity: adam(curiosityAdam),
        },
        env: { f: env.f.slice(), i: env.i.slice(), window: env.window.slice() },
      };
    },

    async restore(s: PpoSnapshot): Promise<void> {
      const put = (
        dst: { length: number; set(a: ArrayLike<number>): void },
        src: ArrayLike<number>,
        what: string,
      ) => {
        if (src.length !== dst.length) {
          throw new Error(`cpu ppo engine: ${what} has ${src.length} values, this run needs ${dst.length}`);
        }
        dst.set(src);
      };
      put(learner.actor, s.params.actor, 'actor');
      put(learner.critic, s.params.critic, 'critic');
      put(curiosity.params, s.params.curiosity, 'curiosity');
      const adam = (dst: AdamState, src: PpoSnapshot['optim']['actor'], what: string) => {
        put(dst.m, src.m, `${what} Adam m`);
        put(dst.v, src.v, `${what} Adam v`);
        dst.step = src.step;
      };
      adam(learner.actorAdam, s.optim.actor, 'actor');
      adam(learner.criticAdam, s.optim.critic, 'critic');
      curiosityAdam = createAdam(curiosity.params.length);
      adam(curiosityAdam, s.optim.curiosity, 'curiosity');
      put(env.f, s.env.f, 'env floats');
      put(env.i, s.env.i, 'env integers');
      put(env.window, s.env.window, 'env window');
      collected = false;
    },

    destroy() {},
  };
}
