import { describe, expect, it } from 'vitest';
import { defaultConfig, type PpoConfig } from '../../../src/config.js';
import { createMlpCache, type Floats, forwardMlpBatch } from '../../../src/learn/mlp.js';
import {
  createPpoWorkspace,
  type PpoLossOptions,
  type PpoMinibatch,
  ppoLossAndGrad,
} from '../../../src/learn/ppo_loss.js';
import { createPpoLearner, type PpoRollout, ppoUpdateReference } from '../../../src/learn/ppo_update.js';
import { forwardMlp, initParams } from '../../../src/nets/forward.js';
import {
  buildLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { checkGradient, uniforms } from './helpers.js';

const opts: PpoLossOptions = { clip: 0.2, valueCoef: 0.5, entropyCoef: 0.01, normalizeAdvantages: true };

function outputsOf(layout: NetLayout, params: Floats, states: Float64Array, n: number): Float64Array {
  const cache = createMlpCache(layout, n, Float64Array);
  cache.acts[0].set(states.subarray(0, n * layout.layers[0].in));
  return Float64Array.from(
    forwardMlpBatch(layout, params, cache, n).subarray(0, n * layout.layers.at(-1)!.out),
  );
}

/** The PPO objective written plainly (as CleanRL's PyTorch lines), from the networks' outputs. */
function referenceLoss(
  actorLayout: NetLayout,
  actor: Floats,
  criticLayout: NetLayout,
  critic: Floats,
  mb: PpoMinibatch,
  o: PpoLossOptions,
) {
  const n = mb.size;
  const k = actorLayout.layers.at(-1)!.out;
  const logits = outputsOf(actorLayout, actor, mb.states as Float64Array, n);
  const values = outputsOf(criticLayout, critic, mb.states as Float64Array, n);
  let adv = Array.from({ length: n }, (_, b) => mb.advantages[b]);
  if (o.normalizeAdvantages) {
    const mean = adv.reduce((s, a) => s + a, 0) / n;
    const std = Math.sqrt(adv.reduce((s, a) => s + (a - mean) ** 2, 0) / (n - 1));
    adv = adv.map((a) => (a - mean) / (std + 1e-8));
  }
  let pg = 0;
  let vl = 0;
  let ent = 0;
  let kl = 0;
  let clipped = 0;
  for (let b = 0; b < n; b++) {
    const row = Array.from(logits.subarray(b * k, (b + 1) * k));
    const z = Math.log(row.reduce((s, l) => s + Math.exp(l), 0));
    const logp = row.map((l) => l - z);
    ent += -logp.reduce((s, lp) => s + Math.exp(lp) * lp, 0);
    const logRatio = logp[mb.actions[b]] - mb.oldLogProbs[b];
    const ratio = Math.exp(logRatio);
    const clippedRatio = Math.min(Math.max(ratio, 1 - o.clip), 1 + o.clip);
    pg += Math.max(-adv[b] * ratio, -adv[b] * clippedRatio);
    vl += (values[b] - mb.returns[b]) ** 2;
    kl += ratio - 1 - logRatio;
    if (Math.abs(ratio - 1) > o.clip) clipped++;
  }
  const policyLoss = pg / n;
  const valueLoss = (0.5 * vl) / n;
  const entropy = ent / n;
  return {
    total: policyLoss + o.valueCoef * valueLoss - o.entropyCoef * entropy,
    policyLoss,
    valueLoss,
    entropy,
    approxKl: kl / n,
    clipFrac: clipped / n,
  };
}

/** A minibatch whose old log-probs are the current ones shifted by up to +/- spread. */
function minibatch(
  actorLayout: NetLayout,
  actor: Floats,
  n: number,
  spread: number,
  stream: number,
): PpoMinibatch {
  const dim = actorLayout.layers[0].in;
  const k = actorLayout.layers.at(-1)!.out;
  const states = uniforms(n * dim, stream, -2, 2);
  const actions = Int32Array.from(uniforms(n, stream + 1, 0, k), Math.floor);
  const logits = outputsOf(actorLayout, actor, states, n);
  const shift = uniforms(n, stream + 2, -spread, spread);
  const oldLogProbs = Float64Array.from({ length: n }, (_, b) => {
    const row = Array.from(logits.subarray(b * k, (b + 1) * k));
    const z = Math.log(row.reduce((s, l) => s + Math.exp(l), 0));
    return row[actions[b]] - z + shift[b];
  });
  return {
    states,
    actions,
    oldLogProbs,
    advantages: uniforms(n, stream + 3, -2, 2),
    returns: uniforms(n, stream + 4, -1, 1),
    size: n,
  };
}

function run(
  actorLayout: NetLayout,
  actor: Floats,
  criticLayout: NetLayout,
  critic: Floats,
  mb: PpoMinibatch,
  o: PpoLossOptions,
) {
  const ws = createPpoWorkspace(actorLayout, criticLayout, mb.size, Float64Array);
  const actorGrad = new Float64Array(actor.length);
  const criticGrad = new Float64Array(critic.length);
  const parts = ppoLossAndGrad(actorLayout, actor, criticLayout, critic, mb, o, ws, actorGrad, criticGrad);
  return { parts, actorGrad, criticGrad };
}

describe('PPO loss', () => {
  it('matches a hand-worked case: uniform policy, constant critic', () => {
    const actorLayout = ppoActorLayout();
    const criticLayout = ppoCriticLayout();
    // Zero output layers: logits 0 (p = 1/45 everywhere), value = the output bias 0.5.
    const actor = Float64Array.from(initParams(actorLayout, NetId.Actor, 1));
    const critic = Float64Array.from(initParams(criticLayout, NetId.Critic, 1));
    const ao = actorLayout.layers.at(-1)!;
    const co = criticLayout.layers.at(-1)!;
    actor.fill(0, ao.wOffset);
    critic.fill(0, co.wOffset);
    critic[co.bOffset] = 0.5;
    const n = 4;
    const mb: PpoMinibatch = {
      states: uniforms(n * 54, 40, -2, 2),
      actions: [0, 7, 44, 7],
      oldLogProbs: new Array(n).fill(-Math.log(45)),
      advantages: [1, -1, 2, 0],
      returns: [0.5, 1.5, -0.5, 0.5],
      size: n,
    };
    const { parts } = run(actorLayout, actor, criticLayout, critic, mb, opts);
    // ratio = 1 everywhere: no clipping, zero KL, policy loss = -mean(normalised A) = 0.
    expect(parts.clipFrac).toBe(0);
    expect(Math.abs(parts.approxKl)).toBeLessThan(1e-15);
    expect(Math.abs(parts.policyLoss)).toBeLessThan(1e-12);
    // Entropy of the uniform over 45 actions; value loss = 0.5 * mean([0, 1, 1, 0]) = 0.25.
    expect(parts.entropy).toBeCloseTo(Math.log(45), 12);
    expect(parts.valueLoss).toBeCloseTo(0.25, 15);
    expect(parts.total).toBeCloseTo(0.5 * 0.25 - 0.01 * Math.log(45), 12);
  });

  const actorLayout = buildLayout('tiny_actor', [
    { name: 'a0', in: 6, out: 8, act: 'relu' },
    { name: 'a1', in: 8, out: 5, act: 'none' },
  ]);
  const criticLayout = buildLayout('tiny_critic', [
    { name: 'c0', in: 6, out: 7, act: 'relu' },
    { name: 'c1', in: 7, out: 1, act: 'none' },
  ]);

  for (const normalizeAdvantages of [true, false]) {
    it(`gives loss parts and gradients that match a plain reference and finite differences (normalise ${normalizeAdvantages})`, () => {
      const o = { ...opts, normalizeAdvantages, entropyCoef: 0.05 };
      const actor = uniforms(actorLayout.size, 50);
      const critic = uniforms(criticLayout.size, 51);
      const mb = minibatch(actorLayout, actor, 12, 0.5, 60);
      const { parts, actorGrad, criticGrad } = run(actorLayout, actor, criticLayout, critic, mb, o);
      const want = referenceLoss(actorLayout, actor, criticLayout, critic, mb, o);
      for (const key of Object.keys(want) as (keyof typeof want)[])
        expect(parts[key]).toBeCloseTo(want[key], 12);
      // Both branches of the clipped surrogate are exercised.
      expect(parts.clipFrac).toBeGreaterThan(0);
      expect(parts.clipFrac).toBeLessThan(1);
      const totalWithActor = (p: Float64Array) =>
        referenceLoss(actorLayout, p, criticLayout, critic, mb, o).total;
      const totalWithCritic = (p: Float64Array) =>
        referenceLoss(actorLayout, actor, criticLayout, p, mb, o).total;
      const everyIndex = (n: number) => Array.from({ length: n }, (_, k) => k);
      const a = checkGradient(actor, actorGrad as Float64Array, everyIndex(actorLayout.size), totalWithActor);
      const c = checkGradient(
        critic,
        criticGrad as Float64Array,
        everyIndex(criticLayout.size),
        totalWithCritic,
      );
      expect(a.worst).toBeLessThan(1e-3);
      expect(c.worst).toBeLessThan(1e-3);
      expect(a.live).toBeGreaterThan(actorLayout.size / 2);
      expect(c.live).toBeGreaterThan(criticLayout.size / 2);
    });
  }

  it('gives gradients that match finite differences on a sample of the real actor and critic params', () => {
    const actorL = ppoActorLayout();
    const criticL = ppoCriticLayout();
    const actor = Float64Array.from(initParams(actorL, NetId.Actor, 2), (v) => 1.5 * v);
    const critic = Float64Array.from(initParams(criticL, NetId.Critic, 2), (v) => 1.5 * v);
    const mb = minibatch(actorL, actor, 4, 0.4, 70);
    const { actorGrad, criticGrad } = run(actorL, actor, criticL, critic, mb, opts);
    const sample = (layout: NetLayout, stream: number) => {
      const r = uniforms(8 * layout.layers.length, stream, 0, 1);
      return layout.layers.flatMap((l, i) => [
        ...Array.from({ length: 6 }, (_, s) => l.wOffset + Math.floor(r[8 * i + s] * l.in * l.out)),
        ...Array.from({ length: 2 }, (_, s) => l.bOffset + Math.floor(r[8 * i + 6 + s] * l.out)),
      ]);
    };
    const a = checkGradient(
      actor,
      actorGrad as Float64Array,
      sample(actorL, 80),
      (p) => referenceLoss(actorL, p, criticL, critic, mb, opts).total,
    );
    const c = checkGradient(
      critic,
      criticGrad as Float64Array,
      sample(criticL, 81),
      (p) => referenceLoss(actorL, actor, criticL, p, mb, opts).total,
    );
    expect(a.worst).toBeLessThan(1e-3);
    expect(c.worst).toBeLessThan(1e-3);
    expect(a.live).toBeGreaterThan(8);
    expect(c.live).toBeGreaterThan(16);
  });

  it('rejects an action outside the policy', () => {
    const actor = uniforms(actorLayout.size, 50);
    const critic = uniforms(criticLayout.size, 51);
    const mb = { ...minibatch(actorLayout, actor, 3, 0, 90), actions: [0, 5, 1] };
    expect(() => run(actorLayout, actor, criticLayout, critic, mb, opts)).toThrow(
      /action 5, outside \[0, 5\)/,
    );
  });
});

describe('ppoUpdateReference', () => {
  const count = 64;
  const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 32, updateEpochs: 2, lr: 1e-3 };
  const good = 7;
  // Small nets with the real input and output sizes, for the tests where size does not matter.
  const smallActor = buildLayout('small_actor', [
    { name: 'a0', in: 54, out: 16, act: 'relu' },
    { name: 'a1', in: 16, out: 45, act: 'none' },
  ]);
  const smallCritic = buildLayout('small_critic', [
    { name: 'c0', in: 54, out: 16, act: 'relu' },
    { name: 'c1', in: 16, out: 1, act: 'none' },
  ]);

  function logProbs(
    layout: NetLayout,
    actor: Float32Array,
    states: Float32Array,
    actions: ArrayLike<number>,
  ) {
    const logits = new Float32Array(45);
    return Float32Array.from({ length: count }, (_, b) => {
      forwardMlp(layout, actor, states.subarray(b * 54, (b + 1) * 54), logits);
      return logits[actions[b]] - Math.log(logits.reduce((t, l) => t + Math.exp(l), 0));
    });
  }

  /** A rollout where action 7 earns +1 advantage and every other action -0.2; returns are 1. */
  function rollout(layout: NetLayout, actor: Float32Array): PpoRollout {
    const states = Float32Array.from(uniforms(count * 54, 100, -2, 2));
    const actions = Int32Array.from(uniforms(count, 101, 0, 45), Math.floor);
    for (let b = 0; b < count; b += 4) actions[b] = good;
    return {
      states,
      actions,
      logProbs: logProbs(layout, actor, states, actions),
      advantages: Float32Array.from(actions, (a) => (a === good ? 1 : -0.2)),
      returns: new Float32Array(count).fill(1),
      count,
    };
  }

  function meanLogProbOfGood(layout: NetLayout, actor: Float32Array, states: Float32Array): number {
    const lp = logProbs(layout, actor, states, new Array(count).fill(good));
    return lp.reduce((s, x) => s + x, 0) / count;
  }

  function fresh(actorL: NetLayout, criticL: NetLayout) {
    return createPpoLearner(
      actorL,
      initParams(actorL, NetId.Actor, 3),
      criticL,
      initParams(criticL, NetId.Critic, 3),
    );
  }

  it('on the real nets: epochs x floor(count / minibatch) Adam steps, policy moves toward the advantage, critic toward the returns', () => {
    const learner = fresh(ppoActorLayout(), ppoCriticLayout());
    const actor = learner.actor as Float32Array;
    const data = rollout(learner.actorLayout, actor);
    const before = meanLogProbOfGood(learner.actorLayout, actor, data.states as Float32Array);
    const first = ppoUpdateReference(learner, data, cfg, 1, 0);
    expect(first.minibatches).toBe(4);
    expect(learner.actorAdam.step).toBe(4);
    expect(learner.criticAdam.step).toBe(4);
    const second = ppoUpdateReference(learner, data, cfg, 1, 1);
    expect(meanLogProbOfGood(learner.actorLayout, actor, data.states as Float32Array)).toBeGreaterThan(
      before + 0.05,
    );
    expect(second.valueLoss).toBeLessThan(first.valueLoss);
    for (const s of [first, second]) {
      for (const v of Object.values(s)) expect(Number.isFinite(v)).toBe(true);
      expect(s.gradNorm).toBeGreaterThan(0);
      expect(s.approxKl).toBeGreaterThanOrEqual(0);
    }
  });

  it('starts its first epoch at the collection policy: no clipping, KL at rounding level', () => {
    const learner = fresh(smallActor, smallCritic);
    const one = { ...cfg, updateEpochs: 1, minibatch: count };
    const stats = ppoUpdateReference(learner, rollout(smallActor, learner.actor as Float32Array), one, 1, 0);
    // Only the f32 rounding of the stored log-probs separates the two (KL ~ 1e-14).
    expect(Math.abs(stats.approxKl)).toBeLessThan(1e-12);
    expect(stats.clipFrac).toBe(0);
  });

  it('is bit-for-bit reproducible for a seed and depends on it', () => {
    const results = [1, 1, 2].map((seed) => {
      const learner = fresh(smallActor, smallCritic);
      ppoUpdateReference(learner, rollout(smallActor, learner.actor as Float32Array), cfg, seed, 0);
      return Buffer.from((learner.actor as Float32Array).buffer);
    });
    expect(results[0].equals(results[1])).toBe(true);
    expect(results[0].equals(results[2])).toBe(false);
  });

  it('refuses a rollout smaller than one minibatch', () => {
    const learner = fresh(smallActor, smallCritic);
    const data = { ...rollout(smallActor, learner.actor as Float32Array), count: 31 };
    expect(() => ppoUpdateReference(learner, data, cfg, 1, 0)).toThrow(
      /31 samples cannot fill one minibatch of 32/,
    );
  });
});
