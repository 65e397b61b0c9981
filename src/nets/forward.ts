/**
 * TS reference forward passes of every network (SPEC 8) and their Philox initialisation.
 * The WGSL and CUDA kernels mirror this file; the arithmetic is defined here, precisely:
 *
 * Dense layer (weights `[out, in]` row-major then bias, offsets from src/nets/layout.ts):
 *   for j in 0..out: acc = b[j]; for i in 0..in (ascending): acc = f32(acc + f32(w[j*in + i] * x[i]))
 *   y[j] = act(acc). Every multiply and every add rounds to f32 (`Math.fround`); kernels may
 *   fuse them into an fma or reorder the sum (parity tolerances cover that, not exact equality).
 * Activations: relu(a) = max(a, 0); leaky(a) = a > 0 ? a : f32(a * f32(0.01)); none(a) = a.
 *
 * Dueling combination (plain): mean = f32(sum_a A[a] / 45) with the sum in f32, a ascending;
 *   Q[a] = f32(f32(V + A[a]) - mean), the left-to-right order of PyTorch's `V + A - A.mean()`.
 * C51: value_stream.1 outputs `atoms` logits, advantage_stream.1 outputs `45 * atoms` laid out
 *   action-major (index a * atoms + z). Per atom z the dueling combination above gives the logit
 *   l[a, z] = f32(f32(V[z] + A[a, z]) - meanA[z]); per action a softmax over z with the max
 *   subtracted: e = f32(exp(f32(l - max))), s = f32 sum of e (z ascending), p = f32(e / s).
 *   Support z_k = f32(vMin + f32(k * delta)), delta = f32(f32(vMax - vMin) / (atoms - 1));
 *   Q[a] = sum_z f32(acc + f32(p[a, z] * z_k)), z ascending, acc from 0.
 * IQN: cosine features c_i(tau) = f32(cos(f32(f32(i * PI_F32) * tau))) for i = 0..63 (starting at
 *   0 as in Dabney et al. 2018, so c_0 = 1 acts as a learned constant); phi = relu(tau_embed(c))
 *   (a dense layer as above); h = f32(trunk * phi) elementwise; the dueling streams on h give the
 *   quantile Q_tau[a]; q[a] = f32(sum_t Q_t[a] / T), the sum in f32 over taus in order.
 *   `PI_F32 = f32(pi)`; `i * PI_F32` is evaluated as the f32 product `f32(i) * PI_F32`.
 * Exponentials and cosines use f64 Math then round to f32: GPU exp/cos are a few ulp off
 * (WGSL cos at arguments up to 63 pi is notably loose), which parity tolerances must absorb.
 *
 * Hot paths allocate nothing: per-layout scratch activations are cached in a WeakMap. The forward
 * passes take the params themselves or a `PackedNet` of them (src/nets/simd.ts: the same bits on
 * WebAssembly SIMD, for many passes with fixed weights).
 */

import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { type Layer, LEAKY_SLOPE, layerByName, type NetLayout, NUM_ACTIONS } from './layout.js';
import type { PackedNet } from './simd.js';

const f = Math.fround;

/** The LeakyReLU slope as the f32 constant kernels use. */
export const LEAKY_SLOPE_F32 = f(LEAKY_SLOPE);
/** pi rounded to f32, the constant of the IQN cosine features. */
export const PI_F32 = f(Math.PI);

/** C51 value support: `atoms` points evenly spaced from vMin to vMax. */
export interface C51Support {
  vMin: number;
  vMax: number;
  atoms: number;
}

