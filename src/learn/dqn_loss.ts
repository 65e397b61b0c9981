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
import { type Floats, type FloatsCtor, roundFor } from './mlp.js';

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

/** Where one sample's head rows start: online Q(s), online Q(s'), target Q(s'), and dOut. */
export interface SampleOffsets {
  q: number;
  next: number;
  target: number;
  dOut: number;
}

/** One replay sample: action, n-step return, discount, importance weight; `batch` divides. */
export interface SampleRow {
  action: number;
  ret: number;
  discount: number;
  weight: number;
  batch: number;
}

/**
 * Dueling double DQN (Huber) of one sample: writes dOut at the action (the rest of its row is left
 * as it is) and returns its loss L_b (unweighted) and priority signal delta.
 */
export function dqnHuberSample(
  q: Floats,
  nextOnline: Floats,
  nextTarget: Floats,
  at: SampleOffsets,
  s: SampleRow,
  kappa: number,
  dOut: Floats,
): { loss: number; prio: number } {
  const r = roundFor(dOut);
  const best = argmaxRow(nextOnline, at.next);
  const y = r(s.ret + r(s.discount * nextTarget[at.target + best]));
  const delta = r(q[at.q + s.action] - y);
  dOut[at.dOut + s.action] = r(r(s.weight * clip(delta, kappa)) / s.batch);
  return { loss: huber(delta, kappa), prio: delta };
}

const sampleRow = (rows: LossRows, b: number): SampleRow => ({
  action: rows.actions[b],
  ret: rows.returns[b],
  discount: rows.discounts[b],
  weight: rows.weights[b],
  batch: rows.batch,
});

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
  const B = rows.batch;
  dOut.fill(0, 0, B * NUM_ACTIONS);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    const o = b * NUM_ACTIONS;
    const at = { q: o, next: o, target: o, dOut: o };
    const one = dqnHuberSample(q, nextOnline, nextTarget, at, sampleRow(rows, b), kappa, dOut);
    loss += rows.weights[b] * one.loss;
    prio[b] = one.prio;
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

/** Scratch of `c51Sample`: the support's atoms and two distributions. */
export interface C51Scratch {
  atom: Float64Array;
  p: Floats;
  m: Floats;
}

export function c51Scratch(support: C51Support, ctor: FloatsCtor = Float32Array): C51Scratch {
  const n = support.atoms;
  return {
    atom: Float64Array.from({ length: n }, (_, k) => c51Atom(support, k)),
    p: new ctor(n),
    m: new ctor(n),
  };
}

/**
 * C51 of one sample (heads action-major, 45 x atoms logits per row): writes dOut over the action's
 * atoms (the rest of its row is left as it is) and returns the cross-entropy L_b, also its priority.
 */
export function c51Sample(
  support: C51Support,
  logits: Floats,
  nextOnline: Floats,
  nextTarget: Floats,
  at: SampleOffsets,
  s: SampleRow,
  dOut: Floats,
  scratch: C51Scratch,
): number {
  const r = roundFor(dOut);
  const n = support.atoms;
  const { atom, p, m } = scratch;
  const dz = r(r(support.vMax - support.vMin) / (n - 1));
  let best = 0;
  let bestQ = Number.NEGATIVE_INFINITY;
  for (let a = 0; a < NUM_ACTIONS; a++) {
    softmax(nextOnline, at.next + a * n, n, p, r);
    let qa = 0;
    for (let z = 0; z < n; z++) qa = r(qa + r(p[z] * atom[z]));
    if (qa > bestQ) {
      bestQ = qa;
      best = a;
    }
  }
  softmax(nextTarget, at.target + best * n, n, p, r);
  m.fill(0);
  for (let k = 0; k < n; k++) {
    const tz = Math.min(support.vMax, Math.max(support.vMin, r(s.ret + r(s.discount * atom[k]))));
    const pos = r(r(tz - support.vMin) / dz);
    const lo = Math.min(n - 1, Math.floor(pos));
    const hi = Math.min(n - 1, Math.ceil(pos));
    if (lo === hi) m[lo] = r(m[lo] + p[k]);
    else {
      m[lo] = r(m[lo] + r(p[k] * r(hi - pos)));
      m[hi] = r(m[hi] + r(p[k] * r(pos - lo)));
    }
  }
  const la = at.q + s.action * n;
  const { max, lse } = softmax(logits, la, n, p, r);
  let ce = 0;
  let msum = 0;
  for (let z = 0; z < n; z++) {
    const logp = r(r(logits[la + z] - max) - lse);
    ce = r(ce - r(m[z] * logp));
    msum = r(msum + m[z]);
  }
  const scale = r(s.weight / s.batch);
  const da = at.dOut + s.action * n;
  for (let z = 0; z < n; z++) dOut[da + z] = r(scale * r(r(p[z] * msum) - m[z]));
  return ce;
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
  const B = rows.batch;
  const row = NUM_ACTIONS * support.atoms;
  const scratch = c51Scratch(support, dOut.constructor as FloatsCtor);
  dOut.fill(0, 0, B * row);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    const o = b * row;
    const at = { q: o, next: o, target: o, dOut: o };
    const ce = c51Sample(support, logits, nextOnline, nextTarget, at, sampleRow(rows, b), dOut, scratch);
    loss += rows.weights[b] * ce;
    prio[b] = ce;
  }
  return loss / B;
}

