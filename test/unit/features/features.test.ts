import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import type { Bars } from '../../../src/data/types.js';
import {
  computeFeatures,
  FEATURE_CLIP,
  FEATURE_COUNT,
  FEATURE_NAMES,
} from '../../../src/features/features.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';

const L = 120;
const copyBars = (b: Bars): Bars => ({
  n: b.n,
  timestamp: b.timestamp.slice(),
  open: b.open.slice(),
  high: b.high.slice(),
  low: b.low.slice(),
  close: b.close.slice(),
  volume: b.volume.slice(),
  spreadBps: b.spreadBps ? b.spreadBps.slice() : null,
});

/** Uniforms for the tests, from Philox (stream Test), never Math.random. */
function uniforms(count: number, key: number): Float64Array {
  const out = new Float64Array(count);
  const block = new Uint32Array(4);
  for (let i = 0; i < count; i++) {
    if (i % 4 === 0) philox4x32(Stream.Test, i >>> 2, key, 0, 7, 0, block);
    out[i] = u32ToUnitFloat(block[i % 4]);
  }
  return out;
}

function badValues(f: Float32Array): number[] {
  const bad: number[] = [];
  for (let i = 0; i < f.length; i++) {
    if (!Number.isFinite(f[i]) || Math.abs(f[i]) > FEATURE_CLIP) bad.push(i);
  }
  return bad;
}

