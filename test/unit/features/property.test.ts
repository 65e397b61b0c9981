/**
 * Property tests of the 51 features on degenerate but valid series (test/unit/data/series.fixtures.ts): every
 * feature of every bar is finite and inside [-FEATURE_CLIP, FEATURE_CLIP], and the first
 * non-finite cell of a feature matrix is found and named.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Bars } from '../../../src/data/types.js';
import {
  computeFeatures,
  FEATURE_CLIP,
  FEATURE_COUNT,
  FEATURE_NAMES,
} from '../../../src/features/features.js';
import { buildSeries, seriesSpec } from '../data/series.fixtures.js';

/** The first out-of-bounds cell as "feature @ bar = value", or null. */
function firstBad(bars: Bars, maxLookback: number): string | null {
  const f = computeFeatures(bars, maxLookback);
  for (let i = 0; i < f.length; i++) {
    if (!(Math.abs(f[i]) <= FEATURE_CLIP))
      return `${FEATURE_NAMES[i % FEATURE_COUNT]} @ bar ${Math.floor(i / FEATURE_COUNT)} = ${f[i]}`;
  }
  return null;
}

describe('features on degenerate series (property)', () => {
  it('are finite and within the clip on every bar of every generated series', () => {
    fc.assert(
      fc.property(seriesSpec, fc.integer({ min: 60, max: 200 }), (spec, maxLookback) => {
        expect(firstBad(buildSeries(spec, maxLookback + 50), maxLookback)).toBeNull();
      }),
      { numRuns: 300, seed: 20261204 },
    );
  });

  it('stay finite on each named degenerate case alone', () => {
    const cases: [string, Parameters<typeof buildSeries>[0]][] = [
      [
        'flat from the first bar, longer than every lookback, no volume',
        spec([{ kind: 'flat', bars: 600 }], 'zero'),
      ],
      [
        'a volatile walk, then a flat stretch longer than every lookback',
        spec(
          [
            { kind: 'walk', bars: 300, log10Vol: -1 },
            { kind: 'flat', bars: 400 },
            { kind: 'walk', bars: 50, log10Vol: -4 },
          ],
          'normal',
        ),
      ],
      [
        'one bar jumping x10 and back',
        spec([{ kind: 'walk', bars: 200, log10Vol: -2 }, jump(true), jump(false)], 'normal'),
      ],
      ['huge volume next to none', spec([{ kind: 'walk', bars: 600, log10Vol: -3 }], 'spiky')],
      ['one-tick moves', spec([{ kind: 'tick', bars: 600 }], 'sparse')],
    ];
    for (const [name, s] of cases) {
      for (const log10Price of [-12, -4, 0, 5, 12]) {
        expect(
          firstBad(buildSeries({ ...s, log10Price }, 200), 120),
          `${name}, price 1e${log10Price}`,
        ).toBeNull();
      }
    }
  });
});

function jump(up: boolean) {
  return { kind: 'jump' as const, up, gapOpen: false };
}

function spec(
  segments: Parameters<typeof buildSeries>[0]['segments'],
  volume: 'normal' | 'zero' | 'sparse' | 'spiky',
) {
  return { log10Price: 0, barMs: 60_000, volume, log10Volume: 15, segments, gaps: [], seed: 1 };
}
