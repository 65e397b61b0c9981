/**
 * The WGSL tile engines of the collection kernels (wgsl/collect_tile.wgsl, constant ENGINE) as
 * data: 0 scalar activations with outputs strided over the threads, 1 quad blocks (vec4
 * activations, MQ quads of 4 consecutive outputs per thread). Both compute the same bits; the
 * CUDA twins ignore these constants.
 */

/** Output quads per thread of the WGSL quad engine (constant MQ). */
export const QUAD_MQ = 2;

/**
 * Rows and the engine constants of the WGSL tile engine for a layer width `width` (the widest
 * layer): engine 0 pads the rows to a multiple of the threads / tj row groups, engine 1 to a
 * multiple of its own row groups (threads / (width / (4 * MQ))).
 */
export function tileEngineConstants(
  engine: number,
  rows: number,
  threads: number,
  tj: number,
  width: number,
): { ROWS: number; ENGINE: number; MQ: number } {
  const groups = engine === 1 ? threads / (width / (4 * QUAD_MQ)) : threads / tj;
  return { ROWS: Math.ceil(rows / groups) * groups, ENGINE: engine, MQ: QUAD_MQ };
}

/** Throws unless the quad engine can take this shape (`what` names the kernel). */
export function checkEngine(what: string, engine: number, threads: number, width: number): void {
  if (engine !== 0 && engine !== 1) throw new Error(`${what}: engine ${engine} must be 0 or 1`);
  if (engine === 1 && threads % (width / (4 * QUAD_MQ)) !== 0)
    throw new Error(`${what}: engine 1 needs threads a multiple of ${width / (4 * QUAD_MQ)}, got ${threads}`);
}
