/**
 * mlp_backward with up to MAX_BACKWARD_JOBS (8) jobs a launch (src/kernels/mlp_backward.ts,
 * cuda/mlp_backward.cu, wgsl/mlp_backward.wgsl): after a delta chain the dW of many layers are known
 * at once and run as one launch. A launch of 7 jobs (the learner's pattern: dW-only layers and a
 * layer with its dX) and one of 8 (every job slot) over layers of mixed, odd widths (54 inputs, a
 * single output, 130 inputs) must give what the same jobs give as separate 1-job launches:
 * - the TS twin: the same bits (grads, dX deltas, partials, split slices), at B = 64 and 512,
 *   unsplit and split ('last' and 'later' hand-offs), and the exact sums within f32 rounding;
 * - the CUDA twin on the fiber emulator (B = 8): the same bits as its own 1-job launches, and the TS twin
 *   within the matmul tolerance (exact build) or the TF32 bound of the exact sums (TF32 build);
 * - the WGSL twin on WebGPU (lavapipe): the same bits as its own 1-job launches and the TS twin
 *   within the matmul tolerance, unsplit and with the 'later' hand-off.
 * Also: the uniforms' layout the CUDA twin indexes (job j's fields at words 1 + 9 j ..), absent
 * jobs out_j = 0, the grid's size, and the errors for too many jobs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import { createBackend } from '../../../src/backend/index.js';
import {
  type Backend,
  BackendUnavailableError,
  type DeviceBuffer,
  type Dispatch,
} from '../../../src/backend/types.js';
import { kSplitFor } from '../../../src/device/learn_mlp.js';
import {
  type BackwardJob,
  DW_SLOT_FLOATS,
  type DwSplit,
  dxTiles,
  gradTiles,
  MAX_BACKWARD_JOBS,
  mlpBackwardDispatch,
  mlpBackwardSpec,
  NO_DX,
} from '../../../src/kernels/mlp_backward.js';
import { type Activation, LEAKY_SLOPE } from '../../../src/nets/layout.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';
import { uniforms } from '../learn/helpers.js';

/** A layer of the test: its widths and, for a dW + dX job, the previous layer's activation. */
interface LayerSpec {
  in: number;
  out: number;
  prev: Activation | null;
}

const LAYERS: LayerSpec[] = [
  { in: 37, out: 33, prev: 'relu' },
  { in: 130, out: 65, prev: 'leaky' },
  { in: 54, out: 40, prev: null },
  { in: 40, out: 45, prev: null },
  { in: 70, out: 1, prev: null },
  { in: 100, out: 70, prev: null },
  { in: 33, out: 7, prev: null },
  { in: 54, out: 100, prev: 'none' },
];
/** 7 jobs as after a delta chain (dW-only layers and layers with their dX), and all 8 slots. */
const SEVEN = [0, 2, 3, 4, 5, 6, 1].map((i) => LAYERS[i]);
const EIGHT = LAYERS;

/** Where a set of jobs lies in the buffers of one test launch. */
interface Problem {
  batch: number;
  jobs: BackwardJob[];
  paramFloats: number;
  actFloats: number;
  deltaFloats: number;
  scratchAt: number;
  partials: number;
  /** Initial buffer contents. */
  params: Float32Array;
  acts: Float32Array;
  deltas: Float32Array;
}

function problem(layers: LayerSpec[], batch: number): Problem {
  const jobs: BackwardJob[] = [];
  // An odd start: no layer's weights are 16-byte aligned by accident.
  let p = 3;
  let a = 1;
  let d = 5;
  let part = 0;
  const dxAt: number[] = [];
  for (const l of layers) {
    const wOffset = p;
    const bOffset = p + l.in * l.out;
    p = bOffset + l.out;
    jobs.push({
      layer: { in: l.in, out: l.out, wOffset, bOffset },
      netBase: 0,
      xOff: a,
      dOff: d,
      prev: null,
      partBase: part,
    });
    a += batch * l.in;
    d += batch * l.out;
    part += gradTiles(l.in, l.out);
  }
  // The dX rows after every delta read (the jobs of one launch never read what another writes).
  layers.forEach((l, j) => {
    if (l.prev) {
      dxAt[j] = d;
      jobs[j].prev = { dOff: d, act: l.prev };
      d += batch * l.in;
    }
  });
  const scratchAt = Math.ceil(d / 4) * 4;
  const deltaFloats = scratchAt + part * DW_SLOT_FLOATS;
  const params = Float32Array.from(uniforms(p, 1, -0.3, 0.3));
  const acts = new Float32Array(a);
  layers.forEach((l, j) => {
    const x = uniforms(batch * l.in, 10 + j, -1.5, 1.5);
    for (let k = 0; k < x.length; k++) {
      // Inputs as the previous activation left them: relu's have zeros, leaky's small negatives.
      const v =
        l.prev === 'relu' ? Math.max(x[k], 0) : l.prev === 'leaky' && x[k] < 0 ? x[k] * LEAKY_SLOPE : x[k];
      acts[jobs[j].xOff + k] = v;
    }
  });
  const deltas = new Float32Array(deltaFloats);
  layers.forEach((l, j) => {
    deltas.set(Float32Array.from(uniforms(batch * l.out, 30 + j, -0.05, 0.05)), jobs[j].dOff);
    // dX rows start as NaN: each must be written.
    if (l.prev) deltas.fill(Number.NaN, dxAt[j], dxAt[j] + batch * l.in);
  });
  return {
    batch,
    jobs,
    paramFloats: p,
    actFloats: a,
    deltaFloats,
    scratchAt,
    partials: part,
    params,
    acts,
    deltas,
  };
}

