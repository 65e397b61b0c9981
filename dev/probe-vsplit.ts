/**
 * Dev harness `node dist/dev/bench.js probe-vsplit`: the WebGPU validation bar split over G
 * workgroups, one dispatch a stage, to price the design before building it. Three kernels a bar at
 * C51's sizes (54 -> 256 -> 256 trunk, 256 -> 128 + 128 streams, 128 -> 51 + 45 x 51 outputs;
 * weights transposed, random):
 *   vsplit_a  every workgroup: C51's Q and argmax from the last bar's logits, a stand-in simulator
 *             step (ping-pong state, workgroup 0 writes), the state, the first trunk layer whole,
 *             then its 1/G slice of the second trunk layer's outputs
 *   vsplit_b  its 1/G slice of both streams' hidden outputs
 *   vsplit_c  its 1/G slice of the 2,346 output logits (workgroup 0 advances the bar)
 * The arithmetic is the real amount; the values are not checked (timing only). Prints device time
 * and wall time (encoding included) a bar for each G, beside one bar of the shipped one-workgroup
 * kernel (probe-validate) for scale.
 */
import { describeChoice } from '../src/backend/index.js';
import type { Dispatch, KernelSpec } from '../src/backend/types.js';
import { chooseBackendFlag, intFlag, parseFlags } from '../src/cli/args.js';
import { type Command, UserError } from '../src/cli/main.js';
import { wgslSources } from '../src/kernels/sources.js';

const usage = `usage: node dist/dev/bench.js probe-vsplit [--backend webgpu] [--bars B] [--groups G,G...]

B (default 8946, the synthetic market's validation split) bars of C51's greedy forward as three
dependent dispatches a bar over G workgroups of 256 (default 8,16,32,64; powers of two); device and
wall microseconds a bar.`;

const COMMON = `
const NA = 45u;
const AT = 51u;
const NOUT = 2346u;
const NF = 51u;
const NS = 54u;
const W_S0 = 0u;
const W_S1 = 13824u;
const W_VA0 = 79360u;
const W_OUT = 144896u;
const X_S1 = 0u;
const X_H = 256u;
const X_LG = 512u;
var<workgroup> sh: array<f32, 256>;
var<workgroup> part: array<f32, 256>;
fn leaky(a: f32) -> f32 {
  return select(a * 0.01, a, a > 0.0);
}
// Outputs [j0, j0 + 256 / G) of a 256 -> 256 layer over sh (transposed weights at w), each in G parts.
fn slice256(w: u32, lid: u32, j0: u32) -> f32 {
  let per = 256u / G;
  let o = lid % per;
  let p = lid / per;
  let chunk = 256u / G;
  var acc = 0.0;
  for (var k = p * chunk; k < (p + 1u) * chunk; k++) {
    acc = acc + wt[w + k * 256u + j0 + o] * sh[k];
  }
  part[lid] = acc;
  workgroupBarrier();
  var s = 0.0;
  if (lid < per) {
    for (var q = 0u; q < G; q++) {
      s = s + part[q * per + lid];
    }
  }
  return leaky(s);
}
`;

