/**
 * The CUDA backend end to end on a machine without a GPU: the real addon and TS backend over a
 * stand-in driver and NVRTC (cuda/addon/mock/mock_cuda.c), which records what each launch
 * received instead of running it. This checks the plumbing (handles, copies, the parameter block,
 * events, graph capture, the error path); the kernels themselves run in the parity suite on a GPU.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CudaBackend, createCudaBackend } from '../../../../src/backend/cuda/index.js';
import { ADDON_PATH, packageRoot } from '../../../../src/backend/cuda/native.js';
import { DeviceLostError, type Dispatch, type KernelSpec } from '../../../../src/backend/types.js';
import { cloneDefaults } from '../../../../src/config.js';
import { DqnDeviceCollector } from '../../../../src/device/collect.js';
import { cudaClusterSharedBytes } from '../../../../src/kernels/collect_dqn.js';
import { philoxStreamSpec } from '../../../../src/kernels/philox_stream.js';
import { randomMarket } from '../../env/fixtures.js';

const root = packageRoot();
const cc = spawnSync('cc', ['--version']).status === 0;
const dir = mkdtempSync(join(tmpdir(), 'foxhunt-cuda-mock-'));
const lib = join(dir, 'libmock_cuda.so');
const addonBuilt = readdirSync(join(root, 'build/Release')).includes('foxhunt_cuda.node');

const MAGIC = 0x4b434f4d;

describe.skipIf(!cc)('CUDA backend over the mock driver (skipped: no C compiler to build the mock)', () => {
  let backend: CudaBackend;

  beforeAll(async () => {
    expect(addonBuilt, `${ADDON_PATH} missing: run npm run build:addon`).toBe(true);
    const res = spawnSync('cc', ['-shared', '-fPIC', '-o', lib, join(root, 'cuda/addon/mock/mock_cuda.c')], {
      encoding: 'utf8',
    });
    expect(res.status, res.stderr).toBe(0);
    process.env.FOXHUNT_LIBCUDA = lib;
    process.env.FOXHUNT_NVRTC = lib;
    process.env.FOXHUNT_CACHE_DIR = join(dir, 'cache');
    backend = await createCudaBackend();
  });

  afterAll(() => backend?.destroy());

  it('reports the device, driver and compiler', () => {
    expect(backend.info.device).toBe('foxhunt mock GPU');
    expect(backend.info.driver).toBe('CUDA 13.0');
    expect(backend.info.limits.computeCapability).toBe('9.0');
    expect(backend.info.limits.smCount).toBe(132);
    expect(backend.info.limits.compiler).toBe('nvrtc 13.0');
    // 2 * 2.619 GHz * 768 bytes: the peak the benchmarks compare against.
    expect(backend.info.limits.peakMemoryGBs).toBe(4023);
  });

  it('zero-fills new buffers and round-trips uploads, copies and downloads at offsets', async () => {
    const a = backend.createBuffer(64, 'a');
    const b = backend.createBuffer(64, 'b');
    expect(new Uint8Array(await backend.download(a))).toEqual(new Uint8Array(64));
    backend.upload(a, new Uint32Array([1, 2, 3, 4]), 8);
    backend.copy(a, b, 12, 12, 4);
    expect(Array.from(new Uint32Array(await backend.download(a, 8, 16)))).toEqual([1, 2, 3, 4]);
    expect(Array.from(new Uint32Array(await backend.download(b, 0, 20)))).toEqual([0, 2, 3, 4, 0]);
    expect(() => backend.upload(a, new Uint8Array(8), 60)).toThrow(/outside buffer a of 64 bytes/);
    backend.destroyBuffer(a);
    expect(() => backend.upload(a, new Uint8Array(4))).toThrow(/buffer a was destroyed/);
    backend.destroyBuffer(b);
  });

  it('launches with the grid, block and packed parameters of the dispatch', async () => {
    const words = backend.createBuffer(256, 'words');
    const d: Dispatch = {
      kernel: philoxStreamSpec,
      buffers: [words],
      uniforms: { n: 7, stream: 15, base: 0xfffffffe, step: 3, key0: 0xdeadbeef, key1: 42 },
      groups: [2, 3, 1],
    };
    backend.run([d]);
    const got = new Uint32Array(await backend.download(words));
    expect(got[0]).toBe(MAGIC);
    expect(Array.from(got.subarray(2, 9))).toEqual([2, 3, 1, ...philoxStreamSpec.workgroupSize, 0]);
    expect(got[9]).toBe(8 + 6 * 4);
    const params = new DataView(got.buffer, 40, 32);
    expect(params.getBigUint64(0, true)).toBeGreaterThan(0n);
    expect(Array.from({ length: 6 }, (_, i) => params.getUint32(8 + 4 * i, true))).toEqual([
      7, 15, 0xfffffffe, 3, 0xdeadbeef, 42,
    ]);
    backend.destroyBuffer(words);
  });

  it('launches with the dynamic shared memory of the spec, raising the function limit past 48 KiB', async () => {
    const words = backend.createBuffer(256, 'words');
    const uniforms = { n: 1, stream: 0, base: 0, step: 0, key0: 0, key1: 0 };
    const spec: KernelSpec = { ...philoxStreamSpec, constants: { SHARED_CASE: 1 }, sharedBytes: 100 * 1024 };
    backend.run([{ kernel: spec, buffers: [words], uniforms, groups: [1, 1, 1] }]);
    const got = new Uint32Array(await backend.download(words));
    expect(got[0]).toBe(MAGIC);
    // The mock driver refuses a launch over its function's limit, so this also shows the limit was raised.
    expect(got[8]).toBe(100 * 1024);
    backend.destroyBuffer(words);
  });

  it('launches a cluster kernel with cuLaunchKernelEx, allowing non-portable sizes past 8 blocks, also in graphs', async () => {
    const words = backend.createBuffer(256, 'words');
    const uniforms = { n: 1, stream: 0, base: 0, step: 0, key0: 0, key1: 0 };
    // The mock appends the cluster dimensions after the 32-byte parameter block (u32 18..20).
    const launch = async (cluster: [number, number, number], groups: [number, number, number]) => {
      const spec: KernelSpec = { ...philoxStreamSpec, constants: { CLUSTER_CASE: cluster[0] }, cluster };
      backend.run([{ kernel: spec, buffers: [words], uniforms, groups }]);
      return new Uint32Array(await backend.download(words));
    };
    let got = await launch([2, 1, 1], [4, 1, 1]);
    expect(Array.from(got.subarray(2, 5))).toEqual([4, 1, 1]);
    expect(Array.from(got.subarray(18, 21))).toEqual([2, 1, 1]);
    // The mock refuses 16 unless the function allows non-portable cluster sizes.
    got = await launch([16, 1, 1], [32, 1, 1]);
    expect(Array.from(got.subarray(18, 21))).toEqual([16, 1, 1]);
    const spec: KernelSpec = { ...philoxStreamSpec, constants: { CLUSTER_CASE: 4 }, cluster: [4, 1, 1] };
    expect(() => backend.run([{ kernel: spec, buffers: [words], uniforms, groups: [6, 1, 1] }])).toThrow(
      /grid 6,1,1 must be a multiple of its cluster 4,1,1/,
    );
    const seq = backend.capture([{ kernel: spec, buffers: [words], uniforms, groups: [8, 1, 1] }]);
    seq.replay();
    got = new Uint32Array(await backend.download(words));
    expect(Array.from(got.subarray(2, 5))).toEqual([8, 1, 1]);
    expect(Array.from(got.subarray(18, 21))).toEqual([4, 1, 1]);
    seq.destroy();
    backend.destroyBuffer(words);
  });

  it('asks the driver how many clusters of a kernel fit at once, and the cluster collector fills one wave', () => {
    // The mock's 8 GPCs (18, 18, 18, 18, 16, 16, 16, 12 SMs) at one block per SM.
    const spec = (cluster: number): KernelSpec => ({
      ...philoxStreamSpec,
      constants: { CLUSTER_CASE: cluster },
      cluster: [cluster, 1, 1],
      sharedBytes: 200 * 1024,
    });
    expect(backend.maxActiveClusters(spec(8))).toBe(15);
    expect(backend.maxActiveClusters(spec(16))).toBe(7);
    expect(backend.maxActiveClusters({ ...philoxStreamSpec })).toBeUndefined();
    // N = 128 in 16 clusters of 8 would take two waves: the collector takes 9 episodes per cluster.
    const cfg = cloneDefaults();
    cfg.rollout.episodes = 128;
    cfg.rollout.steps = 4;
    cfg.env.episodeBars = 12;
    const market = randomMarket(400, 5);
    const split = { start: 0, end: 400 };
    const init = { backend, market, split, cfg, algo: 'dqn' as const, variant: 'cluster' as const };
    const tf32 = new DqnDeviceCollector({ ...init, constants: { TF32: 1 } });
    expect(tf32.options.tileEpisodes).toBe(9);
    // A warp for each episode's decision.
    expect(tf32.options.threads).toBe(288);
    expect(tf32.spec.workgroupSize).toEqual([288, 1, 1]);
    expect(tf32.spec.sharedBytes).toBe(
      cudaClusterSharedBytes({ tileEpisodes: 9, cluster: 8, tf32: true, threads: 288 }),
    );
    tf32.destroy();
    // An explicit tile stands.
    const eight = new DqnDeviceCollector({ ...init, constants: { TF32: 1 }, tile: { tileEpisodes: 8 } });
    expect(eight.options.tileEpisodes).toBe(8);
    expect(eight.options.threads).toBe(256);
    eight.destroy();
    // No variant: the collector chooses the cluster kernel itself on this sm_90 device at N = 128,
    // in the same shape (what `foxhunt bench collect` and training build).
    const own = new DqnDeviceCollector({ ...init, variant: undefined, constants: { TF32: 1 } });
    expect(own.options).toMatchObject({ variant: 'cluster', tileEpisodes: 9, threads: 288 });
    own.destroy();
  });

  it('launches a pdl kernel with cuLaunchKernelEx and programmatic stream serialization, also in graphs', async () => {
    const uniforms = { n: 1, stream: 0, base: 0, step: 0, key0: 0, key1: 0 };
    const pdl: KernelSpec = { ...philoxStreamSpec, pdl: true };
    // The mock writes the attribute id 6 and its value 1 after the 32-byte parameter block (u32 18, 19).
    const launched = async (spec: KernelSpec, captured: boolean) => {
      const words = backend.createBuffer(256, 'words');
      const d: Dispatch = { kernel: spec, buffers: [words], uniforms, groups: [3, 1, 1] };
      if (captured) {
        const seq = backend.capture([d]);
        seq.replay();
        seq.destroy();
      } else {
        backend.run([d]);
      }
      const got = new Uint32Array(await backend.download(words));
      backend.destroyBuffer(words);
      expect(got[0]).toBe(MAGIC);
      expect(Array.from(got.subarray(2, 5))).toEqual([3, 1, 1]);
      return Array.from(got.subarray(18, 20));
    };
    expect(await launched(pdl, false)).toEqual([6, 1]);
    expect(await launched(pdl, true)).toEqual([6, 1]);
    // A plain spec goes through cuLaunchKernel: nothing after the parameter block.
    expect(await launched(philoxStreamSpec, false)).toEqual([0, 0]);
    expect(await launched(philoxStreamSpec, true)).toEqual([0, 0]);
  });

  it('compiles a kernel for the device arch with its constants defined, from the real source and headers', async () => {
    const spec: KernelSpec = { ...philoxStreamSpec, constants: { UNROLL: 4, SLOPE: 0.01 } };
    const words = backend.createBuffer(256, 'words');
    backend.run([
      {
        kernel: spec,
        buffers: [words],
        uniforms: { n: 1, stream: 0, base: 0, step: 0, key0: 0, key1: 0 },
        groups: [1, 1, 1],
      },
    ]);
    const cached = readdirSync(join(dir, 'cache')).filter((f) => f.startsWith('philox_stream-'));
    expect(cached.length).toBeGreaterThanOrEqual(1);
    const { readFileSync } = await import('node:fs');
    const image = cached
      .map((f) => readFileSync(join(dir, 'cache', f), 'utf8'))
      .find((t) => t.includes('SLOPE'));
    expect(image).toBeDefined();
    expect(image).toContain('--gpu-architecture=sm_90');
    expect(image).toContain('#define WG_X 64');
    expect(image).toContain('#define UNROLL 4');
    expect(image).toContain('#define SLOPE (0.01f)');
    expect(image).toContain('struct Uniforms {\n  unsigned int n;');
    expect(image).toContain('philox_stream(KERNEL_ARGS)');
    expect(image).toContain('//header philox.cuh');
    backend.destroyBuffer(words);
  });

  it('times a sequence with events, per repeat', async () => {
    const words = backend.createBuffer(256, 'words');
    const d: Dispatch = {
      kernel: philoxStreamSpec,
      buffers: [words],
      uniforms: { n: 4, stream: 0, base: 0, step: 0, key0: 0, key1: 0 },
      groups: [1, 1, 1],
    };
    // The mock clock advances 1 ms per launch: 2 launches per pass.
    expect(await backend.time([d, d], 3)).toBe(2);
    backend.destroyBuffer(words);
  });

  it('captures a sequence into a graph that replays every launch in order', async () => {
    const a = backend.createBuffer(256, 'a');
    const b = backend.createBuffer(256, 'b');
    const mk = (buf: typeof a, n: number): Dispatch => ({
      kernel: philoxStreamSpec,
      buffers: [buf],
      uniforms: { n, stream: 0, base: 0, step: 0, key0: 0, key1: 0 },
      groups: [1, 1, 1],
    });
    const seq = backend.capture([mk(a, 11), mk(b, 22)]);
    // Capturing records; nothing has run yet.
    expect(new Uint32Array(await backend.download(a))[0]).toBe(0);
    seq.replay();
    const a1 = new Uint32Array(await backend.download(a));
    const b1 = new Uint32Array(await backend.download(b));
    expect(a1[0]).toBe(MAGIC);
    expect(a1[10 + 2]).toBe(11);
    expect(b1[10 + 2]).toBe(22);
    expect(b1[1]).toBe(a1[1] + 1);
    seq.replay();
    expect(new Uint32Array(await backend.download(a))[1]).toBe(a1[1] + 2);
    seq.destroy();
    expect(() => seq.replay()).toThrow(/destroyed/);
    backend.destroyBuffer(a);
    backend.destroyBuffer(b);
  });

  it('captures independent dispatches as branches that join the capture and all replay', async () => {
    const a = backend.createBuffer(256, 'a');
    const b = backend.createBuffer(256, 'b');
    const mk = (buf: typeof a, n: number): Dispatch => ({
      kernel: philoxStreamSpec,
      buffers: [buf],
      uniforms: { n, stream: 0, base: 0, step: 0, key0: 0, key1: 0 },
      groups: [1, 1, 1],
    });
    // b's launches share no buffer with a's: a second stream, forked from and joined to the
    // capturing one (the mock fails the capture's end with CUDA_ERROR_STREAM_CAPTURE_UNJOINED
    // otherwise). Twice, so the second capture reuses the branch stream.
    for (const round of [0, 1]) {
      const seq = backend.capture([mk(a, 11), mk(b, 22), mk(b, 23), mk(a, 33)]);
      seq.replay();
      const a1 = new Uint32Array(await backend.download(a));
      const b1 = new Uint32Array(await backend.download(b));
      expect([a1[10 + 2], b1[10 + 2]], `round ${round}`).toEqual([33, 23]);
      // Issue order: a 11, b 22, b 23, a 33.
      expect(a1[1] - b1[1]).toBe(1);
      seq.destroy();
    }
    backend.destroyBuffer(a);
    backend.destroyBuffer(b);
  });

  it('runs beside: a second stream after the first one, joined only where a buffer conflicts', async () => {
    const log = join(dir, 'streams.log');
    const buf = (label: string) => backend.createBuffer(256, label);
    const [nets, out, x, y] = [buf('nets'), buf('out'), buf('x'), buf('y')];
    // Philox's kernel with a second, read-only binding: the mock runs any kernel it finds by name.
    const spec: KernelSpec = {
      ...philoxStreamSpec,
      bindings: [...philoxStreamSpec.bindings, { name: 'src', type: 'u32', access: 'read' }],
    };
    const mk = (dst: typeof nets, src: typeof nets, n = 1): Dispatch => ({
      kernel: spec,
      buffers: [dst, src],
      uniforms: { n, stream: 0, base: 0, step: 0, key0: 0, key1: 0 },
      groups: [1, 1, 1],
    });
    const ops = async (body: () => void | Promise<void>): Promise<string[]> => {
      rmSync(log, { force: true });
      process.env.FOXHUNT_MOCK_LOG = log;
      try {
        await body();
      } finally {
        delete process.env.FOXHUNT_MOCK_LOG;
      }
      return existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [];
    };
    // The validation (reads nets, writes out) on the side stream, after the compute stream's work.
    const first = await ops(() => backend.runBeside([mk(out, nets)]));
    expect(first).toHaveLength(4);
    const [, ev, main] = /^record (e\d+) (s\d+)$/.exec(first[0]) ?? [];
    const [, side] = /^wait (s\d+) /.exec(first[1]) ?? [];
    expect(side).toBeDefined();
    expect(side).not.toBe(main);
    expect(first).toEqual([
      `record ${ev} ${main}`,
      `wait ${side} ${ev}`,
      `launch ${side}`,
      `record ${ev} ${side}`,
    ]);
    // A collection that only reads nets too: no wait. A copy into nets: waits first.
    expect(await ops(() => backend.run([mk(x, nets)]))).toEqual([`launch ${main}`]);
    expect(await ops(() => backend.copy(y, nets, 16))).toEqual([`wait ${main} ${ev}`, `dtod ${main}`]);
    // Joined once: later work does not wait again.
    expect(await ops(() => backend.copy(y, nets, 16))).toEqual([`dtod ${main}`]);
    // Its output comes back through the side stream alone, after which nothing is left to join.
    backend.runBeside([mk(out, nets, 5)]);
    expect(await ops(async () => void (await backend.download(out, 0, 16)))).toEqual([
      `sync ${side}`,
      `dtoh ${side}`,
      `sync ${side}`,
    ]);
    expect(await ops(() => backend.upload(nets, new Uint32Array(4)))).toEqual([`htod ${main}`]);
    // The launch record: its parameter block from word 10, two pointers, then the uniforms (n first).
    expect(new Uint32Array(await backend.download(out))[10 + 4]).toBe(5);
    // Reading what it writes, in a launch, a graph or a download of another range: waits.
    backend.runBeside([mk(out, nets)]);
    expect(await ops(() => backend.run([mk(x, out)]))).toEqual([`wait ${main} ${ev}`, `launch ${main}`]);
    const seq = backend.capture([mk(y, out)]);
    backend.runBeside([mk(out, nets)]);
    expect(await ops(() => seq.replay())).toEqual([`wait ${main} ${ev}`, `graph ${main}`]);
    seq.destroy();
    backend.runBeside([mk(out, nets)]);
    expect(await ops(() => backend.sync())).toEqual([`wait ${main} ${ev}`, `sync ${main}`]);
    for (const b of [nets, out, x, y]) backend.destroyBuffer(b);
  });

  it('rejects a dispatch that does not match its kernel before launching anything', () => {
    const words = backend.createBuffer(16, 'words');
    const bad: Dispatch = {
      kernel: philoxStreamSpec,
      buffers: [words],
      uniforms: { n: -1 },
      groups: [1, 1, 1],
    };
    expect(() => backend.run([bad])).toThrow(/kernel philox_stream: uniform n must be a u32/);
    backend.destroyBuffer(words);
  });

  it('turns driver errors into one line with the API, the error name and what to do', () => {
    expect(() => backend.createBuffer(2 ** 41, 'huge')).toThrow(
      /^cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY \(out of memory\): the GPU is out of memory/,
    );
  });

  it('reports a lost context as DeviceLostError', async () => {
    process.env.FOXHUNT_MOCK_FAULT = '1';
    try {
      const err = await backend.sync().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DeviceLostError);
      expect((err as Error).message).toMatch(
        /cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS .*restart the run/,
      );
    } finally {
      delete process.env.FOXHUNT_MOCK_FAULT;
    }
  });

  it('passes a compile error through with the compiler log', async () => {
    const { findCompiler } = await import('../../../../src/backend/cuda/compile.js');
    const { loadNative } = await import('../../../../src/backend/cuda/native.js');
    const compiler = findCompiler(loadNative());
    expect(() => compiler.compile('broken', '#error nope', {}, [])).toThrow(
      /CUDA kernel broken failed to compile \(NVRTC\): .*NVRTC_ERROR_COMPILATION\nkernel.cu\(1\): error: mock compile error/s,
    );
  });
});