/** One dense layer: y[yOff + j] = act(b[j] + sum_i w[j, i] * x[xOff + i]), f32 at every step. */
export function denseForward(
  params: Float32Array,
  layer: Layer,
  x: Float32Array,
  xOff: number,
  y: Float32Array,
  yOff: number,
): void {
  const { in: nIn, out: nOut, wOffset, bOffset, act } = layer;
  const put = (j: number, acc: number) => {
    if (act === 'relu') y[yOff + j] = Math.max(acc, 0);
    else if (act === 'leaky') y[yOff + j] = acc > 0 ? acc : f(acc * LEAKY_SLOPE_F32);
    else y[yOff + j] = acc;
  };
  // Four outputs at a time: each sum is one dependency chain (add, round), so four run side by
  // side; every sum keeps its own order and roundings, the results are those of one at a time.
  let j = 0;
  for (; j + 3 < nOut; j += 4) {
    const r0 = wOffset + j * nIn;
    const r1 = r0 + nIn;
    const r2 = r1 + nIn;
    const r3 = r2 + nIn;
    let a0 = params[bOffset + j];
    let a1 = params[bOffset + j + 1];
    let a2 = params[bOffset + j + 2];
    let a3 = params[bOffset + j + 3];
    for (let i = 0; i < nIn; i++) {
      const u = x[xOff + i];
      a0 = f(a0 + f(params[r0 + i] * u));
      a1 = f(a1 + f(params[r1 + i] * u));
      a2 = f(a2 + f(params[r2 + i] * u));
      a3 = f(a3 + f(params[r3 + i] * u));
    }
    put(j, a0);
    put(j + 1, a1);
    put(j + 2, a2);
    put(j + 3, a3);
  }
  for (; j < nOut; j++) {
    let acc = params[bOffset + j];
    const row = wOffset + j * nIn;
    for (let i = 0; i < nIn; i++) acc = f(acc + f(params[row + i] * x[xOff + i]));
    put(j, acc);
  }
}

/** A net's params, or the same packed for SIMD (simd.ts packNet). */
export type Weights = Float32Array | PackedNet;

function dense(w: Weights, layer: Layer, x: Float32Array, xOff: number, y: Float32Array, yOff: number): void {
  if (w instanceof Float32Array) denseForward(w, layer, x, xOff, y, yOff);
  else w.forward(layer, x, xOff, y, yOff, LEAKY_SLOPE_F32);
}

const scratchCache = new WeakMap<NetLayout, Map<string, Float32Array>>();

/** The cached output buffer of `layer` (length `layer.out`) for this layout. */
function scratch(layout: NetLayout, name: string, length: number): Float32Array {
  let byName = scratchCache.get(layout);
  if (!byName) {
    byName = new Map();
    scratchCache.set(layout, byName);
  }
  let buf = byName.get(name);
  if (!buf || buf.length !== length) {
    buf = new Float32Array(length);
    byName.set(name, buf);
  }
  return buf;
}

function checkLength(what: string, got: number, want: number, layout: NetLayout): void {
  if (got < want) throw new Error(`${layout.kind}: ${what} has ${got} floats, needs ${want}`);
}

function checkParams(layout: NetLayout, w: Weights): void {
  if (!(w instanceof Float32Array) && w.layout !== layout)
    throw new Error(`${layout.kind}: the packed weights are of ${w.layout.kind}, not this layout`);
  const params = w instanceof Float32Array ? w : w.params;
  if (params.length !== layout.size) {
    throw new Error(`${layout.kind}: params have ${params.length} floats, the layout needs ${layout.size}`);
  }
}

/**
 * Generic chain (PPO actor, PPO critic, curiosity): layers in layout order, each feeding the
 * next. `out` receives the last layer's output (length >= its `out`).
 */
export function forwardMlp(layout: NetLayout, params: Weights, x: Float32Array, out: Float32Array): void {
  checkParams(layout, params);
  const layers = layout.layers;
  checkLength('input', x.length, layers[0].in, layout);
  checkLength('output', out.length, layers[layers.length - 1].out, layout);
  let cur = x;
  for (let l = 0; l < layers.length; l++) {
    const layer = layers[l];
    if (l > 0 && layer.in !== layers[l - 1].out) {
      throw new Error(`${layout.kind}: layer ${layer.name} is not a chain (in ${layer.in})`);
    }
    const next = l === layers.length - 1 ? out : scratch(layout, layer.name, layer.out);
    dense(params, layer, cur, 0, next, 0);
    cur = next;
  }
}

interface DuelingLayers {
  s0: Layer;
  s1: Layer;
  v0: Layer;
  v1: Layer;
  a0: Layer;
  a1: Layer;
}

const duelingCache = new WeakMap<NetLayout, DuelingLayers>();

function duelingLayers(layout: NetLayout): DuelingLayers {
  let d = duelingCache.get(layout);
  if (!d) {
    d = {
      s0: layerByName(layout, 'shared_layers.0'),
      s1: layerByName(layout, 'shared_layers.1'),
      v0: layerByName(layout, 'value_stream.0'),
      v1: layerByName(layout, 'value_stream.1'),
      a0: layerByName(layout, 'advantage_stream.0'),
      a1: layerByName(layout, 'advantage_stream.1'),
    };
    duelingCache.set(layout, d);
  }
  return d;
}

