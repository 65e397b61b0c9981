/**
 * What `collect_dqn` and `collect_ppo` share: their storage bindings, the simulator's uniform
 * block, the per-episode state layout and the layout of their output buffers. Everything a
 * kernel twin needs to know about a layout reaches it as a generated constant (WGSL `const`,
 * CUDA `#define`) built here from src/env/state.ts and src/nets/layout.ts, never by hand.
 *
 * Bindings (both kernels, in this order):
 *   0 features  f32 read   [T, 51] market features (Market.features)
 *   1 ohlc      f32 read   [T, 4] open, high, low, close
 *   2 spread    f32 read   [T] spread in bps
 *   3 entropy   f32 read   [W + 1] c * log2 c (EnvParams.entropyTable)
 *   4 nets      f32 read   the networks' flat buffers back to back (offsets are constants NET_*)
 *   5 env_f     f32 rw     [N, ENV_F] EnvState.f
 *   6 env_i     i32 rw     [N, ENV_I] EnvState.i
 *   7 div_window i32 rw    [N, W] EnvState.window
 *   8 out_f     f32 rw     float outputs, one section per quantity (OUT_F_* constants)
 *   9 out_i     i32 rw     integer outputs, one section per quantity (OUT_I_* constants)
 * Ten storage buffers: within the 10 that browsers expose and the 16 of Dawn on Vulkan.
 *
 * Output sections: section `s` of width `w` floats per step starts at element
 * `OUT_F_S * N * L` of out_f; the value of episode e at step t (k-th of its w floats) is at
 * `OUT_F_S * N * L + (e * L + t) * w + k` (index = episode * L + step, as the reference
 * collectors lay out their arrays).
 *
 * Uniforms: the kernel's own scalars first, then ENV_UNIFORMS (the fields of EnvParams in
 * src/env/params.ts order, then the split and the Philox key), each 4 bytes: a CUDA twin can
 * embed the simulator block as one struct member.
 */

import type { Market, SplitRange } from '../data/types.js';
import type { EnvParams } from '../env/params.js';
import { ENV_F, ENV_I, EnvF, EnvI, type EnvState } from '../env/state.js';
import { CURIOSITY_OUT, MARKET_FEATURES, type NetLayout, NUM_ACTIONS, STATE_DIM } from '../nets/layout.js';
import { Stream } from '../rng/streams.js';
import type { BindingSpec, UniformSpec } from './spec.js';

export const COLLECT_BINDINGS: BindingSpec[] = [
  { name: 'features', type: 'f32', access: 'read' },
  { name: 'ohlc', type: 'f32', access: 'read' },
  { name: 'spread', type: 'f32', access: 'read' },
  { name: 'entropy', type: 'f32', access: 'read' },
  { name: 'nets', type: 'f32', access: 'read' },
  { name: 'env_f', type: 'f32', access: 'read_write' },
  { name: 'env_i', type: 'i32', access: 'read_write' },
  { name: 'div_window', type: 'i32', access: 'read_write' },
  { name: 'out_f', type: 'f32', access: 'read_write' },
  { name: 'out_i', type: 'i32', access: 'read_write' },
];

/** Binding indices by name, for dispatch builders and the CPU twins. */
export const Bind = {
  Features: 0,
  Ohlc: 1,
  Spread: 2,
  Entropy: 3,
  Nets: 4,
  EnvF: 5,
  EnvI: 6,
  Window: 7,
  OutF: 8,
  OutI: 9,
} as const;

/** The simulator block of the uniforms: EnvParams (minus the entropy table), split, key. */
export const ENV_UNIFORMS: UniformSpec[] = [
  { name: 'marketRate', type: 'f32' },
  { name: 'passiveRate', type: 'f32' },
  { name: 'passiveDown', type: 'f32' },
  { name: 'passiveUp', type: 'f32' },
  { name: 'reservePct', type: 'f32' },
  { name: 'initialCapital', type: 'f32' },
  { name: 'profitUp', type: 'f32' },
  { name: 'profitDown', type: 'f32' },
  { name: 'stopUp', type: 'f32' },
  { name: 'stopDown', type: 'f32' },
  { name: 'maxHoldingBars', type: 'i32' },
  { name: 'barrierTerminates', type: 'i32' },
  { name: 'pnlScale', type: 'f32' },
  { name: 'barrierScale', type: 'f32' },
  { name: 'riskThreshold', type: 'f32' },
  { name: 'riskScale', type: 'f32' },
  { name: 'diversityWindow', type: 'i32' },
  { name: 'diversityMinActions', type: 'i32' },
  { name: 'diversityCutoff', type: 'f32' },
  { name: 'diversityPenalty', type: 'f32' },
  { name: 'curiosityScale', type: 'f32' },
  { name: 'curiosityMax', type: 'f32' },
  { name: 'episodeBars', type: 'i32' },
  { name: 'collapseFraction', type: 'f32' },
  { name: 'splitStart', type: 'i32' },
  { name: 'splitEnd', type: 'i32' },
  { name: 'key0', type: 'u32' },
  { name: 'key1', type: 'u32' },
];