interface Buffers {
  params: DeviceBuffer;
  acts: DeviceBuffer;
  deltas: DeviceBuffer;
  grads: DeviceBuffer;
  partials: DeviceBuffer;
}

interface Result {
  grads: Float32Array;
  deltas: Float32Array;
  partials: Float32Array;
}

/** Fresh buffers with the problem's contents (grads and partials NaN), the launches, everything read back. */
async function run(backend: Backend, pr: Problem, launches: (b: Buffers) => Dispatch[]): Promise<Result> {
  const nan = (n: number) => new Float32Array(n).fill(Number.NaN);
  const b: Buffers = {
    params: backend.createBuffer(4 * pr.paramFloats, 'jobs-params'),
    acts: backend.createBuffer(4 * pr.actFloats, 'jobs-acts'),
    deltas: backend.createBuffer(4 * pr.deltaFloats, 'jobs-deltas'),
    grads: backend.createBuffer(4 * pr.paramFloats, 'jobs-grads'),
    partials: backend.createBuffer(4 * pr.partials, 'jobs-partials'),
  };
  try {
    backend.upload(b.params, pr.params);
    backend.upload(b.acts, pr.acts);
    backend.upload(b.deltas, pr.deltas);
    backend.upload(b.grads, nan(pr.paramFloats));
    backend.upload(b.partials, nan(pr.partials));
    backend.run(launches(b));
    return {
      grads: new Float32Array(await backend.download(b.grads)),
      deltas: new Float32Array(await backend.download(b.deltas)),
      partials: new Float32Array(await backend.download(b.partials)),
    };
  } finally {
    for (const buf of Object.values(b)) backend.destroyBuffer(buf);
  }
}

type Handoff = 'none' | 'last' | 'later';

/**
 * The jobs as one launch (`together`) or as one launch each, split per `handoff`; with 'later'
 * (slices only), launches of at most 2 jobs each finish the split tiles afterwards.
 */
function launches(
  b: Buffers,
  pr: Problem,
  together: boolean,
  handoff: Handoff,
  kSplit: number,
  tf32 = false,
): Dispatch[] {
  const split: DwSplit =
    handoff === 'none'
      ? { splits: 1, scratchAt: pr.scratchAt }
      : { splits: 2, scratchAt: pr.scratchAt, handoff };
  const groups = together ? [pr.jobs] : pr.jobs.map((j) => [j]);
  const out = groups.map((jobs) => mlpBackwardDispatch(b, pr.batch, jobs, kSplit, split, tf32));
  if (handoff === 'later') {
    for (let i = 0; i < pr.jobs.length; i += 2) {
      const sum = { jobs: pr.jobs.slice(i, i + 2), splits: 2 };
      out.push(
        mlpBackwardDispatch(b, pr.batch, [], kSplit, { splits: 1, scratchAt: pr.scratchAt, sum }, tf32),
      );
    }
  }
  return out;
}

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** Same bits in every buffer. */
function expectSameBits(got: Result, want: Result, what: string) {
  for (const k of ['grads', 'deltas', 'partials'] as const) {
    expect(bytes(got[k]).equals(bytes(want[k])), `${what}: ${k}`).toBe(true);
  }
}

