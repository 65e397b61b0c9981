/**
 * Batched forward with cached activations and backward of the dueling Q network (plain, C51,
 * IQN; src/nets/layout.ts `duelingLayout`), built from the chain learner of src/learn/mlp.ts:
 * the net is three or four chains over views of one flat parameter buffer,
 *
 *   trunk  shared_layers.0 -> shared_layers.1          rows = batch
 *   embed  tau_embed (IQN only)                        rows = batch * taus
 *   value  value_stream.0 -> value_stream.1            rows = batch (IQN: batch * taus)
 *   adv    advantage_stream.0 -> advantage_stream.1    same rows as value
 *
 * IQN row r = b * taus + t feeds the streams h = f32(trunk_b * relu(tau_embed(cos(tau_r)))).
 * Head outputs per row (`out`): plain and IQN the 45 Q-values (IQN: the quantile at tau_r),
 * Q[a] = f32(f32(V + A[a]) - mean A); C51 the 45 x atoms logits l[a, z] = f32(f32(V[z] +
 * A[a, z]) - meanA[z]), action-major. In f32 these are bit for bit src/nets/forward.ts's values
 * (`forwardDueling`, the logits `forwardC51` softmaxes, `forwardIqn`'s quantiles). In f64
 * nothing rounds (the finite-difference tests).
 *
 * Backward of the combination: dV[z] = sum_a dOut[a, z]; dA[a, z] = dOut[a, z] - f32(dV[z] / 45).
 */
import { type C51Support, iqnCosines } from '../nets/forward.js';
import { buildLayout, type NetLayout, NUM_ACTIONS, type QHead } from '../nets/layout.js';
import {
  backwardMlp,
  createMlpCache,
  type Floats,
  type FloatsCtor,
  forwardMlpBatch,
  inputGradMlp,
  type MlpCache,
  roundFor,
} from './mlp.js';

/** One chain of the dueling net: its layout with offsets rebased to `base` in the full buffer. */
interface Part {
  layout: NetLayout;
  base: number;
}

export interface DuelingNet {
  head: QHead;
  layout: NetLayout;
  /** Outputs per action: 1, or the C51 atoms. */
  atoms: number;
  support: C51Support;
  trunk: Part;
  embed: Part | null;
  value: Part;
  adv: Part;
}

function part(layout: NetLayout, names: string[]): Part {
  const layers = names.map((n) => {
    const l = layout.layers.find((x) => x.name === n);
    if (!l) throw new Error(`${layout.kind}: no layer ${n}`);
    return l;
  });
  const base = layers[0].wOffset;
  const sub = buildLayout(
    `${layout.kind}/${names[0]}`,
    layers.map(({ name, in: i, out, act }) => ({ name, in: i, out, act })),
  );
  sub.layers.forEach((l, k) => {
    if (layers[k].wOffset - base !== l.wOffset)
      throw new Error(`${layout.kind}: ${names} are not contiguous`);
  });
  return { layout: sub, base };
}

export function duelingNet(layout: NetLayout, head: QHead, support: C51Support): DuelingNet {
  return {
    head,
    layout,
    atoms: head === 'c51' ? support.atoms : 1,
    support,
    trunk: part(layout, ['shared_layers.0', 'shared_layers.1']),
    embed: head === 'iqn' ? part(layout, ['tau_embed']) : null,
    value: part(layout, ['value_stream.0', 'value_stream.1']),
    adv: part(layout, ['advantage_stream.0', 'advantage_stream.1']),
  };
}

const view = (buf: Floats, p: Part): Floats => buf.subarray(p.base, p.base + p.layout.size);

export interface DuelingCache {
  /** Largest batch (rows of the trunk). */
  batch: number;
  /** Taus per row (IQN), else 1. */
  taus: number;
  trunk: MlpCache;
  embed: MlpCache | null;
  value: MlpCache;
  adv: MlpCache;
  /** Head outputs `[batch * taus, 45 * atoms]`. */
  out: Floats;
  /** Scratch gradients: stream inputs `[rows, 256]` (two) and the trunk's output `[batch, 256]`. */
  dIn: Floats;
  dIn2: Floats;
  dTrunk: Floats;
  dV: Floats;
  dA: Floats;
}

/** Buffers for up to `batch` states (IQN: `taus` quantile rows each). Input: `cache.trunk.acts[0]`. */
export function createDuelingCache(
  net: DuelingNet,
  batch: number,
  taus = 1,
  ctor: FloatsCtor = Float32Array,
): DuelingCache {
  const t = net.head === 'iqn' ? taus : 1;
  const rows = batch * t;
  const width = net.trunk.layout.layers[1].out;
  const n = net.atoms;
  return {
    batch,
    taus: t,
    trunk: createMlpCache(net.trunk.layout, batch, ctor),
    embed: net.embed ? createMlpCache(net.embed.layout, rows, ctor) : null,
    value: createMlpCache(net.value.layout, rows, ctor),
    adv: createMlpCache(net.adv.layout, rows, ctor),
    out: new ctor(rows * NUM_ACTIONS * n),
    dIn: new ctor(rows * width),
    dIn2: new ctor(rows * width),
    dTrunk: new ctor(batch * width),
    dV: new ctor(rows * n),
    dA: new ctor(rows * NUM_ACTIONS * n),
  };
}

/**
 * Forward of rows 0..batch of `cache.trunk.acts[0]` (`[batch, 54]`); IQN reads `taus[b * T + t]`.
 * Returns `cache.out`.
 */
