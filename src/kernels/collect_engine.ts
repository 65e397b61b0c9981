/**
 * The WGSL tile engines of the collection kernels (wgsl/collect_tile.wgsl, constant ENGINE) as
 * data: 0 scalar activations with outputs strided over the threads, 2 quad blocks (vec4
 * activations, MQ quads of 4 consecutive outputs per thread, named accumulators, at most
 * QUAD2_MAX_ROWS rows per thread). Both compute the same bits; the CUDA twins ignore these
 * constants. (Engines 1 and 3 were retired: docs/COLLECT.md, "Tried and measured".) 4 is the tensor-core engine (subgroup matrices, f16
 * operands, f32 sums: src/kernels/collect_half.ts), the WebGPU f16 precision mode, not the same
 * bits; plain DQN head only. 5 streams f16 weights from L2 straight into registers for small
 * tiles (no workgroup-memory staging, f32 activations and sums: the f16 precision mode of small N;
 * plain DQN head only, no device feature).
 */

/** Output quads per thread of the WGSL quad engines (constant MQ; engine 2 is written for 2). */
export const QUAD_MQ = 2;

/** Rows per thread engine 2 has accumulators for (its constant MR at most). */
export const QUAD2_MAX_ROWS = 4;

/** The engines collect_tile.wgsl has. */
export const ENGINES = [0, 2, 4, 5] as const;

/** The tensor-core engine (needs the WebGPU feature chromium-experimental-subgroup-matrix). */
export const MMA_ENGINE = 4;

/** The weight-streaming engine (f16 weights in pack_half's k-group layout, f32 math). */
export const STREAM_ENGINE = 5;

/** Rows engine 5 takes (its per-thread sums: one per row). */
export const STREAM_MAX_ROWS = 8;

/**
 * 16-byte weight words per batch of engine 5 unless chosen (constant STREAM_RUN_WORDS): a batch's loads are
 * in flight while the batch before it multiplies. H200, N = 128 at af4c5a6: 4 4.12M
 * env-steps/s, 8 3.79M (3.99M unpipelined), 16 2.89M.
 */
export const STREAM_RUN_WORDS = 4;

/** Whether an engine reads the f16 copy of the nets (nets16, src/kernels/collect_half.ts). */
export const isHalfEngine = (engine: number): boolean => engine === 4 || engine === 5;

/** Rows of one subgroup-matrix tile: engine 4 pads a tile's rows to a multiple of it. */
export const MMA_TILE = 16;

/**
 * Row tiles engine 4 is written for (its accumulators: 2 output tiles x MT row tiles); 48 rows
 * with two scratch tiles per subgroup fit 48 KiB of workgroup memory (64 rows would not).
 */
export const MMA_MAX_ROW_TILES = 3;

/** Threads engine 4 runs: 8 subgroups of 32, two 16-output tiles each, cover a 256-wide layer. */
export const MMA_THREADS = 256;

/**
 * Floats of the staged-weight arrays a tile engine declares (collect_tile.wgsl): KT weights per
 * output as vec4 quads (engines 0 and 2), none for the f16 engines.
 */
export const wsFloats = (engine: number, kt: number, wsOut: number): number =>
  isHalfEngine(engine) ? 0 : kt * wsOut;

/**
 * Row stride of the activations (constant ACT_W) for a network `width` wide: the width, plus 8
 * halves for engine 4 (every tile row on 16 bytes).
 */
export const actWidth = (engine: number, _kt: number, width: number): number =>
  engine === 4 ? width + 8 : width;

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
  MMA_KSPLIT: number;
  MT?: number;
  STREAM_RUN_WORDS?: number;
  DUAL_PASS?: number;
  PING_PONG?: number;
} {
  if (engine === STREAM_ENGINE) {
    if (rows > STREAM_MAX_ROWS)
      throw new Error(
        `tile engine 5 holds at most ${STREAM_MAX_ROWS} rows per workgroup, this tile has ${rows}; use fewer episodes per workgroup or engine 4`,
      );
    // DUAL_PASS: the target pass also runs the online net on s' (rows doubled), with 2 x width threads.
    const dual = threads >= 2 * width ? 1 : 0;
    return {
      ROWS: (1 + dual) * rows,
      ENGINE: engine,
      MQ: QUAD_MQ,
      MMA_KSPLIT: 1,
      STREAM_RUN_WORDS,
      DUAL_PASS: dual,
      // PING_PONG 1: the dual pass's layers on two activation buffers (collect_tile.wgsl dense_stream's pp);
      // the DQN kernel sets it (collect_dqn.ts streamDqnConstants), 0 elsewhere.
      PING_PONG: 0,
    };
  }
  if (engine === MMA_ENGINE) {
    const mt = Math.ceil(rows / MMA_TILE);
    if (threads === 2 * MMA_THREADS && mt > 1)
      throw new Error(
        `tile engine 4 splits K (${threads} threads) for one 16-row tile only, this tile has ${rows} rows; use 256 threads`,
      );
    if (mt > MMA_MAX_ROW_TILES)
      throw new Error(
        `tile engine 4 holds at most ${MMA_MAX_ROW_TILES * MMA_TILE} rows per workgroup, this tile has ${rows}; use fewer episodes per workgroup`,
      );
    return {
      ROWS: mt * MMA_TILE,
      ENGINE: engine,
      MQ: QUAD_MQ,
      MT: mt,
      MMA_KSPLIT: threads / MMA_THREADS,
    };
  }
  const groups = isQuadEngine(engine) ? threads / (width / (4 * QUAD_MQ)) : threads / tj;
  const perThread = Math.ceil(rows / groups);
  if (engine === 2 && perThread > QUAD2_MAX_ROWS)
    throw new Error(
      `tile engine 2 holds at most ${QUAD2_MAX_ROWS} rows per thread, this tile needs ${perThread}; use more threads or fewer episodes per workgroup`,
    );
  // MMA_KSPLIT names engine 4's K split in every module (its //!if blocks test it); 1 elsewhere.
  return { ROWS: perThread * groups, ENGINE: engine, MQ: QUAD_MQ, MMA_KSPLIT: 1 };
}

/** Throws unless the engine can take this shape (`what` names the kernel). */
export function checkEngine(what: string, engine: number, threads: number, width: number): void {
  if (!(ENGINES as readonly number[]).includes(engine))
    throw new Error(`${what}: engine ${engine} must be ${ENGINES.join(', ')}`);
  if (engine === MMA_ENGINE && threads !== MMA_THREADS && threads !== 2 * MMA_THREADS)
    throw new Error(
      `${what}: engine 4 runs ${MMA_THREADS} threads (8 subgroups of 32) or ${2 * MMA_THREADS} (the K split), got ${threads}`,
    );
  if (engine === STREAM_ENGINE && (threads % width !== 0 || threads > 1024))
    throw new Error(
      `${what}: engine 5 needs threads a multiple of the layer width ${width} (at most 1024), got ${threads}`,
    );
  const tq = width / (4 * QUAD_MQ);
  if (isQuadEngine(engine) && threads % tq !== 0)
    throw new Error(`${what}: engine ${engine} needs threads a multiple of ${tq}, got ${threads}`);
}
