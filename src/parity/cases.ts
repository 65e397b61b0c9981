/**
 * The parity suite, written once as data: each case names a kernel, builds deterministic inputs
 * (Philox, stream `Test`), says what the outputs must be using plain TS that does not go through
 * any backend (src/rng/philox.ts, src/nets/forward.ts, a serial loop), and runs the kernel on a
 * given backend. The same list runs on the CPU backend, WebGPU (Dawn or a browser) and CUDA,
 * from Vitest (test/parity, test/browser) and from `foxhunt parity`. Browser-safe: no Node imports.
 */

import type { Backend, BackendKind, DeviceBuffer, Dispatch } from '../backend/types.js';
import { denseForwardDispatch } from '../kernels/dense_forward.js';
import {
  createScanScratch,
  exclusiveScanDispatches,
  exclusiveScanSpec,
  SCAN_TILE,
} from '../kernels/exclusive_scan.js';
import { philoxStreamDispatch } from '../kernels/philox_stream.js';
import type { TypedArray } from '../kernels/reference.js';
import { denseForward as denseForwardTs, initParams } from '../nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  layerByName,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import { collectParityCases } from './collect_cases.js';
import type { Tolerance } from './compare.js';
import { curiosityParityCases } from './curiosity_cases.js';
import { dqnParityCases } from './dqn_cases.js';
import { iqnParityCases } from './iqn_cases.js';
import { learnParityCases } from './learn_cases.js';
import { replayParityCases } from './replay_cases.js';
import { validateParityCases } from './validate_cases.js';

export type Outputs = Record<string, TypedArray>;

export interface ParityCase {
  /** Unique, says what is covered: `dense_forward ppo_critic.value_layer_1 512->384 relu B=77`. */
  name: string;
  /** Kernel base name (the twins under test). */
  kernel: string;
  /** The backends that have the kernel (default: all); others skip the case. */
  backends?: BackendKind[];
  /**
   * Why this backend cannot run the case (a device feature it lacks), or null when it can: the
   * case is then skipped with that reason instead of failing.
   */
  requires?: (backend: Backend) => string | null;
  tolerance: Tolerance;
  /** What the outputs must be, computed in plain TS without a backend (memoised). */
  expected(): Outputs;
  /** Runs the kernel on `backend` and reads the outputs back. */
  actual(backend: Backend): Promise<Outputs>;
}

/** Philox words for test inputs: counter (Test, input id, block, 0), key of seed 1. */
function testWords(input: number, n: number): Uint32Array {
  const out = new Uint32Array(n);
  const block = new Uint32Array(4);
  const [k0, k1] = seedToKey(1);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(Stream.Test, input, i >>> 2, 0, k0, k1, block);
    out[i] = block[i & 3];
  }
  return out;
}

/** Uniform f32 in [lo, hi) from `testWords`. */
function testFloats(input: number, n: number, lo: number, hi: number): Float32Array {
  return Float32Array.from(testWords(input, n), (w) => lo + (hi - lo) * u32ToUnitFloat(w));
}

function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/** Uploads `data` into a fresh buffer (at least 4 bytes, so empty inputs still bind). */
function uploaded(backend: Backend, data: TypedArray, label: string): DeviceBuffer {
  const buf = backend.createBuffer(Math.max(4, data.byteLength), label);
  if (data.byteLength > 0) backend.upload(buf, data);
  return buf;
}

/** Runs `body` and destroys every buffer it created, whatever happens. */
async function withBuffers<T>(
  backend: Backend,
  body: (track: (b: DeviceBuffer) => DeviceBuffer) => Promise<T>,
): Promise<T> {
  const made: DeviceBuffer[] = [];
  try {
    return await body((b) => {
      made.push(b);
      return b;
    });
  } finally {
    for (const b of made) backend.destroyBuffer(b);
  }
}

async function readU32(backend: Backend, buf: DeviceBuffer, n: number): Promise<Uint32Array> {
  return n === 0 ? new Uint32Array(0) : new Uint32Array(await backend.download(buf, 0, 4 * n));
}

async function readF32(backend: Backend, buf: DeviceBuffer, n: number): Promise<Float32Array> {
  return new Float32Array(await backend.download(buf, 0, 4 * n));
}