const WGSL_A = `${COMMON}
var<workgroup> lg: array<f32, 2346>;
var<workgroup> mean: array<f32, 51>;
var<workgroup> q: array<f32, 45>;
var<workgroup> st: array<f32, 54>;
@compute @workgroup_size(256)
fn vsplit_a(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let bar = ctr[0];
  for (var t = lid; t < NOUT; t += 256u) {
    lg[t] = x[X_LG + t];
  }
  workgroupBarrier();
  if (lid < AT) {
    var s = 0.0;
    for (var a = 0u; a < NA; a++) {
      s = s + lg[AT + a * AT + lid];
    }
    mean[lid] = s / 45.0;
  }
  workgroupBarrier();
  for (var t = lid; t < NA * AT; t += 256u) {
    let z = t % AT;
    lg[AT + t] = (lg[z] + lg[AT + t]) - mean[z];
  }
  workgroupBarrier();
  if (lid < NA) {
    var mx = -3.402823e38;
    for (var z = 0u; z < AT; z++) {
      mx = max(mx, lg[AT + lid * AT + z]);
    }
    q[lid] = mx;
  }
  workgroupBarrier();
  for (var t = lid; t < NA * AT; t += 256u) {
    lg[AT + t] = exp(lg[AT + t] - q[t / AT]);
  }
  workgroupBarrier();
  if (lid < NA) {
    var s = 0.0;
    for (var z = 0u; z < AT; z++) {
      s = s + lg[AT + lid * AT + z];
    }
    var qa = 0.0;
    for (var z = 0u; z < AT; z++) {
      qa = qa + (lg[AT + lid * AT + z] / s) * (-3.0 + f32(z) * 0.12);
    }
    q[lid] = qa;
  }
  workgroupBarrier();
  if (lid == 0u) {
    var a = 0u;
    for (var k = 1u; k < NA; k++) {
      if (q[k] > q[a]) {
        a = k;
      }
    }
    let i = (bar % 2u) * 4u;
    let c0 = ohlc[bar * 4u + 3u];
    let c1 = ohlc[bar * 4u + 7u];
    let units = env[i + 1u] + (f32(a / 9u) * 0.5 - 1.0 - env[i + 1u]) / 3.0;
    let cash = env[i] - (units - env[i + 1u]) * c0;
    let value = cash + units * c1;
    st[NF] = value - 1.0;
    st[NF + 1u] = units * c1 / value;
    st[NF + 2u] = 0.2;
    if (wg.x == 0u) {
      let o = 4u - i;
      env[o] = cash;
      env[o + 1u] = units;
      trace[bar] = value;
    }
  }
  if (lid < NF) {
    st[lid] = feat[bar * NF + lid];
  }
  workgroupBarrier();
  var acc = 0.0;
  for (var k = 0u; k < NS; k++) {
    acc = acc + wt[W_S0 + k * 256u + lid] * st[k];
  }
  sh[lid] = leaky(acc);
  workgroupBarrier();
  let j0 = wg.x * (256u / G);
  let y = slice256(W_S1, lid, j0);
  if (lid < 256u / G) {
    x[X_S1 + j0 + lid] = y;
  }
}
`;

const WGSL_B = `${COMMON}
@compute @workgroup_size(256)
fn vsplit_b(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  sh[lid] = x[X_S1 + lid];
  workgroupBarrier();
  let j0 = wg.x * (256u / G);
  let y = slice256(W_VA0, lid, j0);
  if (lid < 256u / G) {
    x[X_H + j0 + lid] = y;
  }
}
`;

// Outputs [t0, t0 + P) of the 128 -> 2,346 output layer, P = ceil(2346 / G), each in PARTS parts.
const WGSL_C = `${COMMON}
@compute @workgroup_size(256)
fn vsplit_c(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  sh[lid] = x[X_H + lid];
  workgroupBarrier();
  let t0 = wg.x * P;
  let chunk = (128u + PARTS - 1u) / PARTS;
  for (var r = lid; r < P * PARTS; r += 256u) {
    let o = r % P;
    let p = r / P;
    let t = t0 + o;
    var acc = 0.0;
    if (t < NOUT) {
      let base = select(0u, 128u, t >= AT);
      for (var k = p * chunk; k < min((p + 1u) * chunk, 128u); k++) {
        acc = acc + wt[W_OUT + k * NOUT + t] * sh[base + k];
      }
    }
    if (PARTS == 1u) {
      if (t < NOUT) {
        x[X_LG + t] = acc;
      }
    } else {
      part[r] = acc;
    }
  }
  if (PARTS > 1u) {
    workgroupBarrier();
    if (lid < P && t0 + lid < NOUT) {
      var s = 0.0;
      for (var p = 0u; p < PARTS; p++) {
        s = s + part[p * P + lid];
      }
      x[X_LG + t0 + lid] = s;
    }
  }
  if (wg.x == 0u && lid == 0u) {
    ctr[0] = ctr[0] + 1u;
  }
}
`;

const WEIGHTS = 144896 + 128 * 2346;