/** Every output the jobs write, as [name, got, want] triples (the partials summed per job). */
function outputs(pr: Problem, got: Result, want: Result): [string, Float32Array, Float32Array][] {
  const out: [string, Float32Array, Float32Array][] = [];
  pr.jobs.forEach((job, j) => {
    const { in: nIn, out: nOut, wOffset, bOffset } = job.layer;
    const w = (r: Result) => r.grads.subarray(wOffset, bOffset + nOut);
    out.push([`job ${j} (${nIn} -> ${nOut}) dW, db`, w(got), w(want)]);
    if (job.prev) {
      const dx = (r: Result) => r.deltas.subarray(job.prev!.dOff, job.prev!.dOff + pr.batch * nIn);
      out.push([`job ${j} dX`, dx(got), dx(want)]);
    }
    const tiles = gradTiles(nIn, nOut);
    const sq = (r: Result) =>
      Float32Array.of(r.partials.subarray(job.partBase, job.partBase + tiles).reduce((s, v) => s + v, 0));
    out.push([`job ${j} sum of squares`, sq(got), sq(want)]);
  });
  return out;
}

/** The matmul tolerance of the parity suite (src/parity/learn_cases.ts MATMUL): 1e-6 + 1e-4 |want|. */
function expectClose(pr: Problem, got: Result, want: Result, what: string) {
  for (const [name, g, w] of outputs(pr, got, want)) {
    let worst = 0;
    for (let k = 0; k < w.length; k++) {
      expect(Number.isFinite(g[k]), `${what}: ${name}[${k}] = ${g[k]}`).toBe(true);
      worst = Math.max(worst, Math.abs(g[k] - w[k]) / (1e-6 + 1e-4 * Math.abs(w[k])));
    }
    expect(worst, `${what}: ${name}`).toBeLessThanOrEqual(1);
  }
}

const derivative = (y: number, act: Activation) =>
  act === 'relu' ? (y > 0 ? 1 : 0) : act === 'leaky' ? (y > 0 ? 1 : LEAKY_SLOPE) : 1;

/**
 * Each output against its exact (f64) sum: |got - exact| <= factor(n) * sum |terms| + 1e-30 for a
 * sum of n products; returns the worst ratio (<= 1 passes) and how many outputs were checked.
 */
function againstExact(
  pr: Problem,
  r: Result,
  factor: (n: number) => number,
): { worst: number; count: number } {
  const { batch, params, acts, deltas } = pr;
  let worst = 0;
  let count = 0;
  const check = (got: number, exact: number, abs: number, n: number) => {
    const err = Math.abs(got - exact);
    worst = Math.max(
      worst,
      Number.isFinite(err) ? err / (factor(n) * abs + 1e-30) : Number.POSITIVE_INFINITY,
    );
    count++;
  };
  for (const job of pr.jobs) {
    const { in: nIn, out: nOut, wOffset, bOffset } = job.layer;
    let ss = 0;
    for (let o = 0; o < nOut; o++) {
      for (let i = 0; i <= nIn; i++) {
        let sum = 0;
        let abs = 0;
        for (let b = 0; b < batch; b++) {
          const prod = deltas[job.dOff + b * nOut + o] * (i < nIn ? acts[job.xOff + b * nIn + i] : 1);
          sum += prod;
          abs += Math.abs(prod);
        }
        const g = r.grads[i < nIn ? wOffset + o * nIn + i : bOffset + o];
        check(g, sum, abs, batch + 16);
        ss += g * g;
      }
    }
    // The tiles' sums of squares add up to the job's gradients' (f32 sums of squares).
    const tiles = r.partials.subarray(job.partBase, job.partBase + gradTiles(nIn, nOut));
    expect(Math.abs(tiles.reduce((s, v) => s + v, 0) - ss)).toBeLessThanOrEqual(1e-5 * ss + 1e-30);
    if (!job.prev) continue;
    const act = job.prev.act;
    for (let b = 0; b < batch; b++) {
      for (let i = 0; i < nIn; i++) {
        let sum = 0;
        let abs = 0;
        for (let o = 0; o < nOut; o++) {
          const prod = deltas[job.dOff + b * nOut + o] * params[wOffset + o * nIn + i];
          sum += prod;
          abs += Math.abs(prod);
        }
        const k = derivative(acts[job.xOff + b * nIn + i], act);
        check(r.deltas[job.prev.dOff + b * nIn + i], sum * k, abs * k, nOut);
      }
    }
  }
  return { worst, count };
}

