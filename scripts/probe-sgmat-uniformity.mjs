#!/usr/bin/env node
// Which forms of Dawn's subgroup-matrix builtins the WGSL compiler accepts with per-subgroup
// offsets (the collection kernel's engine 4): prints each variant's compile errors.
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, '..');
const webgpu = require(require.resolve('webgpu', { paths: [root, join(root, 'bundle')] }));
Object.assign(globalThis, webgpu.globals);
const gpu = webgpu.create(['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia']);
const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
console.log('wgslLanguageFeatures:', [...(gpu.wgslLanguageFeatures ?? [])].join(' '));
const want = ['chromium-experimental-subgroup-matrix', 'subgroups', 'shader-f16'].filter((f) =>
  adapter.features.has(f),
);
const device = await adapter.requestDevice({ requiredFeatures: want });
const body = (id, load, store) => `
alias A = subgroup_matrix_left<f16, 16, 16>;
alias B = subgroup_matrix_right<f16, 16, 16>;
alias C = subgroup_matrix_result<f32, 16, 16>;
@group(0) @binding(0) var<storage, read> w: array<f16>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
var<workgroup> x: array<f16, 16 * 264>;
var<workgroup> r: array<f32, 8 * 256>;
@compute @workgroup_size(256)
fn main(${id.param}) {
  let sg = ${id.expr};
  let a = ${load('A', '&x', '0u', 'false', '264u')};
  let b = ${load('B', '&w', 'sg * 4096u', 'true', '256u')};
  var c = C();
  c = subgroupMatrixMultiplyAccumulate(a, b, c);
  ${store('&r', 'sg * 256u', 'c', 'false', '16u')};
  workgroupBarrier();
  o[sg] = r[sg * 256u];
}`;
const oldLoad = (T, p, off, cm, st) => `subgroupMatrixLoad<${T}>(${p}, ${off}, ${cm}, ${st})`;
const newLoad = (T, p, off, cm, st) =>
  `subgroupMatrixLoad<${T}, ${cm === 'true' ? 'col_major' : 'row_major'}>(${p}, ${off}, ${st})`;
const oldStore = (p, off, v, cm, st) => `subgroupMatrixStore(${p}, ${off}, ${v}, ${cm}, ${st})`;
const newStore = (p, off, v, cm, st) =>
  `subgroupMatrixStore<${cm === 'true' ? 'col_major' : 'row_major'}>(${p}, ${off}, ${v}, ${st})`;
const ids = {
  lid: { param: '@builtin(local_invocation_index) lid: u32', expr: 'lid / 32u' },
  subgroup_id: { param: '@builtin(subgroup_id) sid: u32', expr: 'sid' },
  broadcastFirst: {
    param: '@builtin(local_invocation_index) lid: u32',
    expr: 'subgroupBroadcastFirst(lid / 32u)',
  },
};
const heads = {
  plain: 'enable f16;\nenable chromium_experimental_subgroup_matrix;\n',
  subgroups: 'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\n',
  diagOff:
    'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\ndiagnostic(off, chromium_experimental.subgroup_matrix_uniformity);\ndiagnostic(off, subgroup_uniformity);\n',
  requires:
    'enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\nrequires subgroup_uniformity;\n',
};
for (const [hn, head] of Object.entries(heads))
  for (const [idn, id] of Object.entries(ids))
    for (const [sn, [load, store]] of Object.entries({
      old: [oldLoad, oldStore],
      new: [newLoad, newStore],
    })) {
      const code = head + body(id, load, store);
      const m = device.createShaderModule({ code });
      const info = await m.getCompilationInfo();
      const errs = info.messages
        .filter((x) => x.type === 'error')
        .map((x) => `${x.lineNum}:${x.message.split('\n')[0]}`);
      const warns = info.messages.filter((x) => x.type === 'warning').length;
      console.log(
        `${hn} ${idn} ${sn}: ${errs.length ? `ERR ${errs.join(' | ').slice(0, 300)}` : 'ok'} (${warns} warnings)`,
      );
    }
process.exit(0);
