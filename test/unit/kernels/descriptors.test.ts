import { describe, expect, it } from 'vitest';
import type { Dispatch } from '../../../src/backend/types.js';
import { packUniforms, validateDispatch } from '../../../src/backend/uniforms.js';
import { wgslPreamble } from '../../../src/backend/webgpu/preamble.js';
import { denseForwardDispatch, denseForwardSpec } from '../../../src/kernels/dense_forward.js';
import {
  exclusiveScanDispatches,
  SCAN_TILE,
  type ScanScratch,
  scanLevels,
} from '../../../src/kernels/exclusive_scan.js';
import { grid1d, MAX_GROUPS_PER_DIM } from '../../../src/kernels/grid.js';
import { philoxStreamSpec } from '../../../src/kernels/philox_stream.js';
import { kernels } from '../../../src/kernels/registry.js';
import { cudaSources, wgslSources } from '../../../src/kernels/sources.js';

const buf = (label: string) => ({ label, size: 1024 });

describe('kernel sources', () => {
  it('the first kernels have a WGSL entry point of their name, with includes resolved', () => {
    for (const name of ['philox_stream', 'dense_forward', 'exclusive_scan']) {
      expect(kernels[name], name).toBeDefined();
      expect(wgslSources[name], name).toMatch(new RegExp(`@compute[\\s\\S]*fn ${name}\\(`));
      expect(wgslSources[name]).not.toMatch(/^\s*\/\/!include/m);
    }
    expect(wgslSources.philox_stream).toContain('fn philox4x32(');
    expect(typeof cudaSources).toBe('object');
  });

  it('generates WGSL declarations from the descriptor', () => {
    const p = wgslPreamble(denseForwardSpec);
    expect(p).toContain('const WG_X = 16;');
    expect(p).toContain('const TILE_K = 16;');
    expect(p).toContain('struct Uniforms {\n  batch: u32,\n  inDim: u32,');
    expect(p).toContain('@group(0) @binding(0) var<storage, read> params: array<f32>;');
    expect(p).toContain('@group(0) @binding(2) var<storage, read_write> y: array<f32>;');
    expect(p).toContain('@group(0) @binding(3) var<uniform> u: Uniforms;');
    const floaty = wgslPreamble({ ...philoxStreamSpec, constants: { SCALE: 0.5, BIG: 1e30, NEG: -3 } });
    expect(floaty).toContain('const SCALE = 0.5;');
    expect(floaty).toContain('const BIG = 1e+30;');
    expect(floaty).toContain('const NEG = -3;');
    expect(wgslPreamble({ ...philoxStreamSpec, uniforms: [] })).not.toContain('Uniforms');
  });
});