/** f32 sums of n terms: (n + 2) * 2^-24 of sum |terms|. */
const f32Factor = (n: number) => (n + 2) * 2 ** -24;
/** The TF32 bound of test/unit/device/learn-tf32-cuda.test.ts. */
const tf32Factor = (n: number) => 2 ** -10 + (n + 16) * 2 ** -23;

const cpu = new CpuBackend();

describe('mlp_backward launch of up to 8 jobs', () => {
  it('lays job j’s uniforms out at words 1 + 9 j .. 9 + 9 j (the CUDA twin indexes them so)', () => {
    expect(MAX_BACKWARD_JOBS).toBe(8);
    const fields = ['in', 'out', 'wOff', 'bOff', 'xOff', 'dOff', 'pOff', 'pAct', 'partBase'];
    const names = mlpBackwardSpec.uniforms.map((u) => u.name);
    expect(names[0]).toBe('batch');
    for (let j = 0; j < MAX_BACKWARD_JOBS; j++) {
      fields.forEach((f, k) => {
        expect(names[1 + 9 * j + k]).toBe(`${f}${j}`);
      });
    }
    expect(mlpBackwardSpec.uniforms.every((u) => u.type === 'u32')).toBe(true);
  });

  it('fills the uniforms of absent jobs with out_j = 0 and sizes the grid to the jobs’ tiles', () => {
    const pr = problem(SEVEN, 64);
    const b = {} as Buffers;
    for (const [n, splits] of [
      [1, 1],
      [7, 1],
      [7, 2],
    ] as const) {
      const d = mlpBackwardDispatch(b, 64, pr.jobs.slice(0, n), 4, { splits, scratchAt: pr.scratchAt });
      for (let j = 0; j < MAX_BACKWARD_JOBS; j++) {
        expect(d.uniforms[`out${j}`]).toBe(j < n ? pr.jobs[j].layer.out : 0);
        expect(d.uniforms[`pAct${j}`] === NO_DX).toBe(!(j < n && pr.jobs[j].prev));
      }
      const tiles = pr.jobs
        .slice(0, n)
        .reduce(
          (s, job) =>
            s +
            gradTiles(job.layer.in, job.layer.out) * splits +
            dxTiles(job.layer.in, 64, job.prev ? 0 : NO_DX),
          0,
        );
      expect(d.groups[0] * d.groups[1] * d.groups[2]).toBe(tiles);
    }
  });

  it('takes 1 to 8 jobs and finishes at most 2 jobs’ split tiles, saying so otherwise', () => {
    const pr = problem(EIGHT, 64);
    const b = {} as Buffers;
    const split = { splits: 1, scratchAt: pr.scratchAt };
    expect(mlpBackwardDispatch(b, 64, pr.jobs, 4, split).uniforms.out7).toBe(100);
    expect(() => mlpBackwardDispatch(b, 64, [...pr.jobs, pr.jobs[0]], 4, split)).toThrow(
      "mlp_backward: a launch takes 1 to 8 jobs (none only to finish split tiles), got 9, and finishes at most 2 jobs' split tiles, got 0",
    );
    expect(() =>
      mlpBackwardDispatch(b, 64, [], 4, { ...split, sum: { jobs: pr.jobs.slice(0, 3), splits: 2 } }),
    ).toThrow(/finishes at most 2 jobs' split tiles, got 3$/);
    expect(() => mlpBackwardDispatch(b, 64, [], 4, split)).toThrow(/got 0, and/);
  });

  describe('TS twin: one launch gives the bits of the jobs’ separate launches', () => {
    for (const batch of [64, 512]) {
      for (const [tag, layers] of [
        ['7 jobs', SEVEN],
        ['8 jobs', EIGHT],
      ] as const) {
        for (const handoff of ['none', 'last', 'later'] as const) {
          it(`${tag}, B = ${batch}, ${handoff === 'none' ? 'unsplit' : `2 slices, hand-off '${handoff}'`}`, async () => {
            const pr = problem(layers, batch);
            const together = await run(cpu, pr, (b) => launches(b, pr, true, handoff, 4));
            const apart = await run(cpu, pr, (b) => launches(b, pr, false, handoff, 4));
            expectSameBits(together, apart, 'one launch vs separate launches');
            // Every job's outputs were written (no NaN left) and are its exact sums to f32 rounding.
            const exact = againstExact(pr, together, f32Factor);
            expect(exact.count).toBeGreaterThan(layers.reduce((s, l) => s + (l.in + 1) * l.out, 0));
            expect(exact.worst).toBeLessThanOrEqual(1);
            if (handoff === 'later') {
              // The slices went to each job's own scratch slots (partBase): none is left empty.
              const slots = together.deltas.subarray(pr.scratchAt);
              for (const job of pr.jobs) {
                const at = job.partBase * DW_SLOT_FLOATS + 4;
                expect(slots.subarray(at, at + DW_SLOT_FLOATS - 4).some((v) => v !== 0)).toBe(true);
              }
            }
          });
        }
      }
    }
  });
});

const emuMissing = emuUnavailable();

/**
 * The emulator cases' batch: the smallest that still fails when the job indexing is wrong. Mutation
 * tried: cuda/mlp_backward.cu find_job without `if (!is_dw) t -= gw;` (dX tiles read past their
 * job's dW tiles) fails every emulator case at B = 8 as at B = 64.
 */
const EMU_BATCH = 8;

describe.skipIf(emuMissing !== null)(
  `CUDA twin on the emulator, 7 and 8 jobs in one launch${emuMissing ? ` (skipped: ${emuMissing})` : ''}`,
  () => {
    const emu = new CudaEmuBackend();
    for (const [tag, layers] of [
      ['7 jobs', SEVEN],
      ['8 jobs', EIGHT],
    ] as const) {
      for (const handoff of ['none', 'last'] as const) {
        const how = handoff === 'none' ? 'unsplit' : "2 slices, hand-off 'last'";
        it(`exact build, ${tag}, B = ${EMU_BATCH}, ${how}: its 1-job launches' bits, the TS twin within the matmul tolerance`, async () => {
          const pr = problem(layers, EMU_BATCH);
          const together = await run(emu, pr, (b) => launches(b, pr, true, handoff, 4));
          const apart = await run(emu, pr, (b) => launches(b, pr, false, handoff, 4));
          expectSameBits(together, apart, 'one launch vs separate launches');
          const twin = await run(cpu, pr, (b) => launches(b, pr, true, handoff, 4));
          expectClose(pr, together, twin, 'CUDA vs TS twin');
        });
        it(`TF32 build, ${tag}, B = ${EMU_BATCH}, ${how}: its 1-job launches' bits, within the TF32 bound, not the exact build`, async () => {
          const pr = problem(layers, EMU_BATCH);
          const together = await run(emu, pr, (b) => launches(b, pr, true, handoff, 4, true));
          const apart = await run(emu, pr, (b) => launches(b, pr, false, handoff, 4, true));
          expectSameBits(together, apart, 'one launch vs separate launches');
          const exact = againstExact(pr, together, tf32Factor);
          expect(exact.worst).toBeLessThanOrEqual(1);
          const f32 = await run(emu, pr, (b) => launches(b, pr, true, handoff, 4));
          for (const [name, g, w] of outputs(pr, together, f32)) {
            expect(
              g.some((v, k) => v !== w[k]),
              `${name}: the TF32 build gave the exact build's bits`,
            ).toBe(true);
          }
        });
      }
    }
  },
);

describe('WGSL twin on WebGPU, 7 and 8 jobs in one launch', () => {
  let gpu: Backend | undefined;
  let why = '';
  const webgpu = async () => {
    if (!gpu && !why) {
      try {
        gpu = await createBackend('webgpu');
      } catch (err) {
        if (!(err instanceof BackendUnavailableError) || process.env.FOXHUNT_REQUIRE_WEBGPU === '1')
          throw err;
        why = err.message;
      }
    }
    return gpu;
  };
  afterAll(() => gpu?.destroy());

  for (const [tag, layers] of [
    ['7 jobs', SEVEN],
    ['8 jobs', EIGHT],
  ] as const) {
    for (const handoff of ['none', 'later'] as const) {
      const how = handoff === 'none' ? 'unsplit' : "2 slices, hand-off 'later'";
      it(`${tag}, B = 64, ${how}: its 1-job launches' bits, the TS twin within the matmul tolerance`, async (ctx) => {
        const backend = await webgpu();
        if (!backend) {
          ctx.skip(`WebGPU unavailable: ${why}`);
          return;
        }
        const pr = problem(layers, 64);
        const k = kSplitFor(backend);
        const together = await run(backend, pr, (b) => launches(b, pr, true, handoff, k));
        const apart = await run(backend, pr, (b) => launches(b, pr, false, handoff, k));
        expectSameBits(together, apart, 'one launch vs separate launches');
        const twin = await run(cpu, pr, (b) => launches(b, pr, true, handoff, k));
        expectClose(pr, together, twin, 'WGSL vs TS twin');
      });
    }
  }
});
