import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import type { ParityCase } from '../../../src/parity/cases.js';
import { compareOutputs, describeMismatch } from '../../../src/parity/compare.js';
import { describeFailure, formatMarkdown, runCase, runParity } from '../../../src/parity/run.js';

describe('parity comparison', () => {
  it('counts exact mismatches and keeps the first ones', () => {
    const c = compareOutputs(Uint32Array.from([1, 2, 3, 4]), Uint32Array.from([1, 5, 3, 0]), {
      kind: 'exact',
    });
    expect(c.pass).toBe(false);
    expect(c.mismatches).toBe(2);
    expect(c.first).toEqual([
      { index: 1, expected: 2, actual: 5 },
      { index: 3, expected: 4, actual: 0 },
    ]);
    expect(c.maxAbsErr).toBe(4);
    expect(describeMismatch('k', c, 'exact')).toMatch(
      /^k: 2 of 4 elements differ \(exact\).*\n {2}\[1\] expected 2, got 5/,
    );
  });

  it('applies atol + rtol * |expected| to floats, NaN matching only NaN', () => {
    const tol = { kind: 'close', atol: 1e-3, rtol: 1e-2 } as const;
    const e = Float32Array.from([0, 100, Number.NaN, Number.POSITIVE_INFINITY]);
    expect(
      compareOutputs(e, Float32Array.from([0.0009, 100.9, Number.NaN, Number.POSITIVE_INFINITY]), tol).pass,
    ).toBe(true);
    const bad = compareOutputs(e, Float32Array.from([0.0011, 101.1, 0, Number.NEGATIVE_INFINITY]), tol);
    expect(bad.first.map((m) => m.index)).toEqual([0, 1, 2, 3]);
    expect(bad.maxRelErr).toBeCloseTo(1.1 / 100, 4);
  });

  it('refuses outputs of another length or type', () => {
    const c = compareOutputs(new Uint32Array(3), new Float32Array(3), { kind: 'exact' });
    expect(c.pass).toBe(false);
    expect(c.note).toBe('expected Uint32Array[3], got Float32Array[3]');
  });
});

describe('parity runner', () => {
  const failing: ParityCase = {
    name: 'fake off by one',
    kernel: 'fake',
    tolerance: { kind: 'exact' },
    expected: () => ({ out: Uint32Array.from([1, 2]) }),
    actual: async () => ({ out: Uint32Array.from([1, 3]) }),
  };

  it('reports a failing case with its first mismatch', async () => {
    const r = await runCase(new CpuBackend(), failing);
    expect(r.pass).toBe(false);
    expect(describeFailure(r)).toMatch(
      /fake off by one \[out\]: 1 of 2 elements differ \(exact\)[\s\S]*\[1\] expected 2, got 3/,
    );
  });

  it('reports a case that throws instead of crashing the run', async () => {
    const r = await runCase(new CpuBackend(), {
      ...failing,
      actual: () => Promise.reject(new Error('no pipeline')),
    });
    expect(r.pass).toBe(false);
    expect(describeFailure(r)).toBe('fake off by one: threw: no pipeline');
  });

  it('runs the selected cases on a backend and formats a PARITY.md section', async () => {
    const report = await runParity(new CpuBackend(), { filter: 'philox_stream', commit: 'abc1234' });
    expect(report.results.length).toBe(4);
    expect(report.pass).toBe(true);
    const md = formatMarkdown(report);
    expect(md).toMatch(/^### \d{4}-\d\d-\d\d — cpu on CPU reference\n/);
    expect(md).toContain('commit: `abc1234`');
    expect(md).toContain('**PASS** (4 passed, 0 failed)');
    expect(md).toMatch(/\| philox_stream n=4099 \(ragged last block\) \| exact \| pass \| 0 \| 0 \| \d+ \|/);
  });
});