// ---- philox_stream -------------------------------------------------------------------------

interface PhiloxCase {
  n: number;
  base: number;
  step: number;
  seed: number;
  /** Replace the dispatch grid (to cover the flat workgroup id over y and z). */
  groups?: [number, number, number];
  what: string;
}

function philoxCase(c: PhiloxCase): ParityCase {
  const key = seedToKey(c.seed);
  const params = { n: c.n, stream: Stream.Test, base: c.base, step: c.step, key };
  return {
    name: `philox_stream ${c.what}`,
    kernel: 'philox_stream',
    tolerance: { kind: 'exact' },
    expected: memo(() => {
      const words = new Uint32Array(c.n);
      const block = new Uint32Array(4);
      for (let i = 0; i < c.n; i++) {
        if ((i & 3) === 0)
          philox4x32(Stream.Test, (c.base + (i >>> 2)) >>> 0, c.step, 0, key[0], key[1], block);
        words[i] = block[i & 3];
      }
      return { words };
    }),
    actual: (backend) =>
      withBuffers(backend, async (track) => {
        // Pre-filled with a pattern so that words the kernel skips would show up as mismatches.
        const words = track(uploaded(backend, new Uint32Array(c.n).fill(0xdeadbeef), 'words'));
        const d = philoxStreamDispatch(words, params);
        backend.run([c.groups ? { ...d, groups: c.groups } : d]);
        return { words: await readU32(backend, words, c.n) };
      }),
  };
}

// ---- dense_forward -------------------------------------------------------------------------

interface DenseCase {
  layout: NetLayout;
  netId: number;
  layer: string;
  batch: number;
}

/** f32 rounding differs only where a GPU fuses multiply-adds; sums of up to 512 terms of O(1). */
const DENSE_TOLERANCE: Tolerance = { kind: 'close', atol: 1e-5, rtol: 1e-5 };

function denseCase(c: DenseCase, input: number): ParityCase {
  const layer = layerByName(c.layout, c.layer);
  const inputs = memo(() => ({
    params: initParams(c.layout, c.netId, 7),
    x: testFloats(input, c.batch * layer.in, -2, 2),
  }));
  return {
    name: `dense_forward ${c.layout.kind}.${c.layer} ${layer.in}->${layer.out} ${layer.act} B=${c.batch}`,
    kernel: 'dense_forward',
    tolerance: DENSE_TOLERANCE,
    expected: memo(() => {
      const { params, x } = inputs();
      const y = new Float32Array(c.batch * layer.out);
      for (let b = 0; b < c.batch; b++) denseForwardTs(params, layer, x, b * layer.in, y, b * layer.out);
      return { y };
    }),
    actual: (backend) =>
      withBuffers(backend, async (track) => {
        const { params, x } = inputs();
        const p = track(uploaded(backend, params, 'params'));
        const xb = track(uploaded(backend, x, 'x'));
        const y = track(uploaded(backend, new Float32Array(c.batch * layer.out).fill(Number.NaN), 'y'));
        backend.run([denseForwardDispatch(p, layer, xb, y, c.batch)]);
        return { y: await readF32(backend, y, c.batch * layer.out) };
      }),
  };
}

// ---- exclusive_scan ------------------------------------------------------------------------

interface ScanCase {
  n: number;
  /** Values below this bound (2^32: full range, sums wrap modulo 2^32). */
  bound: number;
  what: string;
}

function scanCase(c: ScanCase, input: number): ParityCase {
  const data = memo(() =>
    Uint32Array.from(testWords(input, c.n), (w) => (c.bound >= 2 ** 32 ? w : w % c.bound)),
  );
  return {
    name: `exclusive_scan n=${c.n} ${c.what}`,
    kernel: 'exclusive_scan',
    tolerance: { kind: 'exact' },
    expected: memo(() => {
      const src = data();
      const scanned = new Uint32Array(c.n);
      let sum = 0;
      for (let i = 0; i < c.n; i++) {
        scanned[i] = sum;
        sum = (sum + src[i]) >>> 0;
      }
      return { scanned, total: Uint32Array.of(sum) };
    }),
    actual: (backend) =>
      withBuffers(backend, async (track) => {
        const buf = track(uploaded(backend, data(), 'data'));
        const scratch = createScanScratch(backend, c.n);
        scratch.sums.forEach(track);
        backend.run(exclusiveScanDispatches(buf, scratch));
        return { scanned: await readU32(backend, buf, c.n), total: await readU32(backend, scratch.total, 1) };
      }),
  };
}

