/**
 * PPO loss on one minibatch and its gradients for the actor and the critic (separate param
 * buffers): the TS reference of the `ppo_loss` kernel. CleanRL's formulation:
 *
 *   A      = (adv - mean(adv)) / (std(adv) + 1e-8)   per minibatch when normalizeAdvantages;
 *            std is the unbiased one (torch.std's default), taken as 0 for a single sample
 *   logp   = log_softmax(actor(s)); newlp = logp[action]; ratio = exp(newlp - oldlp)
 *   policy = mean(max(-A * ratio, -A * clamp(ratio, 1 - clip, 1 + clip)))
 *   value  = 0.5 * mean((critic(s) - R)^2)            unclipped (CleanRL's clip_vloss = False:
 *            value clipping ties the critic to its old scale and rarely helps)
 *   entropy = mean(-sum_k p_k logp_k)
 *   total  = policy + valueCoef * value - entropyCoef * entropy
 *   approxKl = mean((ratio - 1) - (newlp - oldlp)) (the k3 estimator), clipFrac = mean(|ratio - 1| > clip)
 *
 * Gradients per sample (B = minibatch size), w.r.t. the logits and the value:
 *   dpolicy/dnewlp = (-A if -A*ratio >= -A*clamp(ratio) else 0) * ratio / B
 *   dlogit_k = dnewlp * ([k == action] - p_k) + entropyCoef * p_k * (logp_k + H) / B
 *   dvalue   = valueCoef * (V - R) / B
 * The loss arithmetic runs in f64 from the stored (f32) logits and values and is rounded when
 * stored; only the matmuls follow the buffers' precision (see mlp.ts).
 */
import type { NetLayout } from '../nets/layout.js';
import {
  backwardMlp,
  createMlpCache,
  type Floats,
  type FloatsCtor,
  forwardMlpBatch,
  type MlpCache,
} from './mlp.js';

export interface PpoMinibatch {
  /** `[size, stateDim]` row-major. */
  states: Floats;
  /** Action index per sample, in [0, number of logits). */
  actions: ArrayLike<number>;
  /** Log-probability of the action under the policy that collected it. */
  oldLogProbs: ArrayLike<number>;
  advantages: ArrayLike<number>;
  /** Value targets (GAE advantages + old values). */
  returns: ArrayLike<number>;
  size: number;
}

export interface PpoLossOptions {
  clip: number;
  valueCoef: number;
  entropyCoef: number;
  normalizeAdvantages: boolean;
}

export interface PpoLossParts {
  total: number;
  policyLoss: number;
  valueLoss: number;
  entropy: number;
  approxKl: number;
  clipFrac: number;
}

export interface PpoWorkspace {
  actor: MlpCache;
  critic: MlpCache;
  dLogits: Floats;
  dValue: Floats;
  capacity: number;
}

export function createPpoWorkspace(
  actorLayout: NetLayout,
  criticLayout: NetLayout,
  capacity: number,
  ctor: FloatsCtor = Float32Array,
): PpoWorkspace {
  const nActions = actorLayout.layers[actorLayout.layers.length - 1].out;
  const criticOut = criticLayout.layers[criticLayout.layers.length - 1].out;
  if (criticOut !== 1)
    throw new Error(`${criticLayout.kind}: the critic must output one value, not ${criticOut}`);
  if (actorLayout.layers[0].in !== criticLayout.layers[0].in) {
    throw new Error(`${actorLayout.kind} and ${criticLayout.kind} read states of different sizes`);
  }
  return {
    actor: createMlpCache(actorLayout, capacity, ctor),
    critic: createMlpCache(criticLayout, capacity, ctor),
    dLogits: new ctor(capacity * nActions),
    dValue: new ctor(capacity),
    capacity,
  };
}

/** Normalisation applied to the minibatch's advantages: A' = (A - mean) * scale. */
function advantageStats(
  adv: ArrayLike<number>,
  n: number,
  normalize: boolean,
): { mean: number; scale: number } {
  if (!normalize) return { mean: 0, scale: 1 };
  let mean = 0;
  for (let b = 0; b < n; b++) mean += adv[b];
  mean /= n;
  let ss = 0;
  for (let b = 0; b < n; b++) ss += (adv[b] - mean) ** 2;
  const std = n > 1 ? Math.sqrt(ss / (n - 1)) : 0;
  return { mean, scale: 1 / (std + 1e-8) };
}