/** The simulator block's uniform values. */
export function envUniforms(
  p: EnvParams,
  split: SplitRange,
  key: readonly [number, number],
): Record<string, number> {
  return {
    marketRate: p.marketRate,
    passiveRate: p.passiveRate,
    passiveDown: p.passiveDown,
    passiveUp: p.passiveUp,
    reservePct: p.reservePct,
    initialCapital: p.initialCapital,
    profitUp: p.profitUp,
    profitDown: p.profitDown,
    stopUp: p.stopUp,
    stopDown: p.stopDown,
    maxHoldingBars: p.maxHoldingBars,
    barrierTerminates: p.barrierTerminates ? 1 : 0,
    pnlScale: p.pnlScale,
    barrierScale: p.barrierScale,
    riskThreshold: p.riskThreshold,
    riskScale: p.riskScale,
    diversityWindow: p.diversityWindow,
    diversityMinActions: p.diversityMinActions,
    diversityCutoff: p.diversityCutoff,
    diversityPenalty: p.diversityPenalty,
    curiosityScale: p.curiosityScale,
    curiosityMax: p.curiosityMax,
    episodeBars: p.episodeBars,
    collapseFraction: p.collapseFraction,
    splitStart: split.start,
    splitEnd: split.end,
    key0: key[0] >>> 0,
    key1: key[1] >>> 0,
  };
}

/** EnvParams back from the uniforms and the entropy buffer (the CPU twins' side). */
export function envParamsFromUniforms(u: Record<string, number>, entropyTable: Float32Array): EnvParams {
  return {
    marketRate: u.marketRate,
    passiveRate: u.passiveRate,
    passiveDown: u.passiveDown,
    passiveUp: u.passiveUp,
    reservePct: u.reservePct,
    initialCapital: u.initialCapital,
    profitUp: u.profitUp,
    profitDown: u.profitDown,
    stopUp: u.stopUp,
    stopDown: u.stopDown,
    maxHoldingBars: u.maxHoldingBars,
    barrierTerminates: u.barrierTerminates !== 0,
    pnlScale: u.pnlScale,
    barrierScale: u.barrierScale,
    riskThreshold: u.riskThreshold,
    riskScale: u.riskScale,
    diversityWindow: u.diversityWindow,
    diversityMinActions: u.diversityMinActions,
    diversityCutoff: u.diversityCutoff,
    diversityPenalty: u.diversityPenalty,
    curiosityScale: u.curiosityScale,
    curiosityMax: u.curiosityMax,
    episodeBars: u.episodeBars,
    collapseFraction: u.collapseFraction,
    entropyTable: entropyTable.subarray(0, u.diversityWindow + 1),
  };
}

/** `ProfitLevel` -> `PROFIT_LEVEL`. */
const snake = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();

/** Sizes and Philox streams every collection kernel uses. */
export function commonConstants(): Record<string, number> {
  return {
    MARKET_FEATURES,
    STATE_DIM,
    NUM_ACTIONS,
    CURIOSITY_OUT,
    STREAM_EPISODE_START: Stream.EpisodeStart,
    STREAM_ACTION: Stream.Action,
    STREAM_TAU: Stream.Tau,
  };
}

/**
 * Per-episode layout constants: ENV_F, ENV_I and one `ENVF_<FIELD>` / `ENVI_<FIELD>` per field
 * of src/env/state.ts (e.g. ENVF_CASH, ENVI_DIV_HEAD).
 */
export function envStateConstants(): Record<string, number> {
  const c: Record<string, number> = { ENV_F, ENV_I };
  for (const [k, v] of Object.entries(EnvF)) c[`ENVF_${snake(k)}`] = v;
  for (const [k, v] of Object.entries(EnvI)) c[`ENVI_${snake(k)}`] = v;
  return c;
}