/** One scan level (phase 0 then 1 with a host-scanned sums) on a grid overshooting over y. */
function scanGridCase(input: number): ParityCase {
  const tiles = 5;
  const n = tiles * SCAN_TILE - 3;
  const groups: [number, number, number] = [2, 3, 1];
  const data = memo(() => Uint32Array.from(testWords(input, n), (w) => w % 1000));
  return {
    name: `exclusive_scan n=${n} one level on a ${groups.join('x')} grid (flat tile id, overshoot)`,
    kernel: 'exclusive_scan',
    tolerance: { kind: 'exact' },
    expected: memo(() => {
      const src = data();
      const scanned = new Uint32Array(n);
      for (let i = 1; i < n; i++) scanned[i] = (scanned[i - 1] + src[i - 1]) >>> 0;
      return { scanned };
    }),
    actual: (backend) =>
      withBuffers(backend, async (track) => {
        const buf = track(uploaded(backend, data(), 'data'));
        const sums = track(backend.createBuffer(4 * tiles, 'sums'));
        const pass = (phase: number): Dispatch => ({
          kernel: exclusiveScanSpec,
          buffers: [buf, sums],
          uniforms: { n, phase },
          groups,
        });
        backend.run([pass(0)]);
        const tileSums = await readU32(backend, sums, tiles);
        let acc = 0;
        const offsets = tileSums.map((s) => {
          const o = acc;
          acc = (acc + s) >>> 0;
          return o;
        });
        backend.upload(sums, offsets);
        backend.run([pass(1)]);
        return { scanned: await readU32(backend, buf, n) };
      }),
  };
}

/** Every parity case, in a stable order. */
export function parityCases(): ParityCase[] {
  const dueling = duelingLayout();
  const actor = ppoActorLayout();
  const critic = ppoCriticLayout();
  const curiosity = curiosityLayout();
  return [
    philoxCase({ n: 4099, base: 0, step: 0, seed: 1, what: 'n=4099 (ragged last block)' }),
    philoxCase({
      n: 1000,
      base: 0xfffffff0,
      step: 0xffffffff,
      seed: 2 ** 53 - 1,
      what: 'n=1000 counter wrap, max key',
    }),
    philoxCase({ n: 4 * 64 * 15 - 7, base: 3, step: 9, seed: 42, groups: [3, 5, 1], what: 'on a 3x5 grid' }),
    philoxCase({ n: 4 * 64 * 12, base: 0, step: 1, seed: 42, groups: [2, 2, 3], what: 'on a 2x2x3 grid' }),
    denseCase({ layout: dueling, netId: NetId.QOnline, layer: 'shared_layers.0', batch: 1 }, 100),
    denseCase({ layout: dueling, netId: NetId.QOnline, layer: 'shared_layers.1', batch: 512 }, 101),
    denseCase({ layout: critic, netId: NetId.Critic, layer: 'value_layer_1', batch: 77 }, 102),
    denseCase({ layout: actor, netId: NetId.Actor, layer: 'policy_output', batch: 130 }, 103),
    denseCase({ layout: curiosity, netId: NetId.Curiosity, layer: 'fc1', batch: 1000 }, 104),
    scanCase({ n: 0, bound: 10, what: 'empty' }, 200),
    scanCase({ n: 1, bound: 10, what: 'one element' }, 201),
    scanCase({ n: SCAN_TILE, bound: 4, what: 'one full tile' }, 202),
    scanCase({ n: SCAN_TILE + 1, bound: 4, what: 'two tiles' }, 203),
    scanCase({ n: 300_000, bound: 2 ** 32, what: 'two levels, full-range u32 (wraps)' }, 204),
    scanCase({ n: 1_100_000, bound: 3, what: 'three levels, small counts' }, 205),
    scanGridCase(206),
    ...learnParityCases(),
    ...curiosityParityCases(),
    ...dqnParityCases(),
    ...iqnParityCases(),
    ...replayParityCases(),
    ...collectParityCases(),
    ...validateParityCases(),
  ];
}