/** IQN's quantile counts and where one sample's rows start (see `iqnSample`). */
export interface IqnShape {
  /** Online quantiles per sample (taus) and target quantiles per sample. */
  nTau: number;
  nTarget: number;
}

/**
 * IQN quantile Huber of one sample: online rows `q[at.q + i * 45 ..]` at `taus[tauAt + i]`
 * (i < nTau), next-state rows `nextOnline[at.next + j * 45 ..]`, `nextTarget[at.target + j * 45 ..]`
 * (j < nTarget); writes dOut at the action of each online row (`at.dOut + i * 45 + a`; the rest is
 * left as it is) and returns L_b, also its priority. `y` is scratch of nTarget floats.
 */
export function iqnSample(
  q: Floats,
  taus: Floats,
  tauAt: number,
  nextOnline: Floats,
  nextTarget: Floats,
  shape: IqnShape,
  at: SampleOffsets,
  s: SampleRow,
  kappa: number,
  dOut: Floats,
  y: Float64Array,
): number {
  const r = roundFor(dOut);
  const { nTau, nTarget } = shape;
  const mean = new Float64Array(NUM_ACTIONS);
  for (let j = 0; j < nTarget; j++) {
    const o = at.next + j * NUM_ACTIONS;
    for (let a = 0; a < NUM_ACTIONS; a++) mean[a] = r(mean[a] + nextOnline[o + a]);
  }
  const best = argmaxRow(mean, 0);
  for (let j = 0; j < nTarget; j++) {
    y[j] = r(s.ret + r(s.discount * nextTarget[at.target + j * NUM_ACTIONS + best]));
  }
  let lb = 0;
  for (let i = 0; i < nTau; i++) {
    const zq = q[at.q + i * NUM_ACTIONS + s.action];
    const tau = taus[tauAt + i];
    let g = 0;
    for (let j = 0; j < nTarget; j++) {
      const delta = r(y[j] - zq);
      const wq = Math.abs(tau - (delta < 0 ? 1 : 0));
      lb += (wq * huber(delta, kappa)) / kappa / nTarget;
      g = r(g - r(wq * r(clip(delta, kappa) / kappa)));
    }
    dOut[at.dOut + i * NUM_ACTIONS + s.action] = r(r(s.weight * r(g / nTarget)) / s.batch);
  }
  return lb;
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
  const B = rows.batch;
  dOut.fill(0, 0, B * nTau * NUM_ACTIONS);
  const y = new Float64Array(nTarget);
  let loss = 0;
  for (let b = 0; b < B; b++) {
    const on = b * nTau * NUM_ACTIONS;
    const next = b * nTarget * NUM_ACTIONS;
    const at = { q: on, next, target: next, dOut: on };
    const shape = { nTau, nTarget };
    const lb = iqnSample(
      q,
      taus,
      b * nTau,
      nextOnline,
      nextTarget,
      shape,
      at,
      sampleRow(rows, b),
      kappa,
      dOut,
      y,
    );
    loss += rows.weights[b] * lb;
    prio[b] = lb;
  }
  return loss / B;
}
