/**
 * The DQN-family losses on the dueling net's head outputs (src/learn/dueling.ts), the TS
 * reference of the learner's loss kernels. Each takes a batch of B replay rows (action a_b,
 * n-step return G_b, discount d_b = gamma^m or 0 at an episode end, importance weight w_b) and
 * writes the loss gradient w.r.t. the online head outputs (`dOut`, zero except at a_b) and each
 * row's new priority signal (`prio`, before |.| + eps). The loss is the weighted mean over rows,
 * sum_b w_b L_b / B. Double DQN throughout: a* = argmax of the ONLINE net at the bootstrap
 * state, evaluated by the TARGET net (first index on ties).
 *
 * - plain: y = f32(G + f32(d * Qt(s', a*))), delta = Q(s, a) - y, L = Huber_kappa(delta),
 *   prio = delta.
 * - C51: per atom z_k of the target distribution p' = softmax Qt(s', a*):
 *   Tz = clamp(f32(G + f32(d * z_k)), vMin, vMax), pos = f32(f32(Tz - vMin) / dz), lo = floor,
 *   hi = ceil; m[lo] += f32(p' * f32(hi - pos)), m[hi] += f32(p' * f32(pos - lo)), or m[lo] += p'
 *   when lo == hi (k ascending, f32 sums). L = -sum_z m_z log p_z with log p from the log-softmax
 *   (l - max - log sum exp(l - max)): no log of an underflowed probability. dL/dl_z = p_z * sum(m)
 *   - m_z. prio = L_b (the cross-entropy, as Rainbow uses the distributional loss).
 * - IQN: online quantiles Z_i = Q_{tau_i}(s, a) for N taus, targets y_j = f32(G + f32(d *
 *   Qt_{tau'_j}(s', a*))) for N' taus, a* by the online net's mean over the same tau'.
 *   delta_ij = y_j - Z_i, rho = |tau_i - 1{delta < 0}| * Huber_kappa(delta) / kappa,
 *   L = sum_i mean_j rho_ij (Dabney et al. 2018), prio = L_b.
 * Huber_kappa(x) = x^2 / 2 for |x| <= kappa, else kappa (|x| - kappa / 2); its derivative clip(x, -kappa, kappa).
 */
import { type C51Support, c51Atom } from '../nets/forward.js';
import { NUM_ACTIONS } from '../nets/layout.js';
import { type Floats, roundFor } from './mlp.js';

export interface LossRows {
  batch: number;
  actions: Int32Array;
  returns: Floats;
  discounts: Floats;
  weights: Floats;
}

function huber(x: number, kappa: number): number {
  const a = Math.abs(x);
  return a <= kappa ? 0.5 * x * x : kappa * (a - 0.5 * kappa);
}

const clip = (x: number, k: number) => Math.min(k, Math.max(-k, x));

function argmaxRow(q: Floats, off: number): number {
  let best = 0;
  for (let a = 1; a < NUM_ACTIONS; a++) if (q[off + a] > q[off + best]) best = a;
  return best;
}

/** Dueling double DQN with the Huber loss. Heads `[B, 45]`. */
export function dqnHuberLoss(
  q: Floats,
  nextOnline: Floats,
  nextTarget: Floats,
  rows: LossRows,
  kappa: number,
  dOut: Floats,
  prio: Floats,
): number {
  const r = roundFor(dOut);
  const B = rows.batch;
  dOut.fill(0, 0, B * NUM_ACTIONS);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    const o = b * NUM_ACTIONS;
    const best = argmaxRow(nextOnline, o);
    const y = r(rows.returns[b] + r(rows.discounts[b] * nextTarget[o + best]));
    const a = rows.actions[b];
    const delta = r(q[o + a] - y);
    loss += rows.weights[b] * huber(delta, kappa);
    dOut[o + a] = r(r(rows.weights[b] * clip(delta, kappa)) / B);
    prio[b] = delta;
  }
  return loss / B;
}

/** Softmax of logits[off .. off + n) into p[0 .. n) (max subtracted); returns log sum exp(l - max) and the max. */
function softmax(
  l: Floats,
  off: number,
  n: number,
  p: Floats,
  r: (x: number) => number,
): { max: number; lse: number } {
  let max = Number.NEGATIVE_INFINITY;
  for (let z = 0; z < n; z++) if (l[off + z] > max) max = l[off + z];
  let s = 0;
  for (let z = 0; z < n; z++) {
    const e = r(Math.exp(r(l[off + z] - max)));
    p[z] = e;
    s = r(s + e);
  }
  for (let z = 0; z < n; z++) p[z] = r(p[z] / s);
  return { max, lse: r(Math.log(s)) };
}