/**
 * Loss parts of the minibatch; overwrites `actorGrad` and `criticGrad` with the gradients of
 * `total` w.r.t. the actor's and the critic's params.
 */
export function ppoLossAndGrad(
  actorLayout: NetLayout,
  actor: Floats,
  criticLayout: NetLayout,
  critic: Floats,
  mb: PpoMinibatch,
  opts: PpoLossOptions,
  ws: PpoWorkspace,
  actorGrad: Floats,
  criticGrad: Floats,
): PpoLossParts {
  const n = mb.size;
  const stateDim = actorLayout.layers[0].in;
  const nActions = actorLayout.layers[actorLayout.layers.length - 1].out;
  if (!Number.isInteger(n) || n < 1 || n > ws.capacity) {
    throw new Error(`ppo loss: minibatch of ${n} outside the workspace's 1..${ws.capacity}`);
  }
  if (mb.states.length < n * stateDim) {
    throw new Error(`ppo loss: states hold ${mb.states.length} floats, ${n} samples need ${n * stateDim}`);
  }
  ws.actor.acts[0].set(mb.states.subarray(0, n * stateDim));
  ws.critic.acts[0].set(mb.states.subarray(0, n * stateDim));
  const logits = forwardMlpBatch(actorLayout, actor, ws.actor, n);
  const values = forwardMlpBatch(criticLayout, critic, ws.critic, n);

  const { clip, valueCoef, entropyCoef } = opts;
  const { mean, scale } = advantageStats(mb.advantages, n, opts.normalizeAdvantages);
  let policySum = 0;
  let valueSum = 0;
  let entropySum = 0;
  let klSum = 0;
  let clipped = 0;
  const dLogits = ws.dLogits;
  for (let b = 0; b < n; b++) {
    const action = mb.actions[b];
    if (!Number.isInteger(action) || action < 0 || action >= nActions) {
      throw new Error(`ppo loss: sample ${b} has action ${action}, outside [0, ${nActions})`);
    }
    const base = b * nActions;
    let max = Number.NEGATIVE_INFINITY;
    for (let k = 0; k < nActions; k++) max = Math.max(max, logits[base + k]);
    let sumExp = 0;
    for (let k = 0; k < nActions; k++) sumExp += Math.exp(logits[base + k] - max);
    const lse = max + Math.log(sumExp);
    let entropy = 0;
    for (let k = 0; k < nActions; k++) {
      const logp = logits[base + k] - lse;
      entropy -= Math.exp(logp) * logp;
    }
    const newLp = logits[base + action] - lse;
    const logRatio = newLp - mb.oldLogProbs[b];
    const ratio = Math.exp(logRatio);
    const adv = (mb.advantages[b] - mean) * scale;
    const unclipped = -adv * ratio;
    const clippedTerm = -adv * Math.min(Math.max(ratio, 1 - clip), 1 + clip);
    policySum += Math.max(unclipped, clippedTerm);
    entropySum += entropy;
    klSum += ratio - 1 - logRatio;
    if (Math.abs(ratio - 1) > clip) clipped++;
    const dNewLp = unclipped >= clippedTerm ? (-adv * ratio) / n : 0;
    for (let k = 0; k < nActions; k++) {
      const logp = logits[base + k] - lse;
      const p = Math.exp(logp);
      dLogits[base + k] = dNewLp * ((k === action ? 1 : 0) - p) + (entropyCoef * p * (logp + entropy)) / n;
    }
    const err = values[b] - mb.returns[b];
    valueSum += err * err;
    ws.dValue[b] = (valueCoef * err) / n;
  }
  backwardMlp(actorLayout, actor, ws.actor, dLogits, n, actorGrad);
  backwardMlp(criticLayout, critic, ws.critic, ws.dValue, n, criticGrad);
  const policyLoss = policySum / n;
  const valueLoss = (0.5 * valueSum) / n;
  const entropy = entropySum / n;
  return {
    total: policyLoss + valueCoef * valueLoss - entropyCoef * entropy,
    policyLoss,
    valueLoss,
    entropy,
    approxKl: klSum / n,
    clipFrac: clipped / n,
  };
}
