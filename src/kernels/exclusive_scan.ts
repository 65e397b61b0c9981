/**
 * exclusive_scan: exclusive prefix sum of n u32 (modulo 2^32, so exact on every backend), as a
 * multi-level scan built from one kernel with two phases:
 * - phase 0: each workgroup scans its tile of `data` in place (exclusive) and writes the tile's
 *   total to `sums[tile]`;
 * - phase 1: each workgroup adds `sums[tile]` to every element of its tile.
 * `exclusiveScanDispatches` chains them: scan tiles, scan the tile sums the same way (recursively,
 * until one tile is left), then add the scanned sums back level by level. The last level's single
 * element is the grand total.
 */

import { grid1d, groupCount } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { BufferFactory, DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const exclusiveScanSpec: KernelSpec = {
  name: 'exclusive_scan',
  bindings: [
    { name: 'data', type: 'u32', access: 'read_write' },
    { name: 'sums', type: 'u32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'n', type: 'u32' },
    { name: 'phase', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
  constants: { ITEMS_PER_THREAD: 4 },
};

/** Elements per workgroup tile. */
export const SCAN_TILE = exclusiveScanSpec.workgroupSize[0] * exclusiveScanSpec.constants!.ITEMS_PER_THREAD;

/** Tiles covering n elements; at least one, so that n = 0 still writes a total of 0. */
export function scanTiles(n: number): number {
  return Math.max(1, Math.ceil(n / SCAN_TILE));
}

function exclusiveScanReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const [data, sums] = buffers;
  const tiles = Math.min(scanTiles(u.n), groupCount(groups));
  for (let g = 0; g < tiles; g++) {
    const end = Math.min(u.n, (g + 1) * SCAN_TILE);
    if (u.phase === 1) {
      for (let i = g * SCAN_TILE; i < end; i++) data[i] = (data[i] + sums[g]) >>> 0;
      continue;
    }
    let sum = 0;
    for (let i = g * SCAN_TILE; i < end; i++) {
      const v = data[i];
      data[i] = sum;
      sum = (sum + v) >>> 0;
    }
    sums[g] = sum;
  }
}

export const exclusiveScan: Kernel = { spec: exclusiveScanSpec, reference: exclusiveScanReference };

/** Element counts of each level: `[n, tiles(n), tiles(tiles(n)), ..., 1]`. */
export function scanLevels(n: number): number[] {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new Error(`exclusive_scan: bad length ${n}`);
  const sizes = [n];
  let last = n;
  do {
    last = scanTiles(last);
    sizes.push(last);
  } while (last > 1);
  return sizes;
}

/** Scratch for scanning n elements: one tile-sums buffer per level, the last holding the total. */
export interface ScanScratch {
  n: number;
  sums: DeviceBuffer[];
  /** One u32: the sum of all n elements (modulo 2^32) after the scan ran. */
  total: DeviceBuffer;
}

export function createScanScratch(backend: BufferFactory, n: number): ScanScratch {
  const sums = scanLevels(n)
    .slice(1)
    .map((size, level) => backend.createBuffer(4 * size, `exclusive_scan.sums${level}`));
  return { n, sums, total: sums[sums.length - 1] };
}

/** The dispatches that scan the first `scratch.n` u32 of `data` in place. */
export function exclusiveScanDispatches(data: DeviceBuffer, scratch: ScanScratch): Dispatch[] {
  const sizes = scanLevels(scratch.n);
  const levels = [data, ...scratch.sums];
  const pass = (level: number, phase: number): Dispatch => ({
    kernel: exclusiveScanSpec,
    buffers: [levels[level], levels[level + 1]],
    uniforms: { n: sizes[level], phase },
    groups: grid1d(sizes[level + 1]),
  });
  const down = sizes.slice(0, -1).map((_, level) => pass(level, 0));
  const up: Dispatch[] = [];
  for (let level = sizes.length - 3; level >= 0; level--) up.push(pass(level, 1));
  return [...down, ...up];
}