/** Trunk: returns the cached `shared_layers.1` output. */
function trunk(layout: NetLayout, d: DuelingLayers, params: Weights, x: Float32Array): Float32Array {
  checkLength('input', x.length, d.s0.in, layout);
  const h0 = scratch(layout, d.s0.name, d.s0.out);
  const h1 = scratch(layout, d.s1.name, d.s1.out);
  dense(params, d.s0, x, 0, h0, 0);
  dense(params, d.s1, h0, 0, h1, 0);
  return h1;
}

/** Both streams on trunk features `h`: returns the cached value and advantage outputs. */
function streams(
  layout: NetLayout,
  d: DuelingLayers,
  params: Weights,
  h: Float32Array,
): { v: Float32Array; a: Float32Array } {
  const vh = scratch(layout, d.v0.name, d.v0.out);
  const v = scratch(layout, d.v1.name, d.v1.out);
  const ah = scratch(layout, d.a0.name, d.a0.out);
  const a = scratch(layout, d.a1.name, d.a1.out);
  dense(params, d.v0, h, 0, vh, 0);
  dense(params, d.v1, vh, 0, v, 0);
  dense(params, d.a0, h, 0, ah, 0);
  dense(params, d.a1, ah, 0, a, 0);
  return { v, a };
}

/** Plain dueling combination Q[a] = (V + A[a]) - mean(A) into q[qOff .. qOff + 45). */
function combineDueling(v: number, a: Float32Array, q: Float32Array, qOff: number): void {
  let sum = 0;
  for (let k = 0; k < NUM_ACTIONS; k++) sum = f(sum + a[k]);
  const mean = f(sum / NUM_ACTIONS);
  for (let k = 0; k < NUM_ACTIONS; k++) q[qOff + k] = f(f(v + a[k]) - mean);
}

/** Plain dueling Q network (layout `duelingLayout('plain')`): 45 Q-values. */
export function forwardDueling(layout: NetLayout, params: Weights, x: Float32Array, q: Float32Array): void {
  checkParams(layout, params);
  const d = duelingLayers(layout);
  if (d.v1.out !== 1 || d.a1.out !== NUM_ACTIONS) {
    throw new Error(`${layout.kind}: forwardDueling needs a plain dueling layout (1 value, 45 advantages)`);
  }
  checkLength('q', q.length, NUM_ACTIONS, layout);
  const { v, a } = streams(layout, d, params, trunk(layout, d, params, x));
  combineDueling(v[0], a, q, 0);
}

/** The C51 support z_k as f32 (see the header for the exact arithmetic). */
export function c51Atom(support: C51Support, k: number): number {
  const delta = f(f(support.vMax - support.vMin) / (support.atoms - 1));
  return f(support.vMin + f(k * delta));
}

/**
 * C51 dueling network (layout `duelingLayout('c51', atoms)`): per-action atom probabilities
 * `probs[a * atoms + z]` and Q[a] = expectation over the support.
 */
export function forwardC51(
  layout: NetLayout,
  params: Weights,
  x: Float32Array,
  probs: Float32Array,
  q: Float32Array,
  support: C51Support,
): void {
  checkParams(layout, params);
  const d = duelingLayers(layout);
  const n = support.atoms;
  if (d.v1.out !== n || d.a1.out !== NUM_ACTIONS * n) {
    throw new Error(`${layout.kind}: forwardC51 needs a C51 layout with ${n} atoms per action`);
  }
  checkLength('probs', probs.length, NUM_ACTIONS * n, layout);
  checkLength('q', q.length, NUM_ACTIONS, layout);
  const { v, a } = streams(layout, d, params, trunk(layout, d, params, x));
  const meanA = scratch(layout, 'c51_mean', n);
  meanA.fill(0);
  for (let k = 0; k < NUM_ACTIONS; k++) {
    for (let z = 0; z < n; z++) meanA[z] = f(meanA[z] + a[k * n + z]);
  }
  for (let z = 0; z < n; z++) meanA[z] = f(meanA[z] / NUM_ACTIONS);
  for (let k = 0; k < NUM_ACTIONS; k++) {
    const base = k * n;
    let max = Number.NEGATIVE_INFINITY;
    for (let z = 0; z < n; z++) {
      const logit = f(f(v[z] + a[base + z]) - meanA[z]);
      probs[base + z] = logit;
      if (logit > max) max = logit;
    }
    let s = 0;
    for (let z = 0; z < n; z++) {
      const e = f(Math.exp(f(probs[base + z] - max)));
      probs[base + z] = e;
      s = f(s + e);
    }
    let qa = 0;
    for (let z = 0; z < n; z++) {
      const p = f(probs[base + z] / s);
      probs[base + z] = p;
      qa = f(qa + f(p * c51Atom(support, z)));
    }
    q[k] = qa;
  }
}

