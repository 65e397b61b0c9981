import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CpuBackend } from '../../../../src/backend/cpu/index.js';
import { DeviceLostError, type KernelSpec } from '../../../../src/backend/types.js';
import { findGpu } from '../../../../src/backend/webgpu/gpu.js';
import {
  createWebGpuBackend,
  RUN_CHUNK,
  type WebGpuBackend,
  WebGpuError,
} from '../../../../src/backend/webgpu/index.js';
import { createScanScratch, exclusiveScanDispatches } from '../../../../src/kernels/exclusive_scan.js';
import { philoxStreamDispatch, philoxStreamSpec } from '../../../../src/kernels/philox_stream.js';
import { philox4x32 } from '../../../../src/rng/philox.js';

/** The words philox_stream must write (straight from src/rng/philox.ts). */
function philoxWords(n: number, base: number, step: number): Uint32Array {
  const out = new Uint32Array(n);
  const block = new Uint32Array(4);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(15, base + (i >> 2), step, 0, 1, 2, block);
    out[i] = block[i & 3];
  }
  return out;
}

const philox = (n: number, base: number, step: number) => ({
  n,
  stream: 15,
  base,
  step,
  key: [1, 2] as const,
});
const u32 = async (b: WebGpuBackend, buf: ReturnType<WebGpuBackend['createBuffer']>) =>
  new Uint32Array(await b.download(buf));

