#!/usr/bin/env node
// Probe of Dawn's experimental subgroup matrices (WGSL `chromium_experimental_subgroup_matrix`, the
// tensor cores through WebGPU), for the collection kernels' WebGPU path (docs/COLLECT.md, issue 5).
// Prints the adapter's subgroup-matrix configurations, then for each configuration whose types it
// knows runs a C = A B matmul of n x n x n (default 4096) where each 32-lane workgroup accumulates a
// 2 x 2 block of result tiles over K, checks 64 entries against f64 sums of the same (rounded)
// inputs, and prints the achieved TFLOP/s (best of 5 runs, wall time around onSubmittedWorkDone).
//
//   node scripts/probe-subgroup-matrix.mjs [n]
//
// Needs a GPU adapter with the feature: Dawn exposes it only with allow_unsafe_apis (set below);
// f16 on NVIDIA's Vulkan driver also needs vulkan_enable_f16_on_nvidia. It loads the `webgpu`
// package from node_modules or from the portable bundle (bundle/node_modules).
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, '..');
const webgpu = require(require.resolve('webgpu', { paths: [root, join(root, 'bundle')] }));
Object.assign(globalThis, webgpu.globals);
const n = Number(process.argv[2] ?? 4096);

const gpu = webgpu.create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
if (!adapter) throw new Error('no WebGPU adapter');
const info = adapter.info;
console.log(`adapter: ${info.vendor} ${info.architecture} ${info.device} ${info.description}`);
const configs = [...(info.subgroupMatrixConfigs ?? [])];
console.log(`features: ${[...adapter.features].filter((f) => /subgroup|f16/.test(f)).join(' ')}`);
console.log(
  `subgroup matrix configs: ${configs.map((c) => `${c.componentType}->${c.resultComponentType} M${c.M} N${c.N} K${c.K}`).join(', ') || 'none'}`,
);
if (!adapter.features.has('chromium-experimental-subgroup-matrix')) process.exit(0);
const wanted = ['chromium-experimental-subgroup-matrix', 'subgroups', 'shader-f16'].filter((f) =>
  adapter.features.has(f),
);
const device = await adapter.requestDevice({
  requiredFeatures: wanted,
  requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize },
});

