/**
 * Output comparison for parity runs: exact equality for integer outputs, `|a - e| <= atol +
 * rtol * |e|` for floats (NaN matches only NaN, infinities only themselves). A comparison keeps
 * the first mismatches and the largest errors so a failure says where and how far off it is.
 */
import type { TypedArray } from '../kernels/reference.js';

export type Tolerance = { kind: 'exact' } | { kind: 'close'; atol: number; rtol: number };

export interface Mismatch {
  index: number;
  expected: number;
  actual: number;
}

export interface Comparison {
  pass: boolean;
  count: number;
  mismatches: number;
  /** Largest |actual - expected| over all elements (0 for exact matches). */
  maxAbsErr: number;
  /** Largest |actual - expected| / |expected| over elements with expected != 0. */
  maxRelErr: number;
  /** The first few mismatching elements. */
  first: Mismatch[];
  /** Why the outputs could not be compared element-wise (length or type differ). */
  note?: string;
}

const FIRST = 8;

export function compareOutputs(expected: TypedArray, actual: TypedArray, tol: Tolerance): Comparison {
  const result: Comparison = {
    pass: true,
    count: expected.length,
    mismatches: 0,
    maxAbsErr: 0,
    maxRelErr: 0,
    first: [],
  };
  if (expected.length !== actual.length || expected.constructor !== actual.constructor) {
    return {
      ...result,
      pass: false,
      note: `expected ${expected.constructor.name}[${expected.length}], got ${actual.constructor.name}[${actual.length}]`,
    };
  }
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i];
    const a = actual[i];
    let ok: boolean;
    if (Number.isNaN(e) || Number.isNaN(a)) ok = Number.isNaN(e) && Number.isNaN(a);
    else if (!Number.isFinite(e) || !Number.isFinite(a)) ok = e === a;
    else {
      const err = Math.abs(a - e);
      result.maxAbsErr = Math.max(result.maxAbsErr, err);
      if (e !== 0) result.maxRelErr = Math.max(result.maxRelErr, err / Math.abs(e));
      ok = tol.kind === 'exact' ? a === e : err <= tol.atol + tol.rtol * Math.abs(e);
    }
    if (!ok) {
      result.mismatches++;
      if (result.first.length < FIRST) result.first.push({ index: i, expected: e, actual: a });
    }
  }
  result.pass = result.mismatches === 0;
  return result;
}

export function describeTolerance(tol: Tolerance): string {
  return tol.kind === 'exact' ? 'exact' : `atol ${tol.atol} + rtol ${tol.rtol}`;
}

/** A multi-line explanation of a failed comparison. */
export function describeMismatch(name: string, c: Comparison, tolerance: string): string {
  if (c.note) return `${name}: ${c.note}`;
  const lines = [
    `${name}: ${c.mismatches} of ${c.count} elements differ (${tolerance}); max abs err ${c.maxAbsErr}, max rel err ${c.maxRelErr}`,
    ...c.first.map((m) => `  [${m.index}] expected ${m.expected}, got ${m.actual}`),
  ];
  return lines.join('\n');
}
