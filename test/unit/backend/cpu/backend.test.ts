import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../../src/backend/cpu/index.js';
import type { KernelSpec } from '../../../../src/backend/types.js';
import { philoxStreamDispatch } from '../../../../src/kernels/philox_stream.js';
import { philox4x32 } from '../../../../src/rng/philox.js';

describe('CPU backend', () => {
  it('uploads, copies and downloads byte ranges', async () => {
    const b = new CpuBackend();
    const a = b.createBuffer(16, 'a');
    const c = b.createBuffer(16, 'c');
    b.upload(a, Float32Array.from([1.5, -2, 3, 4]));
    b.copy(a, c, 8, 4, 0);
    expect([...new Float32Array(await b.download(c))]).toEqual([-2, 3, 0, 0]);
    expect([...new Float32Array(await b.download(a, 12))]).toEqual([4]);
    expect(() => b.upload(a, new Float32Array(5))).toThrow(/exceed its 16 bytes/);
  });

  it("runs a kernel's TS reference with typed views, honouring the grid", async () => {
    const b = new CpuBackend();
    const n = 4 * 64 * 3;
    const words = b.createBuffer(4 * n, 'words');
    const d = philoxStreamDispatch(words, { n, stream: 15, base: 0, step: 0, key: [3, 4] });
    expect(d.groups).toEqual([3, 1, 1]);
    // Two of the three workgroups: the last 64 blocks must stay untouched, as on a GPU.
    b.run([{ ...d, groups: [2, 1, 1] }]);
    const out = new Uint32Array(await b.download(words));
    const block = philox4x32(15, 0, 0, 0, 3, 4);
    expect([...out.subarray(0, 4)]).toEqual([...block]);
    expect(out.subarray(4 * 128).every((w) => w === 0)).toBe(true);
    expect(out.subarray(4 * 127, 4 * 128)).toEqual(philox4x32(15, 127, 0, 0, 3, 4));
  });

  it('validates a whole run before running any of it', async () => {
    const b = new CpuBackend();
    const words = b.createBuffer(16, 'words');
    const good = philoxStreamDispatch(words, { n: 4, stream: 1, base: 0, step: 0, key: [0, 0] });
    const unknown: KernelSpec = { ...good.kernel, name: 'no_such_kernel' };
    expect(() => b.run([good, { ...good, kernel: unknown }])).toThrow(/no kernel named no_such_kernel/);
    expect(new Uint32Array(await b.download(words))).toEqual(new Uint32Array(4));
  });

  it('times with the wall clock', async () => {
    const b = new CpuBackend();
    const words = b.createBuffer(4 * 4096, 'words');
    const ms = await b.time([
      philoxStreamDispatch(words, { n: 4096, stream: 1, base: 0, step: 0, key: [0, 0] }),
    ]);
    expect(ms).toBeGreaterThan(0);
  });
});