describe('features', () => {
  it('has exactly 51 distinct names', () => {
    expect(FEATURE_NAMES.length).toBe(51);
    expect(FEATURE_COUNT).toBe(51);
    expect(new Set(FEATURE_NAMES).size).toBe(51);
  });

  it('docs/FEATURES.md lists every feature, in order', () => {
    const doc = readFileSync(new URL('../../../docs/FEATURES.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\|\s*(\d+)\s*\|\s*`([a-z0-9_]+)`\s*\|/gm)].map((m) => [
      Number(m[1]),
      m[2],
    ]);
    expect(rows).toEqual(FEATURE_NAMES.map((name, i) => [i, name]));
  });

  it('is causal: perturbing every bar after t leaves the features at t bit-identical', () => {
    const base = generateSynthetic({ bars: 3000, seed: 21 });
    const full = computeFeatures(base, L);
    const u = uniforms(64 * 8, 1);
    for (let k = 0; k < 8; k++) {
      const t = L + Math.floor(u[64 * k] * (base.n - L - 1));
      const b = copyBars(base);
      // Change prices, volumes and spacing of every later bar (keeping the bars valid).
      for (let i = t + 1; i < b.n; i++) {
        const scale = 0.5 + u[(64 * k + (i % 63) + 1) % u.length] * 2;
        b.open[i] *= scale;
        b.close[i] *= scale * 1.01;
        b.high[i] = Math.max(b.open[i], b.close[i]) * 1.02;
        b.low[i] = Math.min(b.open[i], b.close[i]) * 0.98;
        b.volume[i] = i % 3 === 0 ? 0 : b.volume[i] * 7;
        b.timestamp[i] += 3_600_000 * 37;
      }
      const perturbed = computeFeatures(b, L);
      const row = (f: Float32Array, r: number) => Array.from(f.subarray(r * 51, r * 51 + 51));
      for (const r of [t, t - 1, Math.max(L, t - 60)])
        expect(row(perturbed, r), `t=${t} row ${r}`).toEqual(row(full, r));
      expect(row(perturbed, t + 1)).not.toEqual(row(full, t + 1));
    }
  });

  it('zeros the warm-up rows and fills the rest', () => {
    const f = computeFeatures(generateSynthetic({ bars: 1000, seed: 2 }), L);
    expect(Array.from(f.subarray(0, L * 51)).every((x) => x === 0)).toBe(true);
    let nonZero = 0;
    for (let i = L * 51; i < f.length; i++) if (f[i] !== 0) nonZero++;
    expect(nonZero / (f.length - L * 51)).toBeGreaterThan(0.9);
  });

  it('stays finite and within [-5, 5] over a long series with flat stretches and zero volume', () => {
    const b = copyBars(generateSynthetic({ bars: 200_000, seed: 8 }));
    // Flat prices with zero volume for 500 bars, flat prices with volume, zero volume alone,
    // a one-tick move after a long flat stretch, and a 50% gap.
    const flat = (from: number, to: number, zeroVolume: boolean) => {
      for (let i = from; i < to; i++) {
        b.open[i] = b.high[i] = b.low[i] = b.close[i] = b.close[from - 1];
        if (zeroVolume) b.volume[i] = 0;
      }
      b.open[to] = b.close[to - 1];
      b.high[to] = Math.max(b.high[to], b.open[to]);
      b.low[to] = Math.min(b.low[to], b.open[to]);
    };
    flat(10_000, 10_500, true);
    flat(20_000, 20_300, false);
    for (let i = 30_000; i < 30_400; i++) b.volume[i] = 0;
    flat(40_000, 40_200, true);
    b.close[40_200] = b.open[40_200] + 1e-4;
    b.high[40_200] = b.close[40_200];
    b.low[40_200] = b.open[40_200];
    b.close[50_000] = b.high[50_000] = b.close[50_000] * 1.5;
    b.open[50_001] = b.close[50_000];
    b.high[50_001] = Math.max(b.high[50_001], b.open[50_001], b.close[50_001]);
    const f = computeFeatures(b, L);
    expect(badValues(f)).toEqual([]);
    // Inside the flat, volume-less stretch the return and volume features are exactly 0 (RSI and
    // the EMA features keep their decayed memory, by design). %B is 0 up to the sliding sum's
    // rounding: its centre (about 1e-15 off) over 2 sd + 1e-7 stays below 1e-6.
    const row = 10_400 * 51;
    for (const name of ['ret_1', 'ret_20', 'volume_z_20', 'signed_volume_20'] as const) {
      expect(f[row + FEATURE_NAMES.indexOf(name)], name).toBe(0);
    }
    expect(Math.abs(f[row + FEATURE_NAMES.indexOf('bb_pctb_20')])).toBeLessThan(1e-6);
  });

  it('is finite for a constant series from the first bar, and with tiny and huge prices', () => {
    for (const price of [1, 1e-6, 1e9]) {
      const n = 400;
      const t0 = Date.UTC(2024, 0, 1);
      const bars: Bars = {
        n,
        timestamp: Float64Array.from({ length: n }, (_, i) => t0 + 60_000 * i),
        open: new Float64Array(n).fill(price),
        high: new Float64Array(n).fill(price),
        low: new Float64Array(n).fill(price),
        close: new Float64Array(n).fill(price),
        volume: new Float64Array(n),
        spreadBps: null,
      };
      expect(badValues(computeFeatures(bars, L)), `price ${price}`).toEqual([]);
      const wild = copyBars(bars);
      const u = uniforms(n, 3);
      for (let i = 1; i < n; i++) {
        wild.close[i] = wild.close[i - 1] * Math.exp((u[i] - 0.5) * 0.2);
        wild.open[i] = wild.close[i - 1];
        wild.high[i] = Math.max(wild.open[i], wild.close[i]) * 1.01;
        wild.low[i] = Math.min(wild.open[i], wild.close[i]) * 0.99;
        wild.volume[i] = u[i] < 0.5 ? 0 : u[i] * 1e12;
      }
      expect(badValues(computeFeatures(wild, L)), `wild ${price}`).toEqual([]);
    }
  });

  it('encodes time of day and weekday for intraday bars only', () => {
    const minute = generateSynthetic({ bars: 400, seed: 1 });
    const f = computeFeatures(minute, L);
    const tod = FEATURE_NAMES.indexOf('tod_sin');
    const t = 300;
    const angle = (2 * Math.PI * (minute.timestamp[t] % 86_400_000)) / 86_400_000;
    expect(f[t * 51 + tod]).toBeCloseTo(Math.sin(angle), 6);
    const daily = generateSynthetic({ bars: 400, seed: 1, barMs: 86_400_000 });
    const g = computeFeatures(daily, L);
    for (const name of ['tod_sin', 'tod_cos', 'dow_sin', 'dow_cos'] as const) {
      expect(g[t * 51 + FEATURE_NAMES.indexOf(name)], name).toBe(0);
    }
  });
});
