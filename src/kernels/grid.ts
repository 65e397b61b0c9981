/**
 * Dispatch-shape helpers shared by every kernel. A 1-D problem larger than one grid dimension
 * is spread over x and y; kernels recover the flat workgroup id as
 * `x + groups.x * (y + groups.y * z)` and ignore ids past the work (the grid may overshoot).
 */

/** WebGPU's guaranteed `maxComputeWorkgroupsPerDimension`; also CUDA's gridDim.y/z limit. */
export const MAX_GROUPS_PER_DIM = 65535;

/** A grid of at least `count` workgroups, none of its dimensions above the limit. */
export function grid1d(count: number): [number, number, number] {
  if (!Number.isInteger(count) || count < 0) throw new Error(`grid1d: bad workgroup count ${count}`);
  if (count <= MAX_GROUPS_PER_DIM) return [count, 1, 1];
  const y = Math.ceil(count / MAX_GROUPS_PER_DIM);
  if (y > MAX_GROUPS_PER_DIM) throw new Error(`grid1d: ${count} workgroups exceed a 65535 x 65535 grid`);
  return [Math.ceil(count / y), y, 1];
}

/** Total workgroups of a grid. */
export function groupCount(groups: readonly [number, number, number]): number {
  return groups[0] * groups[1] * groups[2];
}

/** Threads per workgroup of a kernel. */
export function threadsPerGroup(workgroupSize: readonly [number, number, number]): number {
  return workgroupSize[0] * workgroupSize[1] * workgroupSize[2];
}
