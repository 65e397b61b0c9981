/**
 * The streams of a captured graph's parallel branches (src/backend/cuda/stream_plan.ts): every
 * pair of dispatches that conflict on a buffer stays ordered as the list orders it, every branch
 * joins the capturing stream, and dispatches that share no written buffer run side by side.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Access,
  conflicts,
  planStreams,
  type StreamPlan,
} from '../../../../src/backend/cuda/stream_plan.js';

/** Whether dispatch `a` completes before `b` starts in the plan's graph (stream order and waits). */
function orderedBefore(plan: StreamPlan, n: number): (a: number, b: number) => boolean {
  const preds: number[][] = Array.from({ length: n }, () => []);
  const last = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const prev = last.get(plan.stream[i]);
    if (prev !== undefined) preds[i].push(prev);
    last.set(plan.stream[i], i);
    preds[i].push(...plan.waits[i]);
  }
  const ancestors = preds.map(() => new Set<number>());
  for (let i = 0; i < n; i++) {
    for (const p of preds[i]) {
      ancestors[i].add(p);
      for (const q of ancestors[p]) ancestors[i].add(q);
    }
  }
  return (a, b) => ancestors[b].has(a);
}

/** Whether the capturing stream, after its last dispatch and the joins, has every dispatch done. */
function joinsAll(plan: StreamPlan, n: number): boolean {
  const precedes = orderedBefore(plan, n);
  const ends = [...plan.joins];
  for (let i = n - 1; i >= 0; i--) {
    if (plan.stream[i] === 0) {
      ends.push(i);
      break;
    }
  }
  return Array.from({ length: n }, (_, i) => i).every((i) => ends.some((e) => e === i || precedes(i, e)));
}

const access = (reads: string[], writes: string[]): Access<string> => ({ reads, writes });

describe('conflicts', () => {
  it('orders read after write, write after read and write after write; reads of one buffer stay free', () => {
    const deps = conflicts([
      access([], ['a']), // 0 writes a
      access(['a'], ['b']), // 1 reads a (after 0), writes b
      access(['a'], ['c']), // 2 reads a (after 0): free of 1
      access([], ['a']), // 3 writes a: after 0, and after its readers 1 and 2
      access(['b', 'c'], []), // 4 reads b and c: after 1 and 2
      access(['a'], ['a']), // 5 reads and writes a: after 3
    ]);
    expect(deps).toEqual([[], [0], [0], [0, 1, 2], [1, 2], [3]]);
  });
});

describe('planStreams', () => {
  const accesses = fc.array(
    fc.record({
      reads: fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 3 }),
      writes: fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), { maxLength: 2 }),
    }),
    { maxLength: 40 },
  );

  it('keeps every conflicting pair in list order and joins every branch (any sequence, 1 to 4 streams)', () => {
    fc.assert(
      fc.property(accesses, fc.integer({ min: 1, max: 4 }), (list, maxStreams) => {
        const plan = planStreams(list, maxStreams);
        const n = list.length;
        expect(plan.stream).toHaveLength(n);
        expect(plan.streams).toBeLessThanOrEqual(maxStreams);
        const precedes = orderedBefore(plan, n);
        // Brute force: i < j conflict where one writes a buffer the other reads or writes.
        for (let j = 0; j < n; j++) {
          for (let i = 0; i < j; i++) {
            const clash =
              list[i].writes.some((b) => list[j].reads.includes(b) || list[j].writes.includes(b)) ||
              list[j].writes.some((b) => list[i].reads.includes(b));
            if (clash) expect(precedes(i, j), `${i} before ${j}`).toBe(true);
          }
        }
        expect(joinsAll(plan, n)).toBe(true);
        // A wait names an earlier dispatch of another stream, which records an event.
        plan.waits.forEach((w, i) => {
          for (const d of w) {
            expect(d).toBeLessThan(i);
            expect(plan.stream[d]).not.toBe(plan.stream[i]);
            expect(plan.waited[d]).toBe(true);
          }
        });
        for (const j of plan.joins) expect(plan.waited[j]).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('puts everything on the capturing stream in order when it may use one stream', () => {
    const plan = planStreams([access([], ['a']), access([], ['b']), access(['a'], ['c'])], 1);
    expect(plan).toEqual({
      streams: 1,
      stream: [0, 0, 0],
      waits: [[], [], []],
      waited: [false, false, false],
      joins: [],
    });
  });

  it('runs a train step priority update and the next sampling beside the backward pass and Adam', () => {
    // The shape of a DQN train step (src/engine/device_dqn.ts stepList) over two steps.
    const step = [
      access(['ring'], ['tree', 'batch']), // per_sample: sample
      access(['batch'], ['acts']), // dqn_inputs
      access(['params', 'target'], ['acts']), // forwards
      access(['acts', 'batch'], ['deltas', 'td']), // dqn_loss
      access(['params', 'acts'], ['deltas', 'grads']), // mlp_backward
      access(['grads'], ['params', 'moments']), // adam_step
      access(['ring', 'td'], ['tree', 'batch']), // per_sample: priority update
      access(['td'], ['history']), // td copy
    ];
    const plan = planStreams([...step, ...step], 4);
    const precedes = orderedBefore(plan, 16);
    // The priority update and the td copy are ordered after the loss only, not after the backward.
    for (const i of [6, 7]) {
      expect(precedes(3, i)).toBe(true);
      expect(precedes(4, i) || precedes(i, 4)).toBe(false);
      expect(precedes(5, i) || precedes(i, 5)).toBe(false);
    }
    // The next step's sampling waits for the priority update, not for Adam; its inputs wait for
    // the backward (which reads acts) and its forwards for Adam (params).
    expect(precedes(6, 8)).toBe(true);
    expect(precedes(5, 8)).toBe(false);
    expect(precedes(4, 9)).toBe(true);
    expect(precedes(5, 10)).toBe(true);
    expect(joinsAll(plan, 16)).toBe(true);
  });

  it('refuses a stream count below one', () => {
    expect(() => planStreams([], 0)).toThrow(/maxStreams must be an integer >= 1, got 0/);
  });
});