async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags(
    argv,
    { backend: { type: 'string' }, bars: { type: 'string' }, groups: { type: 'string' } },
    usage,
  );
  const bars = intFlag(values.bars as string | undefined, 'bars', 8946, 1);
  const groups = ((values.groups as string | undefined) ?? '8,16,32,64')
    .split(',')
    .map((g) => intFlag(g, 'groups', 1, 1));
  for (const g of groups) {
    if (g > 256 || (g & (g - 1)) !== 0)
      throw new UserError(`probe-vsplit: --groups ${g} is not a power of two <= 256`);
  }
  const choice = await chooseBackendFlag((values.backend as string | undefined) ?? 'webgpu');
  const { backend } = choice;
  for (const line of describeChoice(choice)) console.error(line);
  if (backend.kind !== 'webgpu')
    throw new UserError('probe-vsplit: the probe kernels are WGSL only (--backend webgpu)');
  const src = wgslSources as Record<string, string>;
  src.vsplit_a = WGSL_A;
  src.vsplit_b = WGSL_B;
  src.vsplit_c = WGSL_C;
  const rand = (n: number, scale: number, off = 0) => {
    const a = new Float32Array(n);
    let s = 12345;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      a[i] = off + scale * (s / 2 ** 32 - 0.5);
    }
    return a;
  };
  const mk = (data: Float32Array | Uint32Array, label: string) => {
    const b = backend.createBuffer(data.byteLength, label);
    backend.upload(b, data);
    return b;
  };
  const wt = mk(rand(WEIGHTS, 0.1), 'wt');
  const feat = mk(rand((bars + 2) * 51, 2), 'feat');
  const ohlc = mk(rand((bars + 2) * 4, 0.01, 1), 'ohlc');
  const x = mk(new Float32Array(512 + 2346), 'x');
  const ctr = mk(new Uint32Array(1), 'ctr');
  const env = mk(new Float32Array([1, 0, 0, 0, 1, 0, 0, 0]), 'env');
  const trace = mk(new Float32Array(bars + 2), 'trace');
  const binding = (name: string, access: 'read' | 'read_write', type: 'f32' | 'u32' = 'f32') => ({
    name,
    type,
    access,
  });
  try {
    for (const g of groups) {
      const p = Math.ceil(2346 / g);
      const parts = Math.max(1, Math.min(8, Math.floor(256 / p)));
      const spec = (name: string, extra: Record<string, number> = {}): KernelSpec =>
        ({
          name,
          bindings: [
            binding('wt', 'read'),
            binding('feat', 'read'),
            binding('ohlc', 'read'),
            binding('x', 'read_write'),
            binding('ctr', 'read_write', 'u32'),
            binding('env', 'read_write'),
            binding('trace', 'read_write'),
          ],
          uniforms: [],
          workgroupSize: [256, 1, 1],
          constants: { G: g, ...extra },
        }) as KernelSpec;
      const bufs = [wt, feat, ohlc, x, ctr, env, trace];
      const one = (k: KernelSpec): Dispatch => ({
        kernel: k,
        buffers: bufs,
        uniforms: {},
        groups: [g, 1, 1],
      });
      const triple = [
        one(spec('vsplit_a')),
        one(spec('vsplit_b')),
        one(spec('vsplit_c', { P: p, PARTS: parts })),
      ];
      const chain = (n: number) => Array.from({ length: n }, () => triple).flat();
      backend.upload(ctr, new Uint32Array(1));
      await backend.time(chain(50), 1);
      backend.upload(ctr, new Uint32Array(1));
      const t0 = performance.now();
      const ms = await backend.time(chain(bars), 1);
      const wall = performance.now() - t0;
      const t1 = performance.now();
      backend.upload(ctr, new Uint32Array(1));
      backend.run(chain(bars));
      const enc = performance.now() - t1;
      await backend.sync();
      const end = new Uint32Array(await backend.download(ctr));
      console.log(
        `G ${g} (output slice ${p} x ${parts} parts): device ${ms.toFixed(1)} ms (${((1000 * ms) / bars).toFixed(2)} us a bar), wall ${wall.toFixed(1)} ms (${((1000 * wall) / bars).toFixed(2)} us a bar), run() returns after ${enc.toFixed(1)} ms; bars done ${end[0]}`,
      );
    }
    return 0;
  } finally {
    backend.destroy();
  }
}

export const devProbeVsplitCommand: Command = {
  name: 'probe-vsplit',
  summary: 'time the validation bar split over workgroups (three dispatches a bar)',
  usage,
  run,
};