const WGSL_TYPE = { f32: 'f32', f16: 'f16' };
// IEEE half from f32 bits, round to nearest even (finite inputs in [-1, 1] here; subnormals
// flushed to zero), and back.
const f32b = new Float32Array(1);
const u32b = new Uint32Array(f32b.buffer);
function toHalf(x) {
  f32b[0] = x;
  const u = u32b[0];
  const sign = (u >>> 16) & 0x8000;
  const e = ((u >>> 23) & 0xff) - 127 + 15;
  const m = u & 0x7fffff;
  if (e <= 0) return sign; // below the normal range: zero (the host uses the same halves)
  let h = sign | (e << 10) | (m >>> 13);
  const rest = m & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++;
  return h;
}
function fromHalf(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

function shader(c, order) {
  const t = WGSL_TYPE[c.componentType];
  const r = WGSL_TYPE[c.resultComponentType];
  // order 'cols-rows': left<T, K, M>, right<T, N, K>, result<T, N, M> (columns, rows).
  const L =
    order === 'cols-rows'
      ? `subgroup_matrix_left<${t}, ${c.K}, ${c.M}>`
      : `subgroup_matrix_left<${t}, ${c.M}, ${c.K}>`;
  const R =
    order === 'cols-rows'
      ? `subgroup_matrix_right<${t}, ${c.N}, ${c.K}>`
      : `subgroup_matrix_right<${t}, ${c.K}, ${c.N}>`;
  const O =
    order === 'cols-rows'
      ? `subgroup_matrix_result<${r}, ${c.N}, ${c.M}>`
      : `subgroup_matrix_result<${r}, ${c.M}, ${c.N}>`;
  return `enable chromium_experimental_subgroup_matrix;
${t === 'f16' || r === 'f16' ? 'enable f16;' : ''}
@group(0) @binding(0) var<storage, read> a: array<${t}>;
@group(0) @binding(1) var<storage, read> b: array<${t}>;
@group(0) @binding(2) var<storage, read_write> c: array<${r}>;
const NN = ${n}u;
@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3u) {
  let r0 = wg.y * ${2 * c.M}u;
  let c0 = wg.x * ${2 * c.N}u;
  var acc00 = ${O}();
  var acc01 = ${O}();
  var acc10 = ${O}();
  var acc11 = ${O}();
  for (var k = 0u; k < NN; k += ${c.K}u) {
    let a0 = subgroupMatrixLoad<${L}>(&a, r0 * NN + k, false, NN);
    let a1 = subgroupMatrixLoad<${L}>(&a, (r0 + ${c.M}u) * NN + k, false, NN);
    let b0 = subgroupMatrixLoad<${R}>(&b, k * NN + c0, false, NN);
    let b1 = subgroupMatrixLoad<${R}>(&b, k * NN + c0 + ${c.N}u, false, NN);
    acc00 = subgroupMatrixMultiplyAccumulate(a0, b0, acc00);
    acc01 = subgroupMatrixMultiplyAccumulate(a0, b1, acc01);
    acc10 = subgroupMatrixMultiplyAccumulate(a1, b0, acc10);
    acc11 = subgroupMatrixMultiplyAccumulate(a1, b1, acc11);
  }
  subgroupMatrixStore(&c, r0 * NN + c0, acc00, false, NN);
  subgroupMatrixStore(&c, r0 * NN + c0 + ${c.N}u, acc01, false, NN);
  subgroupMatrixStore(&c, (r0 + ${c.M}u) * NN + c0, acc10, false, NN);
  subgroupMatrixStore(&c, (r0 + ${c.M}u) * NN + c0 + ${c.N}u, acc11, false, NN);
}
`;
}

function hostData(type, seed) {
  const f = new Float32Array(n * n);
  let s = seed >>> 0;
  for (let i = 0; i < f.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    f[i] = (s / 2 ** 32) * 2 - 1;
  }
  if (type === 'f16') {
    const h = Uint16Array.from(f, toHalf);
    return { bytes: h, values: Float32Array.from(h, fromHalf) };
  }
  return { bytes: f, values: f };
}

async function run(c) {
  if (!WGSL_TYPE[c.componentType] || !WGSL_TYPE[c.resultComponentType]) {
    return `${c.componentType}->${c.resultComponentType}: types not probed`;
  }
  if ((c.componentType === 'f16' || c.resultComponentType === 'f16') && !device.features.has('shader-f16')) {
    return `${c.componentType}->${c.resultComponentType}: no shader-f16`;
  }
  let module;
  let order;
  for (order of ['cols-rows', 'rows-cols']) {
    device.pushErrorScope('validation');
    module = device.createShaderModule({ code: shader(c, order) });
    const msgs = (await module.getCompilationInfo()).messages.filter((m) => m.type === 'error');
    const err = await device.popErrorScope();
    if (msgs.length === 0 && !err) break;
    console.log(`  ${order}: ${msgs.map((m) => m.message).join('; ') || err?.message}`.slice(0, 400));
    module = null;
  }
  if (!module) return `${c.componentType}->${c.resultComponentType} M${c.M} N${c.N} K${c.K}: shader rejected`;
  const A = hostData(c.componentType, 1);
  const B = hostData(c.componentType, 2);
  const buf = (data, usage) => {
    const g = device.createBuffer({ size: data.byteLength, usage, mappedAtCreation: true });
    new Uint8Array(g.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    g.unmap();
    return g;
  };
  const S = GPUBufferUsage.STORAGE;
  const ga = buf(A.bytes, S);
  const gb = buf(B.bytes, S);
  const outBytes = n * n * (c.resultComponentType === 'f16' ? 2 : 4);
  const gc = device.createBuffer({ size: outBytes, usage: S | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({
    size: outBytes,
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
  });
  const pipeline = await device.createComputePipelineAsync({
    layout: 'auto',
    compute: { module, entryPoint: 'main' },
  });
  const group = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [ga, gb, gc].map((buffer, binding) => ({ binding, resource: { buffer } })),
  });
  const once = async () => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(n / (2 * c.N), n / (2 * c.M));
    pass.end();
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  await once();
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) best = Math.min(best, await once());
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(gc, 0, read, 0, outBytes);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const raw = read.getMappedRange();
  const C =
    c.resultComponentType === 'f16'
      ? Float32Array.from(new Uint16Array(raw), fromHalf)
      : new Float32Array(raw.slice(0));
  read.unmap();
  let worst = 0;
  for (let q = 0; q < 64; q++) {
    const i = (q * 977) % n;
    const j = (q * 613 + 5) % n;
    let s = 0;
    let mag = 0;
    for (let k = 0; k < n; k++) {
      s += A.values[i * n + k] * B.values[k * n + j];
      mag += Math.abs(A.values[i * n + k] * B.values[k * n + j]);
    }
    worst = Math.max(worst, Math.abs(C[i * n + j] - s) / mag);
  }
  for (const g of [ga, gb, gc, read]) g.destroy();
  const tflops = (2 * n ** 3) / (best / 1000) / 1e12;
  return `${c.componentType}->${c.resultComponentType} M${c.M} N${c.N} K${c.K} (${order}): ${tflops.toFixed(1)} TFLOP/s at n=${n} (best of 5, ${best.toFixed(2)} ms), worst |err| / sum|a b| over 64 entries ${worst.toExponential(2)}`;
}

for (const c of configs) {
  try {
    console.log(await run(c));
  } catch (e) {
    console.log(
      `${c.componentType}->${c.resultComponentType} M${c.M} N${c.N} K${c.K}: ${String(e?.message ?? e).split('\n')[0]}`,
    );
  }
}
device.destroy();
process.exit(0);