/** C51 with the categorical projection. Heads: logits `[B, 45 * atoms]`, action-major. */
export function c51Loss(
  support: C51Support,
  logits: Floats,
  nextOnline: Floats,
  nextTarget: Floats,
  rows: LossRows,
  dOut: Floats,
  prio: Floats,
): number {
  const r = roundFor(dOut);
  const n = support.atoms;
  const B = rows.batch;
  const row = NUM_ACTIONS * n;
  const p = new (dOut.constructor as Float32ArrayConstructor)(n);
  const m = new (dOut.constructor as Float32ArrayConstructor)(n);
  const atom = Array.from({ length: n }, (_, k) => c51Atom(support, k));
  const dz = r(r(support.vMax - support.vMin) / (n - 1));
  dOut.fill(0, 0, B * row);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    const o = b * row;
    let best = 0;
    let bestQ = Number.NEGATIVE_INFINITY;
    for (let a = 0; a < NUM_ACTIONS; a++) {
      softmax(nextOnline, o + a * n, n, p, r);
      let qa = 0;
      for (let z = 0; z < n; z++) qa = r(qa + r(p[z] * atom[z]));
      if (qa > bestQ) {
        bestQ = qa;
        best = a;
      }
    }
    softmax(nextTarget, o + best * n, n, p, r);
    m.fill(0);
    for (let k = 0; k < n; k++) {
      const tz = Math.min(
        support.vMax,
        Math.max(support.vMin, r(rows.returns[b] + r(rows.discounts[b] * atom[k]))),
      );
      const pos = r(r(tz - support.vMin) / dz);
      const lo = Math.min(n - 1, Math.floor(pos));
      const hi = Math.min(n - 1, Math.ceil(pos));
      if (lo === hi) m[lo] = r(m[lo] + p[k]);
      else {
        m[lo] = r(m[lo] + r(p[k] * r(hi - pos)));
        m[hi] = r(m[hi] + r(p[k] * r(pos - lo)));
      }
    }
    const a = rows.actions[b];
    const { max, lse } = softmax(logits, o + a * n, n, p, r);
    let ce = 0;
    let msum = 0;
    for (let z = 0; z < n; z++) {
      const logp = r(r(logits[o + a * n + z] - max) - lse);
      ce = r(ce - r(m[z] * logp));
      msum = r(msum + m[z]);
    }
    const scale = r(rows.weights[b] / B);
    for (let z = 0; z < n; z++) dOut[o + a * n + z] = r(scale * r(r(p[z] * msum) - m[z]));
    loss += rows.weights[b] * ce;
    prio[b] = ce;
  }
  return loss / B;
}

/**
 * IQN quantile Huber. `q` `[B * N, 45]` (row b * N + i at taus[b * N + i]); `nextOnline`,
 * `nextTarget` `[B * N', 45]` at the target taus `targetTaus[b * N' + j]`.
 */
export function iqnLoss(
  q: Floats,
  taus: Floats,
  nTau: number,
  nextOnline: Floats,
  nextTarget: Floats,
  nTarget: number,
  rows: LossRows,
  kappa: number,
  dOut: Floats,
  prio: Floats,
): number {
  const r = roundFor(dOut);
  const B = rows.batch;
  dOut.fill(0, 0, B * nTau * NUM_ACTIONS);
  const mean = new Float64Array(NUM_ACTIONS);
  const y = new Float64Array(nTarget);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    mean.fill(0);
    for (let j = 0; j < nTarget; j++) {
      const o = (b * nTarget + j) * NUM_ACTIONS;
      for (let a = 0; a < NUM_ACTIONS; a++) mean[a] = r(mean[a] + nextOnline[o + a]);
    }
    const best = argmaxRow(mean, 0);
    for (let j = 0; j < nTarget; j++) {
      y[j] = r(rows.returns[b] + r(rows.discounts[b] * nextTarget[(b * nTarget + j) * NUM_ACTIONS + best]));
    }
    const a = rows.actions[b];
    let lb = 0;
    for (let i = 0; i < nTau; i++) {
      const k = (b * nTau + i) * NUM_ACTIONS + a;
      const tau = taus[b * nTau + i];
      let g = 0;
      for (let j = 0; j < nTarget; j++) {
        const delta = r(y[j] - q[k]);
        const wq = Math.abs(tau - (delta < 0 ? 1 : 0));
        lb += (wq * huber(delta, kappa)) / kappa / nTarget;
        g = r(g - r(wq * r(clip(delta, kappa) / kappa)));
      }
      dOut[k] = r(r(rows.weights[b] * r(g / nTarget)) / B);
    }
    loss += rows.weights[b] * lb;
    prio[b] = lb;
  }
  return loss / B;
}