export function duelingForward(
  net: DuelingNet,
  params: Floats,
  cache: DuelingCache,
  batch: number,
  taus?: Floats,
): Floats {
  const r = roundFor(params);
  const h = forwardMlpBatch(net.trunk.layout, view(params, net.trunk), cache.trunk, batch);
  const width = net.trunk.layout.layers[1].out;
  const T = cache.taus;
  const rows = batch * T;
  const xv = cache.value.acts[0];
  if (net.embed && cache.embed) {
    if (!taus || taus.length < rows) throw new Error(`dueling: IQN needs ${rows} taus`);
    const nCos = net.embed.layout.layers[0].in;
    const cos = new Float32Array(nCos);
    const c = cache.embed.acts[0];
    for (let k = 0; k < rows; k++) {
      iqnCosines(taus[k], cos, nCos);
      for (let i = 0; i < nCos; i++) c[k * nCos + i] = cos[i];
    }
    const phi = forwardMlpBatch(net.embed.layout, view(params, net.embed), cache.embed, rows);
    for (let k = 0; k < rows; k++) {
      const hb = Math.floor(k / T) * width;
      for (let j = 0; j < width; j++) xv[k * width + j] = r(h[hb + j] * phi[k * width + j]);
    }
  } else {
    xv.set(h.subarray(0, rows * width));
  }
  cache.adv.acts[0].set(xv.subarray(0, rows * width));
  const v = forwardMlpBatch(net.value.layout, view(params, net.value), cache.value, rows);
  const a = forwardMlpBatch(net.adv.layout, view(params, net.adv), cache.adv, rows);
  duelingCombine(v, a, cache.out, rows, net.atoms);
  return cache.out;
}

/**
 * The dueling combination of `rows` rows (the dueling_combine kernel's definition):
 * out[k, a, z] = f32(f32(V[k, z] + A[k, a, z]) - f32(sum_a A[k, a, z] / 45)), sums over a ascending.
 */
export function duelingCombine(v: Floats, a: Floats, out: Floats, rows: number, n: number): void {
  const r = roundFor(out);
  for (let k = 0; k < rows; k++) {
    const ab = k * NUM_ACTIONS * n;
    for (let z = 0; z < n; z++) {
      let sum = 0;
      for (let q = 0; q < NUM_ACTIONS; q++) sum = r(sum + a[ab + q * n + z]);
      const mean = r(sum / NUM_ACTIONS);
      const vz = v[k * n + z];
      for (let q = 0; q < NUM_ACTIONS; q++) out[ab + q * n + z] = r(r(vz + a[ab + q * n + z]) - mean);
    }
  }
}

/** Backward of `duelingCombine`: dV[k, z] = sum_a dOut[k, a, z]; dA = f32(dOut - f32(dV / 45)). */
export function duelingCombineBackward(dOut: Floats, dV: Floats, dA: Floats, rows: number, n: number): void {
  const r = roundFor(dA);
  for (let k = 0; k < rows; k++) {
    const ab = k * NUM_ACTIONS * n;
    for (let z = 0; z < n; z++) {
      let s = 0;
      for (let q = 0; q < NUM_ACTIONS; q++) s = r(s + dOut[ab + q * n + z]);
      dV[k * n + z] = s;
      const mean = r(s / NUM_ACTIONS);
      for (let q = 0; q < NUM_ACTIONS; q++) dA[ab + q * n + z] = r(dOut[ab + q * n + z] - mean);
    }
  }
}

/**
 * Backward of the last `duelingForward` on this cache: `dOut` is the loss gradient w.r.t.
 * `cache.out` (`[rows, 45 * atoms]`). Overwrites `grad` (the full layout) with the parameter gradient.
 */
export function duelingBackward(
  net: DuelingNet,
  params: Floats,
  cache: DuelingCache,
  dOut: Floats,
  batch: number,
  grad: Floats,
): void {
  const r = roundFor(params);
  const n = net.atoms;
  const T = cache.taus;
  const rows = batch * T;
  const { dV, dA } = cache;
  duelingCombineBackward(dOut, dV, dA, rows, n);
  const vp = view(params, net.value);
  const ap = view(params, net.adv);
  backwardMlp(net.value.layout, vp, cache.value, dV, rows, view(grad, net.value));
  backwardMlp(net.adv.layout, ap, cache.adv, dA, rows, view(grad, net.adv));
  const width = net.trunk.layout.layers[1].out;
  const { dIn, dIn2, dTrunk } = cache;
  inputGradMlp(net.value.layout, vp, cache.value, rows, dIn);
  inputGradMlp(net.adv.layout, ap, cache.adv, rows, dIn2);
  for (let k = 0; k < rows * width; k++) dIn[k] = r(dIn[k] + dIn2[k]);
  if (net.embed && cache.embed) {
    // h = trunk * phi: d trunk_b = sum_t dh_bt * phi_bt (t ascending), d phi_bt = dh_bt * trunk_b.
    const h = cache.trunk.acts[2];
    const phi = cache.embed.acts[1];
    for (let b = 0; b < batch; b++) {
      for (let j = 0; j < width; j++) {
        let s = 0;
        const hv = h[b * width + j];
        for (let t = 0; t < T; t++) {
          const k = (b * T + t) * width + j;
          s = r(s + r(dIn[k] * phi[k]));
          dIn2[k] = r(dIn[k] * hv);
        }
        dTrunk[b * width + j] = s;
      }
    }
    backwardMlp(net.embed.layout, view(params, net.embed), cache.embed, dIn2, rows, view(grad, net.embed));
    backwardMlp(net.trunk.layout, view(params, net.trunk), cache.trunk, dTrunk, batch, view(grad, net.trunk));
  } else {
    backwardMlp(net.trunk.layout, view(params, net.trunk), cache.trunk, dIn, batch, view(grad, net.trunk));
  }
}