describe('WebGPU backend (Dawn on lavapipe)', () => {
  let backend: WebGpuBackend;
  beforeEach(async () => {
    backend = await createWebGpuBackend();
  });
  afterEach(() => backend.destroy());

  it("requests the adapter's real limits and its optional features", async () => {
    // The process's shared Dawn instance (the backend's own): an instance of this test's would be
    // garbage-collected during a later test, and Dawn has aborted the process when an instance is
    // collected while another device works.
    const gpu = await findGpu();
    const adapter = (await gpu.requestAdapter({ powerPreference: 'high-performance' }))!;
    for (const key of [
      'maxBufferSize',
      'maxStorageBufferBindingSize',
      'maxComputeWorkgroupStorageSize',
    ] as const) {
      expect(backend.device.limits[key]).toBe(adapter.limits[key]);
      expect(backend.info.limits[key]).toBe(adapter.limits[key]);
    }
    // lavapipe allows 4 GiB buffers; WebGPU's default limit is 256 MiB.
    expect(backend.device.limits.maxBufferSize).toBeGreaterThan(256 * 2 ** 20);
    for (const f of ['timestamp-query', 'subgroups'] as const) {
      expect(backend.device.features.has(f)).toBe(adapter.features.has(f));
    }
    // No kernel uses f16 arithmetic: the device is not asked for it.
    expect(backend.device.features.has('shader-f16')).toBe(false);
    expect(backend.info.device).toMatch(/llvmpipe/);
  });

  it('uploads, copies and downloads byte ranges', async () => {
    const a = backend.createBuffer(32, 'a');
    const b = backend.createBuffer(32, 'b');
    backend.upload(a, Uint32Array.from([1, 2, 3, 4, 5, 6, 7, 8]));
    backend.upload(b, new Uint32Array(8));
    backend.copy(a, b, 8, 4, 16);
    expect([...(await u32(backend, b))]).toEqual([0, 0, 0, 0, 2, 3, 0, 0]);
    expect([...new Uint32Array(await backend.download(a, 8, 12))]).toEqual([3, 4, 5]);
    expect(() => backend.upload(a, new Uint32Array(9))).toThrow(/exceed its 32 bytes/);
    expect(() => backend.copy(a, a, 4)).toThrow(/onto itself/);
    expect(() => backend.upload(a, new Uint8Array(3))).toThrow(/multiples of 4/);
  });

  it('gives each dispatch of a run its own uniforms, and keeps pending runs apart', async () => {
    const a = backend.createBuffer(4 * 100, 'a');
    const b = backend.createBuffer(4 * 100, 'b');
    const c = backend.createBuffer(4 * 100, 'c');
    backend.run([philoxStreamDispatch(a, philox(100, 0, 1)), philoxStreamDispatch(b, philox(100, 50, 2))]);
    // A second run before any flush must not overwrite the first run's uniforms.
    backend.run([philoxStreamDispatch(c, philox(100, 7, 3))]);
    expect(await u32(backend, a)).toEqual(philoxWords(100, 0, 1));
    expect(await u32(backend, b)).toEqual(philoxWords(100, 50, 2));
    expect(await u32(backend, c)).toEqual(philoxWords(100, 7, 3));
  });

  it('runs the same dispatch object again with its uniforms (checked and packed once), and checks a new uniforms object', async () => {
    const words = backend.createBuffer(4 * 16, 'words');
    const d = philoxStreamDispatch(words, philox(16, 0, 5));
    backend.run([d]);
    backend.upload(words, new Uint32Array(16));
    backend.run([d]);
    expect(await u32(backend, words)).toEqual(philoxWords(16, 0, 5));
    // The same dispatch carrying another uniforms object is a new dispatch to check and pack.
    const again = { ...d, uniforms: { ...d.uniforms } };
    backend.run([again]);
    again.uniforms = { ...d.uniforms, n: -1 };
    expect(() => backend.run([again])).toThrow(/uniform n must be a u32/);
    again.uniforms = philoxStreamDispatch(words, philox(16, 3, 9)).uniforms;
    backend.run([again]);
    expect(await u32(backend, words)).toEqual(philoxWords(16, 3, 9));
  });

  it('keeps many runs without a readback correct and in order', async () => {
    const words = backend.createBuffer(4 * 8, 'words');
    const steps = 200; // several automatic submits of the pending encoder
    for (let s = 0; s < steps; s++) backend.run([philoxStreamDispatch(words, philox(8, 0, s))]);
    expect(await u32(backend, words)).toEqual(philoxWords(8, 0, steps - 1));
  });

  it('reuses a bind group across runs, and drops it when a buffer it binds is destroyed', async () => {
    const create = vi.spyOn(backend.device, 'createBindGroup');
    const a = backend.createBuffer(4 * 64, 'a');
    const b = backend.createBuffer(4 * 64, 'b');
    backend.run([philoxStreamDispatch(a, philox(64, 0, 1)), philoxStreamDispatch(b, philox(64, 0, 1))]);
    await backend.sync();
    // The same buffers and the same (freed, pooled) uniform buffer: no new bind group.
    backend.run([philoxStreamDispatch(a, philox(64, 3, 2)), philoxStreamDispatch(b, philox(64, 4, 2))]);
    expect(await u32(backend, a)).toEqual(philoxWords(64, 3, 2));
    expect(await u32(backend, b)).toEqual(philoxWords(64, 4, 2));
    expect(create).toHaveBeenCalledTimes(2);
    expect(backend.cachedBindGroups).toBe(2);
    backend.destroyBuffer(a);
    expect(backend.cachedBindGroups).toBe(1);
    const c = backend.createBuffer(4 * 64, 'c');
    backend.run([philoxStreamDispatch(c, philox(64, 5, 3)), philoxStreamDispatch(b, philox(64, 6, 3))]);
    expect(await u32(backend, c)).toEqual(philoxWords(64, 5, 3));
    expect(await u32(backend, b)).toEqual(philoxWords(64, 6, 3));
    expect(create).toHaveBeenCalledTimes(3);
  });

  it('submits a long run in chunks as it encodes, in order, each dispatch with its uniforms', async () => {
    const submit = vi.spyOn(backend.device.queue, 'submit');
    const bufs = [0, 1, 2].map((k) => backend.createBuffer(4 * 8, `words${k}`));
    const n = 2 * RUN_CHUNK + 10;
    backend.run(Array.from({ length: n }, (_, s) => philoxStreamDispatch(bufs[s % 3], philox(8, s, s))));
    // The first two chunks are on the GPU already; the last one waits, like any run.
    expect(submit).toHaveBeenCalledTimes(2);
    for (let k = 0; k < 3; k++) {
      const last = n - 1 - ((n - 1 - k) % 3);
      expect(await u32(backend, bufs[k])).toEqual(philoxWords(8, last, last));
    }
  });

  it('orders an upload after the dispatches encoded before it', async () => {
    const n = 3000;
    const data = backend.createBuffer(4 * n, 'data');
    const scratch = createScanScratch(backend, n);
    backend.upload(data, new Uint32Array(n).fill(1));
    backend.run(exclusiveScanDispatches(data, scratch));
    backend.upload(data, new Uint32Array(n).fill(2)); // while the scan is still unsubmitted
    backend.run(exclusiveScanDispatches(data, scratch));
    const out = await u32(backend, data);
    expect(out[n - 1]).toBe(2 * (n - 1));
    expect([...new Uint32Array(await backend.download(scratch.total))]).toEqual([2 * n]);
  });

  it('times dispatches with GPU timestamps', async () => {
    expect(backend.timing).toBe('timestamp-query');
    const words = backend.createBuffer(4 * 65536, 'words');
    const ms = await backend.time([philoxStreamDispatch(words, philox(65536, 0, 0))], 3);
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThan(10_000);
    expect(await u32(backend, words)).toEqual(philoxWords(65536, 0, 0));
  });

  it('rejects a dispatch that does not match its kernel, naming the kernel', () => {
    const words = backend.createBuffer(16, 'words');
    const d = philoxStreamDispatch(words, philox(4, 0, 0));
    expect(() => backend.run([{ ...d, buffers: [] }])).toThrow(
      /kernel philox_stream: expected 1 buffers \(words\)/,
    );
    expect(() => backend.run([{ ...d, uniforms: { ...d.uniforms, n: -1 } }])).toThrow(
      /uniform n must be a u32/,
    );
    const foreign = new CpuBackend().createBuffer(16, 'foreign');
    expect(() => backend.run([{ ...d, buffers: [foreign] }])).toThrow(
      /does not belong to this webgpu backend/,
    );
    expect(() => backend.createBuffer(2 ** 33, 'huge')).toThrow(/exceed this device's maxBufferSize/);
  });

  it('reports a shader compilation error on the next call, naming the kernel', async () => {
    // philox_stream writes u32 words; declaring them f32 makes the WGSL invalid.
    const bad: KernelSpec = {
      ...philoxStreamSpec,
      bindings: [{ name: 'words', type: 'f32', access: 'read_write' }],
    };
    const words = backend.createBuffer(16, 'words');
    backend.run([{ ...philoxStreamDispatch(words, philox(4, 0, 0)), kernel: bad }]);
    await expect(backend.sync()).rejects.toThrow(WebGpuError);
    expect(() => backend.createBuffer(4, 'later')).toThrow(/compiling kernel philox_stream/);
  });

  it('turns a lost device into DeviceLostError on the next call', async () => {
    backend.device.destroy();
    await backend.device.lost;
    expect(() => backend.createBuffer(4, 'x')).toThrow(DeviceLostError);
    await expect(backend.sync()).rejects.toThrow(/WebGPU device lost .*restart the run/);
  });

  it('reports a device lost during a download as DeviceLostError, not as the failed map', async () => {
    const words = backend.createBuffer(1 << 20, 'words');
    const pending = backend.download(words);
    backend.device.destroy();
    await expect(pending).rejects.toThrow(DeviceLostError);
  });

  it('lets go of Dawn on destroy and refuses later calls', () => {
    backend.destroy();
    expect(backend.alive).toBe(false);
    expect(() => backend.createBuffer(4, 'x')).toThrow(/after destroy/);
  });
});