describe('dispatch shapes', () => {
  it('grid1d covers the count within the per-dimension limit', () => {
    expect(grid1d(0)).toEqual([0, 1, 1]);
    expect(grid1d(MAX_GROUPS_PER_DIM)).toEqual([65535, 1, 1]);
    for (const n of [65536, 1_000_000, 65535 * 65535]) {
      const [x, y, z] = grid1d(n);
      expect(x * y * z).toBeGreaterThanOrEqual(n);
      expect(x * y * z - n).toBeLessThan(y);
      expect(Math.max(x, y)).toBeLessThanOrEqual(MAX_GROUPS_PER_DIM);
    }
    expect(() => grid1d(65535 * 65535 + 65536)).toThrow(/exceed/);
  });

  it('exclusive_scan goes down the levels then adds back up', () => {
    expect(scanLevels(0)).toEqual([0, 1]);
    expect(scanLevels(SCAN_TILE)).toEqual([SCAN_TILE, 1]);
    expect(scanLevels(SCAN_TILE * SCAN_TILE + 1)).toEqual([SCAN_TILE * SCAN_TILE + 1, SCAN_TILE + 1, 2, 1]);
    const n = SCAN_TILE * SCAN_TILE + 1;
    const scratch: ScanScratch = { n, sums: [buf('s0'), buf('s1'), buf('s2')], total: buf('s2') };
    const data = buf('data');
    const steps = exclusiveScanDispatches(data, scratch).map((d) => [
      d.buffers.map((b) => b.label).join('+'),
      d.uniforms.phase,
      d.uniforms.n,
      d.groups[0],
    ]);
    expect(steps).toEqual([
      ['data+s0', 0, n, SCAN_TILE + 1],
      ['s0+s1', 0, SCAN_TILE + 1, 2],
      ['s1+s2', 0, 2, 1],
      ['s0+s1', 1, SCAN_TILE + 1, 2],
      ['data+s0', 1, n, SCAN_TILE + 1],
    ]);
  });

  it('dense_forward tiles outputs over x and batch rows over y', () => {
    const d = denseForwardDispatch(
      buf('p'),
      { in: 54, out: 256, wOffset: 0, bOffset: 13824, act: 'leaky' },
      buf('x'),
      buf('y'),
      1,
    );
    expect(d.groups).toEqual([4, 1, 1]);
    expect(d.uniforms).toEqual({ batch: 1, inDim: 54, outDim: 256, wOffset: 0, bOffset: 13824, act: 2 });
  });
});

describe('uniforms and validation', () => {
  const spec = {
    ...philoxStreamSpec,
    uniforms: [
      { name: 'a', type: 'u32' as const },
      { name: 'b', type: 'i32' as const },
      { name: 'c', type: 'f32' as const },
    ],
  };
  const d = (uniforms: Record<string, number>): Dispatch => ({
    kernel: spec,
    buffers: [buf('w')],
    uniforms,
    groups: [1, 1, 1],
  });

  it('packs 4 bytes per field, little-endian, in spec order', () => {
    const view = new DataView(new ArrayBuffer(16));
    packUniforms(d({ a: 0xfffffffe, b: -5, c: 0.25 }), view, 4);
    expect(view.getUint32(4, true)).toBe(0xfffffffe);
    expect(view.getInt32(8, true)).toBe(-5);
    expect(view.getFloat32(12, true)).toBe(0.25);
  });

  it('rejects out-of-range, missing, unknown and non-numeric uniforms', () => {
    expect(() => validateDispatch(d({ a: 2 ** 32, b: 0, c: 0 }))).toThrow(/uniform a must be a u32/);
    expect(() => validateDispatch(d({ a: 1.5, b: 0, c: 0 }))).toThrow(/uniform a must be a u32/);
    expect(() => validateDispatch(d({ a: 0, b: 2 ** 31, c: 0 }))).toThrow(/uniform b must be an i32/);
    expect(() => validateDispatch(d({ a: 0, b: 0, c: Number.NaN }))).toThrow(/uniform c must be a number/);
    expect(() => validateDispatch(d({ a: 0, b: 0 }))).toThrow(/uniform c must be a number/);
    expect(() => validateDispatch(d({ a: 0, b: 0, c: 0, z: 1 }))).toThrow(/unknown uniform z/);
    expect(() => validateDispatch({ ...d({ a: 0, b: 0, c: 0 }), groups: [65536, 1, 1] })).toThrow(/65535/);
  });

  it('rejects a buffer bound twice when one binding is writable', () => {
    const p = buf('p');
    const x = buf('x');
    const aliased = denseForwardDispatch(p, { in: 4, out: 4, wOffset: 0, bOffset: 16, act: 'none' }, x, x, 1);
    expect(() => validateDispatch(aliased)).toThrow(/buffer x is bound as both x and y/);
    const readTwice = denseForwardDispatch(
      p,
      { in: 4, out: 4, wOffset: 0, bOffset: 16, act: 'none' },
      p,
      x,
      1,
    );
    expect(() => validateDispatch(readTwice)).not.toThrow();
  });
});
