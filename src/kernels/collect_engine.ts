/**
 * The WGSL tile engines of the collection kernels (wgsl/collect_tile.wgsl, constant ENGINE) as
 * data: 0 scalar activations with outputs strided over the threads, 2 quad blocks (vec4
 * activations, MQ quads of 4 consecutive outputs per thread, named accumulators, at most
 * QUAD2_MAX_ROWS rows per thread). Both compute the same bits; the CUDA twins ignore these
 * constants. (Engines 1 and 3, and the f16 engines 4 and 5, were retired: docs/COLLECT.md.)
 */

/** Output quads per thread of the WGSL quad engines (constant MQ; engine 2 is written for 2). */
export const QUAD_MQ = 2;

/** Rows per thread engine 2 has accumulators for (its constant MR at most). */
export const QUAD2_MAX_ROWS = 4;

/** The engines collect_tile.wgsl has. */
export const ENGINES = [0, 2] as const;

/** Weight-slice lengths (KT) tried, longest first. */
export const sliceCandidates = (_engine: number): number[] => [32, 16, 8, 4];

/** Whether an engine is the quad-block engine (2: vec4 activations) rather than scalar (0). */
export const isQuadEngine = (engine: number): boolean => engine === 2;

/**
 * Rows and the engine constants of the WGSL tile engine for a layer width `width` (the widest
 * layer): engine 0 pads the rows to a multiple of the threads / tj row groups, engines 1 and 2
 * to a multiple of their own row groups (threads / (width / (4 * MQ))). Throws where engine 2
 * would need more rows per thread than it has accumulators for.
 */
export function tileEngineConstants(
  engine: number,
  rows: number,
  threads: number,
  tj: number,
  width: number,
): {
  ROWS: number;
  ENGINE: number;
  MQ: number;
} {
  const groups = isQuadEngine(engine) ? threads / (width / (4 * QUAD_MQ)) : threads / tj;
  const perThread = Math.ceil(rows / groups);
  if (engine === 2 && perThread > QUAD2_MAX_ROWS)
    throw new Error(
      `tile engine 2 holds at most ${QUAD2_MAX_ROWS} rows per thread, this tile needs ${perThread}; use more threads or fewer episodes per workgroup`,
    );
  return { ROWS: perThread * groups, ENGINE: engine, MQ: QUAD_MQ };
}

/** Throws unless the engine can take this shape (`what` names the kernel). */
export function checkEngine(what: string, engine: number, threads: number, width: number): void {
  if (!(ENGINES as readonly number[]).includes(engine))
    throw new Error(`${what}: engine ${engine} must be ${ENGINES.join(', ')}`);
  const tq = width / (4 * QUAD_MQ);
  if (isQuadEngine(engine) && threads % tq !== 0)
    throw new Error(`${what}: engine ${engine} needs threads a multiple of ${tq}, got ${threads}`);
}
