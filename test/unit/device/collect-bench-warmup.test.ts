/**
 * The collection benchmark's warm-up (src/device/collect_bench.ts warmUp): one launch that compiles
 * the pipeline, then, on a GPU, launches until WARM_MS of wall clock have passed, so the timed
 * launches do not start at the idle clocks a GPU drops to while a process compiles its shaders.
 */
import { describe, expect, it } from 'vitest';
import type { Backend, Dispatch } from '../../../src/backend/types.js';
import { WARM_MS, warmUp } from '../../../src/device/collect_bench.js';

/** A backend whose launches take `launchMs` of wall clock each, counting them. */
function fakeBackend(kind: 'cpu' | 'webgpu', launchMs: number) {
  let queued = 0;
  const counts = { launches: 0 };
  const backend = {
    kind,
    run(ds: Dispatch[]) {
      queued += ds.length;
    },
    async sync() {
      await new Promise((r) => setTimeout(r, queued * launchMs));
      counts.launches += queued;
      queued = 0;
    },
  } as unknown as Backend;
  return { backend, counts };
}

const dispatch = () => ({}) as Dispatch;

describe('bench warm-up', () => {
  it('keeps a GPU busy for WARM_MS after the compiling launch', async () => {
    const { backend, counts } = fakeBackend('webgpu', 5);
    const t0 = performance.now();
    await warmUp(backend, dispatch);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(WARM_MS);
    // 5 ms launches: the compiling one, then about WARM_MS / 5 more (timers may run late, not early).
    expect(counts.launches).toBeGreaterThan(10);
    expect(counts.launches).toBeLessThanOrEqual(1 + Math.ceil(WARM_MS / 5) + 1);
  });

  it('runs a launch longer than WARM_MS once more only', async () => {
    const { backend, counts } = fakeBackend('webgpu', WARM_MS + 20);
    await warmUp(backend, dispatch);
    expect(counts.launches).toBe(2);
  });

  it('runs the CPU backend once (no clocks to raise)', async () => {
    const { backend, counts } = fakeBackend('cpu', 5);
    await warmUp(backend, dispatch);
    expect(counts.launches).toBe(1);
  });
});
