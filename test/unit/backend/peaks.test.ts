/**
 * The device peaks `foxhunt bench` divides by (src/backend/peaks.ts): matched on the device name
 * and compute capability the backend reports, none for a software adapter or an unknown device,
 * and the table rows that show the shares.
 */
import { describe, expect, it } from 'vitest';
import { devicePeaks, PEAKS, tensorPeak } from '../../../src/backend/peaks.js';
import type { Backend } from '../../../src/backend/types.js';
import { collectTable, peaksLine } from '../../../src/cli/commands/bench-collect.js';
import type { CollectBenchResult } from '../../../src/device/collect_bench.js';

const device = (kind: Backend['kind'], name: string, limits: Record<string, string | number> = {}) =>
  ({ kind, info: { kind, device: name, driver: '', limits } }) as Pick<Backend, 'kind' | 'info'>;

describe('device peaks', () => {
  it('matches the H200 and H100 SXM on CUDA and WebGPU, the PCIe card apart', () => {
    const h200 = devicePeaks(device('cuda', 'NVIDIA H200', { computeCapability: '9.0' }));
    expect(h200?.name).toBe('NVIDIA H100 / H200 SXM (sm_90)');
    expect(h200?.f32).toBeCloseTo(66.9e12, -9);
    expect(h200?.tf32).toBeCloseTo(494.7e12, -9);
    expect(h200?.source).toMatch(/datasheet/);
    expect(devicePeaks(device('cuda', 'NVIDIA H100 80GB HBM3', { computeCapability: '9.0' }))?.name).toBe(
      h200?.name,
    );
    // Dawn names the adapter; no compute capability.
    expect(devicePeaks(device('webgpu', 'NVIDIA H200', { software: 'no' }))?.name).toBe(h200?.name);
    expect(devicePeaks(device('cuda', 'NVIDIA H100 PCIe', { computeCapability: '9.0' }))?.f32).toBe(51.2e12);
    expect(devicePeaks(device('cuda', 'NVIDIA H100 NVL', { computeCapability: '9.0' }))).toBeUndefined();
  });

  it('gives none to the CPU, a software adapter, an unknown device or a mismatched capability', () => {
    expect(devicePeaks(device('cpu', 'CPU reference'))).toBeUndefined();
    expect(devicePeaks(device('webgpu', 'llvmpipe (LLVM 15)', { software: 'yes' }))).toBeUndefined();
    expect(
      devicePeaks(device('cuda', 'NVIDIA GeForce GTX 1080', { computeCapability: '6.1' })),
    ).toBeUndefined();
    expect(devicePeaks(device('cuda', 'NVIDIA H200', { computeCapability: '8.0' }))).toBeUndefined();
  });

  it('every row names its source and orders its peaks f32 <= tf32', () => {
    for (const r of PEAKS) {
      expect(r.source.length).toBeGreaterThan(20);
      expect(r.tf32 ?? r.f32).toBeGreaterThanOrEqual(r.f32);
    }
    expect(tensorPeak(PEAKS[1], 'exact')).toBeUndefined();
    expect(tensorPeak(PEAKS[1], 'tf32')).toBe(PEAKS[1].tf32);
  });

  it('prints the shares of the f32 and tensor peaks, and the source under the table', () => {
    const peaks = devicePeaks(device('cuda', 'NVIDIA H200', { computeCapability: '9.0' }));
    const r = {
      variant: 'cluster',
      precision: 'tf32',
      episodes: 128,
      steps: 64,
      tileEpisodes: 9,
      threads: 288,
      cluster: 8,
      engine: 0,
      ms: 1,
      envStepsPerSec: 12.6e6,
      flopsPerStep: 0.612e6,
      flopsPerSec: 0.612e6 * 12.6e6,
    } as CollectBenchResult;
    const [head, row] = collectTable([r], peaks, false);
    expect(head).toMatch(/% f32 peak\s+% tensor peak/);
    expect(row).toMatch(/cluster tf32\s+9 x 288, 8 CTAs/);
    expect(row).toMatch(/11\.5%\s+1\.6%$/);
    expect(peaksLine(peaks, 'NVIDIA H200')).toMatch(
      /f32 FMA 66\.90 TFLOP\/s, TF32 dense 494\.70 TFLOP\/s.*source: NVIDIA/,
    );
    expect(peaksLine(undefined, 'Some GPU')).toBe(
      'peaks: none known for Some GPU (src/backend/peaks.ts lists the devices)',
    );
  });
});
