/**
 * Proportional prioritized replay (Schaul et al. 2016; SPEC 9), the TS reference of the device's
 * PER kernels: a sum tree in one flat f32 buffer, stratified sampling with Philox thresholds,
 * importance weights normalised by the batch max, priority updates from TD errors.
 *
 * Tree: P = the smallest power of two >= capacity; `tree[P + i]` holds replay row i's priority
 * p_i^alpha (0 for an empty row); node k >= 1 holds f32(tree[2k] + tree[2k + 1]), the root is
 * tree[1], tree[0] is unused. After leaves change, their ancestors are recomputed level by
 * level from their children (never by adding deltas), so the sums never drift and the result
 * does not depend on the order of the changes.
 *
 * Sample of train step s, batch B: seg = f32(root / B); row j takes the threshold
 *   x_j = f32(f32(j + u_j) * seg),  u_j = unit float of word j & 3 of Philox(Replay, s, j >> 2, 0)
 * and descends: at node k, go left when x < tree[2k] or the right child is 0 (so f32 rounding
 * of a threshold at the total can never reach an empty leaf), else x = f32(x - tree[2k]) and go
 * right. Weights: P_j = f32(leaf_j / root), w_j = f32((size * P_j)^-beta), then w_j = f32(w_j /
 * max_j w_j).
 *
 * Priorities: p = f32(|td| + eps); the running max of p (1 before any update) is the priority of
 * every newly inserted row, so each transition is replayed at least about once before its TD error
 * is known (the collection kernel's one-step TD error is not the n-step target the learner uses).
 * Duplicate rows in one update: the last in batch order wins.
 */
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';

const f = Math.fround;

export interface Per {
  capacity: number;
  /** Leaves start here (a power of two >= capacity). */
  leaves: number;
  /** `[2 * leaves]` sum tree of p^alpha. */
  tree: Float32Array;
  alpha: number;
  eps: number;
  /** Largest raw priority |td| + eps seen so far (1 at the start). */
  maxPriority: number;
}

export function createPer(capacity: number, alpha: number, eps: number): Per {
  let leaves = 1;
  while (leaves < capacity) leaves *= 2;
  return { capacity, leaves, tree: new Float32Array(2 * leaves), alpha, eps, maxPriority: 1 };
}

/** Sum of all priorities (the root). */
export const perTotal = (per: Per): number => per.tree[1];

/** Recomputes the ancestors of the given leaf nodes (tree indices), level by level. */
function refresh(per: Per, nodes: number[]): void {
  const t = per.tree;
  let cur = Array.from(new Set(nodes)).sort((a, b) => a - b);
  while (cur.length && cur[0] > 1) {
    const next: number[] = [];
    for (const k of cur) {
      const p = k >> 1;
      if (next[next.length - 1] !== p) next.push(p);
    }
    for (const k of next) t[k] = f(t[2 * k] + t[2 * k + 1]);
    cur = next;
  }
}

/** Rows first .. first + count - 1 (modulo capacity) enter at the current max priority. */
export function perInsert(per: Per, first: number, count: number): void {
  const p = f(per.maxPriority ** per.alpha);
  const nodes: number[] = [];
  for (let k = 0; k < count; k++) {
    const node = per.leaves + ((first + k) % per.capacity);
    per.tree[node] = p;
    nodes.push(node);
  }
  refresh(per, nodes);
}

/** Sets rows[j]'s priority from |td[j]| for j < count (the step's TD errors). */
export function perUpdate(per: Per, rows: Int32Array, td: ArrayLike<number>, count: number): void {
  const nodes: number[] = [];
  for (let j = 0; j < count; j++) {
    const p = f(Math.abs(td[j]) + per.eps);
    if (p > per.maxPriority) per.maxPriority = p;
    const node = per.leaves + rows[j];
    per.tree[node] = f(p ** per.alpha);
    nodes.push(node);
  }
  refresh(per, nodes);
}

/** Importance-sampling exponent after `step` of `totalSteps` train steps: linear, then held. */
export function perBeta(betaStart: number, betaEnd: number, step: number, totalSteps: number): number {
  const progress = totalSteps > 0 ? Math.min(1, step / totalSteps) : 1;
  return betaStart + (betaEnd - betaStart) * progress;
}

/**
 * Draws `batch` rows of a replay holding `size` rows for train step `step` into `rows`, with
 * their normalised importance weights in `weights`.
 */
export function perSample(
  per: Per,
  size: number,
  batch: number,
  beta: number,
  key: [number, number],
  step: number,
  rows: Int32Array,
  weights: Float32Array,
): void {
  const t = per.tree;
  const total = t[1];
  if (!(total > 0)) throw new Error('per: sampling from an empty tree');
  const seg = f(total / batch);
  const w = new Uint32Array(4);
  let maxW = 0;
  for (let j = 0; j < batch; j++) {
    if ((j & 3) === 0) philox4x32(Stream.Replay, step >>> 0, j >> 2, 0, key[0], key[1], w);
    let x = f(f(j + u32ToUnitFloat(w[j & 3])) * seg);
    let node = 1;
    while (node < per.leaves) {
      const left = t[2 * node];
      if (x < left || t[2 * node + 1] === 0) node = 2 * node;
      else {
        x = f(x - left);
        node = 2 * node + 1;
      }
    }
    rows[j] = node - per.leaves;
    const prob = f(t[node] / total);
    const wj = f((size * prob) ** -beta);
    weights[j] = wj;
    if (wj > maxW) maxW = wj;
  }
  for (let j = 0; j < batch; j++) weights[j] = f(weights[j] / maxW);
}
