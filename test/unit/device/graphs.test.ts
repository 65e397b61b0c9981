import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend, Dispatch } from '../../../src/backend/types.js';
import { canCapture, GraphCache } from '../../../src/device/graphs.js';

/** A backend that records every list it runs (by identity) and captures nothing. */
function recording(): { backend: Backend; runs: Dispatch[][] } {
  const runs: Dispatch[][] = [];
  const backend = { kind: 'webgpu', run: (list: Dispatch[]) => runs.push(list) } as unknown as Backend;
  return { backend, runs };
}

describe('GraphCache', () => {
  it('replays the same dispatch objects on a backend without capture, recording once per key', () => {
    const { backend, runs } = recording();
    expect(canCapture(backend)).toBe(false);
    const cache = new GraphCache(backend, 2);
    let recorded = 0;
    const record = () => {
      recorded++;
      return [] as Dispatch[];
    };
    cache.replay('a', record);
    cache.replay('a', record);
    expect(recorded).toBe(1);
    expect(cache.captures).toBe(1);
    expect(runs).toHaveLength(2);
    expect(runs[1]).toBe(runs[0]);
    cache.replay('b', record);
    cache.replay('c', record); // evicts 'a', the least recently used
    cache.replay('a', record);
    expect(recorded).toBe(4);
    expect(runs[4]).not.toBe(runs[0]);
    cache.destroy();
  });

  it('captures on a backend that records graphs', () => {
    const cpu = createCpuBackend();
    let captured = 0;
    let replayed = 0;
    const backend = Object.assign(Object.create(cpu), {
      capture: (_list: Dispatch[]) => {
        captured++;
        return { replay: () => replayed++, destroy() {} };
      },
    }) as Backend;
    expect(canCapture(backend)).toBe(true);
    const cache = new GraphCache(backend);
    cache.replay('k', () => []);
    cache.replay('k', () => []);
    expect([captured, replayed]).toEqual([1, 2]);
    cache.destroy();
    cpu.destroy();
  });
});