/** IQN cosine features of one tau into c[0 .. n). */
export function iqnCosines(tau: number, c: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) c[i] = f(Math.cos(f(f(i * PI_F32) * tau)));
}

/**
 * IQN dueling network (layout `duelingLayout('iqn')`): for each tau the quantile values
 * Q_tau[a] (written to `quantiles[t * 45 + a]` when given) and their mean over taus in `q`.
 */
export function forwardIqn(
  layout: NetLayout,
  params: Weights,
  x: Float32Array,
  taus: Float32Array,
  q: Float32Array,
  quantiles?: Float32Array,
): void {
  checkParams(layout, params);
  const d = duelingLayers(layout);
  const embed = layerByName(layout, 'tau_embed');
  if (d.v1.out !== 1 || d.a1.out !== NUM_ACTIONS || embed.out !== d.s1.out) {
    throw new Error(`${layout.kind}: forwardIqn needs an IQN dueling layout`);
  }
  if (taus.length < 1) throw new Error(`${layout.kind}: forwardIqn needs at least one tau`);
  checkLength('q', q.length, NUM_ACTIONS, layout);
  if (quantiles) checkLength('quantiles', quantiles.length, taus.length * NUM_ACTIONS, layout);
  const h1 = trunk(layout, d, params, x);
  const cos = scratch(layout, 'iqn_cos', embed.in);
  const phi = scratch(layout, embed.name, embed.out);
  const h = scratch(layout, 'iqn_h', embed.out);
  const qt = scratch(layout, 'iqn_q_tau', NUM_ACTIONS);
  q.fill(0, 0, NUM_ACTIONS);
  for (let t = 0; t < taus.length; t++) {
    iqnCosines(taus[t], cos, embed.in);
    dense(params, embed, cos, 0, phi, 0);
    for (let j = 0; j < embed.out; j++) h[j] = f(h1[j] * phi[j]);
    const { v, a } = streams(layout, d, params, h);
    combineDueling(v[0], a, qt, 0);
    for (let k = 0; k < NUM_ACTIONS; k++) {
      q[k] = f(q[k] + qt[k]);
      if (quantiles) quantiles[t * NUM_ACTIONS + k] = qt[k];
    }
  }
  for (let k = 0; k < NUM_ACTIONS; k++) q[k] = f(q[k] / taus.length);
}

/**
 * PyTorch `nn.Linear`-style init from Philox: every weight and bias of a layer is uniform in
 * [-bound, bound), bound = f32(1 / sqrt(in)). Element e of the flat buffer takes word e & 3 of
 * Philox(counter = (Stream.Init, netId, e >> 2, 0), key = seed):
 *   value = f32((2 * u - 1) * bound), u = u32ToUnitFloat(word)
 * (2u - 1 is exact in f32, so this is one f32 multiply and kernels can reproduce it bit for bit).
 */
export function initParams(layout: NetLayout, netId: number, seed: number): Float32Array {
  const [k0, k1] = seedToKey(seed);
  const out = new Float32Array(layout.size);
  const words = new Uint32Array(4);
  let block = -1;
  for (const layer of layout.layers) {
    const bound = f(1 / Math.sqrt(layer.in));
    const end = layer.bOffset + layer.out;
    for (let e = layer.wOffset; e < end; e++) {
      if (e >> 2 !== block) {
        block = e >> 2;
        philox4x32(Stream.Init, netId, block, 0, k0, k1, words);
      }
      out[e] = f((2 * u32ToUnitFloat(words[e & 3]) - 1) * bound);
    }
  }
  return out;
}