/**
 * Layer constants of a network stored at `base` floats into the nets buffer, for layer i named
 * `name` (`value_stream.0` -> `VALUE_STREAM_0`): `<prefix>_<i>_W` and `<prefix>_<NAME>_W`
 * (absolute offset of the weight in nets), `_B` (bias), `_IN`, `_OUT`; plus `<prefix>_BASE` and
 * `<prefix>_SIZE`.
 */
export function netConstants(prefix: string, layout: NetLayout, base: number): Record<string, number> {
  const c: Record<string, number> = { [`${prefix}_BASE`]: base, [`${prefix}_SIZE`]: layout.size };
  layout.layers.forEach((l, i) => {
    const name = l.name.replace(/[^A-Za-z0-9]+/g, '_').toUpperCase();
    for (const id of [String(i), name]) {
      c[`${prefix}_${id}_W`] = base + l.wOffset;
      c[`${prefix}_${id}_B`] = base + l.bOffset;
      c[`${prefix}_${id}_IN`] = l.in;
      c[`${prefix}_${id}_OUT`] = l.out;
    }
  });
  return c;
}

/** One quantity of the output: `width` values of `type` per step. */
export interface OutputSection {
  name: string;
  type: 'f32' | 'i32';
  width: number;
}

/** Where each section lives: `offset` in units of N * L elements of its buffer. */
export interface OutputLayout {
  sections: (OutputSection & { offset: number })[];
  /** Elements per step of out_f and out_i. */
  floatsPerStep: number;
  intsPerStep: number;
}

export function outputLayout(sections: OutputSection[]): OutputLayout {
  let f = 0;
  let i = 0;
  const placed = sections.map((s) => {
    const offset = s.type === 'f32' ? f : i;
    if (s.type === 'f32') f += s.width;
    else i += s.width;
    return { ...s, offset };
  });
  return { sections: placed, floatsPerStep: f, intsPerStep: i };
}

/** `OUT_F_<NAME>` / `OUT_I_<NAME>` (section offsets in units of N * L), `OUT_F_STRIDE`, `OUT_I_STRIDE`. */
export function outputConstants(layout: OutputLayout): Record<string, number> {
  const c: Record<string, number> = { OUT_F_STRIDE: layout.floatsPerStep, OUT_I_STRIDE: layout.intsPerStep };
  for (const s of layout.sections) c[`OUT_${s.type === 'f32' ? 'F' : 'I'}_${snake(s.name)}`] = s.offset;
  return c;
}

/** Bytes of out_f and out_i for N episodes and L steps. */
export function outputBytes(layout: OutputLayout, n: number, steps: number): { f: number; i: number } {
  return { f: layout.floatsPerStep * n * steps * 4, i: layout.intsPerStep * n * steps * 4 };
}

/** A view of section `name` of a downloaded out_f / out_i buffer: `N * L * width` elements. */
export function sectionView<T extends Float32Array | Int32Array>(
  layout: OutputLayout,
  buffer: T,
  name: string,
  n: number,
  steps: number,
): T {
  const s = layout.sections.find((x) => x.name === name);
  if (!s) throw new Error(`collect output has no section ${name}`);
  const start = s.offset * n * steps;
  return buffer.subarray(start, start + s.width * n * steps) as T;
}

/** The Market the reference simulator reads, as views of the market bindings. */
export function marketFromBuffers(features: Float32Array, ohlc: Float32Array, spread: Float32Array): Market {
  return { n: ohlc.length >> 2, features, ohlc, spreadBps: spread, timestamp: new Float64Array(0) };
}

/** The EnvState of N episodes as views of env_f, env_i and div_window (no copy: the twin writes through). */
export function envFromBuffers(
  u: Record<string, number>,
  envF: Float32Array,
  envI: Int32Array,
  window: Int32Array,
): EnvState {
  const n = u.n;
  const w = u.diversityWindow;
  return {
    n,
    w,
    split: { start: u.splitStart, end: u.splitEnd },
    key: [u.key0 >>> 0, u.key1 >>> 0],
    f: envF.subarray(0, n * ENV_F),
    i: envI.subarray(0, n * ENV_I),
    window: window.subarray(0, n * w),
  };
}

/** Views of every section of out_f / out_i for N episodes and L steps, by section name. */
export function sectionViews(
  layout: OutputLayout,
  outF: Float32Array,
  outI: Int32Array,
  n: number,
  steps: number,
): Record<string, Float32Array | Int32Array> {
  const views: Record<string, Float32Array | Int32Array> = {};
  for (const s of layout.sections) {
    views[s.name] =
      s.type === 'f32'
        ? sectionView(layout, outF, s.name, n, steps)
        : sectionView(layout, outI, s.name, n, steps);
  }
  return views;
}
