/**
 * Engine 5's f16 weight unpacking by shifts and masks (GV_CVT 1, collect_tile.wgsl gv_unpack) gives
 * the same f32 as WGSL's unpack2x16float for every finite f16, in both halves of a word: the function
 * is taken from the generated collect_dqn source and run over all 65,536 patterns on WebGPU.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wgslSources } from '../../src/kernels/sources.generated.js';

let device: GPUDevice | undefined;
let gpu: GPU | undefined;
let unavailable = '';

beforeAll(async () => {
  try {
    const { create, globals } = await import('webgpu');
    Object.assign(globalThis, globals);
    gpu = create([]);
    const adapter = await gpu.requestAdapter();
    if (!adapter) throw new Error('no WebGPU adapter');
    device = await adapter.requestDevice();
  } catch (err) {
    if (process.env.FOXHUNT_REQUIRE_WEBGPU === '1') throw err;
    unavailable = (err as Error).message;
  }
});
afterAll(() => device?.destroy());

/** The text of `fn gv_unpack` in the generated collect_dqn source. */
function unpackSource(): string {
  const src = wgslSources.collect_dqn;
  const start = src.indexOf('fn gv_unpack(');
  const end = src.indexOf('\n}\n', start);
  if (start < 0 || end < 0) throw new Error('collect_dqn has no fn gv_unpack');
  return src.slice(start, end + 3);
}

/** f32 bits of both halves of word (pattern << 16 | pattern ^ 0x8000) for every pattern, per GV_CVT. */
async function run(cvt: number): Promise<Uint32Array> {
  const d = device as GPUDevice;
  const code = `const GV_CVT = ${cvt};
${unpackSource()}
@group(0) @binding(0) var<storage, read_write> out: array<vec2<u32>>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let p = id.x;
  out[p] = bitcast<vec2<u32>>(gv_unpack((p << 16u) | (p ^ 0x8000u)));
}`;
  const module = d.createShaderModule({ code });
  const pipeline = d.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const bytes = 65536 * 8;
  const buf = d.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = d.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = d.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(
    0,
    d.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: buf } }],
    }),
  );
  pass.dispatchWorkgroups(65536 / 256);
  pass.end();
  enc.copyBufferToBuffer(buf, 0, read, 0, bytes);
  d.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const out = new Uint32Array(read.getMappedRange().slice(0));
  read.unmap();
  buf.destroy();
  read.destroy();
  return out;
}

describe('engine 5 gv_unpack (GV_CVT 1)', () => {
  it('equals unpack2x16float for every finite f16, low and high half', async (ctx) => {
    if (!device) ctx.skip(`no WebGPU device here (${unavailable}); CI sets FOXHUNT_REQUIRE_WEBGPU=1`);
    const [shifts, builtin] = await Promise.all([run(1), run(0)]);
    let compared = 0;
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    for (let p = 0; p < 65536; p++) {
      // Word p << 16 | p ^ 0x8000: the low half is p ^ 0x8000, the high half p.
      for (const [half, k] of [
        [p ^ 0x8000, 2 * p],
        [p, 2 * p + 1],
      ]) {
        if (((half >> 10) & 31) === 31) continue; // inf and NaN: no weight is either
        const got = shifts[k];
        const want = builtin[k];
        // A subnormal f16 passes through an f32 subnormal: a device that flushes those gives +-0.
        u[0] = want;
        const subnormal = ((half >> 10) & 31) === 0 && (half & 1023) !== 0;
        if (got !== want && !(subnormal && (got & 0x7fffffff) === 0)) {
          expect.fail(
            `f16 0x${half.toString(16)}: 0x${got.toString(16)} against 0x${want.toString(16)} (${f[0]})`,
          );
        }
        compared++;
      }
    }
    expect(compared).toBe(2 * (65536 - 2048));
  });
});
