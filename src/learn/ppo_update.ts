/**
 * The whole PPO update on the CPU, reading top to bottom (SPEC 9): for each of `updateEpochs`
 * epochs, the rollout's count = N * L samples are permuted (shuffle.ts, from Philox, so a GPU
 * computes the same order) and cut into floor(count / minibatch) minibatches of exactly
 * `minibatch` samples (the remainder, a different set each epoch, sits that epoch out, which
 * keeps every dispatch the same size); per minibatch: loss and gradients (ppo_loss.ts), one
 * global gradient-norm clip over the actor and the critic together (as CleanRL clips
 * `agent.parameters()`), then Adam on each network with the shared step count.
 */

import type { PpoConfig } from '../config.js';
import type { NetLayout } from '../nets/layout.js';
import { finish } from '../ticker.js';
import { ctorOf, type Floats } from './mlp.js';
import { type AdamState, adamStep, clipGradNorm, createAdam } from './optim.js';
import { createPpoWorkspace, type PpoLossParts, type PpoWorkspace, ppoLossAndGrad } from './ppo_loss.js';
import { shuffleIndex } from './shuffle.js';

export interface PpoRollout {
  /** `[count, stateDim]` row-major. */
  states: Floats;
  actions: ArrayLike<number>;
  logProbs: ArrayLike<number>;
  advantages: ArrayLike<number>;
  returns: ArrayLike<number>;
  /** Samples in the rollout (N * L). */
  count: number;
}

export interface PpoLearner {
  actorLayout: NetLayout;
  criticLayout: NetLayout;
  actor: Floats;
  critic: Floats;
  actorGrad: Floats;
  criticGrad: Floats;
  actorAdam: AdamState;
  criticAdam: AdamState;
  /** Minibatch buffers, made for the first minibatch size used. */
  workspace?: PpoWorkspace;
}

/** A learner over these params (updated in place), in their precision. */
export function createPpoLearner(
  actorLayout: NetLayout,
  actor: Floats,
  criticLayout: NetLayout,
  critic: Floats,
): PpoLearner {
  const ctor = ctorOf(actor);
  if (ctorOf(critic) !== ctor) throw new Error('ppo learner: actor and critic params must share a precision');
  return {
    actorLayout,
    criticLayout,
    actor,
    critic,
    actorGrad: new ctor(actor.length),
    criticGrad: new ctor(critic.length),
    actorAdam: createAdam(actor.length, ctor),
    criticAdam: createAdam(critic.length, ctor),
  };
}

/** Means over the update's minibatches. */
export interface PpoUpdateStats extends PpoLossParts {
  /** Global actor+critic gradient norm before clipping. */
  gradNorm: number;
  minibatches: number;
}

/**
 * Runs one PPO update in place on `learner`. `update` is the index of this update in the run
 * (0, 1, ...): the shuffle epoch of its epoch e is update * updateEpochs + e.
 */
export function ppoUpdateReference(
  learner: PpoLearner,
  rollout: PpoRollout,
  cfg: PpoConfig,
  seed: number,
  update: number,
): PpoUpdateStats {
  return finish(ppoUpdateSteps(learner, rollout, cfg, seed, update));
}

/**
 * ppoUpdateReference one minibatch step at a time: yields the minibatch steps done after each,
 * returns the update's statistics (the CPU engine hands the event loop a turn between steps).
 */
export function* ppoUpdateSteps(
  learner: PpoLearner,
  rollout: PpoRollout,
  cfg: PpoConfig,
  seed: number,
  update: number,
): Generator<number, PpoUpdateStats> {
  const { actorLayout, criticLayout } = learner;
  const size = cfg.minibatch;
  const perEpoch = Math.floor(rollout.count / size);
  if (perEpoch < 1) {
    throw new Error(`ppo update: ${rollout.count} samples cannot fill one minibatch of ${size}`);
  }
  const stateDim = actorLayout.layers[0].in;
  if (rollout.states.length < rollout.count * stateDim) {
    throw new Error(
      `ppo update: states hold ${rollout.states.length} floats, ${rollout.count} samples need more`,
    );
  }
  const ctor = ctorOf(learner.actor);
  if (!learner.workspace || learner.workspace.capacity !== size) {
    learner.workspace = createPpoWorkspace(actorLayout, criticLayout, size, ctor);
  }
  const ws = learner.workspace;
  const mb = {
    states: new ctor(size * stateDim),
    actions: new Int32Array(size),
    oldLogProbs: new Float64Array(size),
    advantages: new Float64Array(size),
    returns: new Float64Array(size),
    size,
  };
  const opts = {
    clip: cfg.clip,
    valueCoef: cfg.valueCoef,
    entropyCoef: cfg.entropyCoef,
    normalizeAdvantages: cfg.normalizeAdvantages,
  };
  const sums: PpoUpdateStats = {
    total: 0,
    policyLoss: 0,
    valueLoss: 0,
    entropy: 0,
    approxKl: 0,
    clipFrac: 0,
    gradNorm: 0,
    minibatches: 0,
  };
  for (let e = 0; e < cfg.updateEpochs; e++) {
    const shuffleEpoch = update * cfg.updateEpochs + e;
    for (let k = 0; k < perEpoch; k++) {
      for (let j = 0; j < size; j++) {
        const s = shuffleIndex(k * size + j, rollout.count, shuffleEpoch, seed);
        mb.states.set(rollout.states.subarray(s * stateDim, (s + 1) * stateDim), j * stateDim);
        mb.actions[j] = rollout.actions[s];
        mb.oldLogProbs[j] = rollout.logProbs[s];
        mb.advantages[j] = rollout.advantages[s];
        mb.returns[j] = rollout.returns[s];
      }
      const parts = ppoLossAndGrad(
        actorLayout,
        learner.actor,
        criticLayout,
        learner.critic,
        mb,
        opts,
        ws,
        learner.actorGrad,
        learner.criticGrad,
      );
      const gradNorm = clipGradNorm([learner.actorGrad, learner.criticGrad], cfg.maxGradNorm);
      adamStep(learner.actor, learner.actorGrad, learner.actorAdam, { lr: cfg.lr });
      adamStep(learner.critic, learner.criticGrad, learner.criticAdam, { lr: cfg.lr });
      sums.total += parts.total;
      sums.policyLoss += parts.policyLoss;
      sums.valueLoss += parts.valueLoss;
      sums.entropy += parts.entropy;
      sums.approxKl += parts.approxKl;
      sums.clipFrac += parts.clipFrac;
      sums.gradNorm += gradNorm;
      sums.minibatches++;
      yield sums.minibatches;
    }
  }
  const n = sums.minibatches;
  return {
    total: sums.total / n,
    policyLoss: sums.policyLoss / n,
    valueLoss: sums.valueLoss / n,
    entropy: sums.entropy / n,
    approxKl: sums.approxKl / n,
    clipFrac: sums.clipFrac / n,
    gradNorm: sums.gradNorm / n,
    minibatches: n,
  };
}
