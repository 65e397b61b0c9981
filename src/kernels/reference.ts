/**
 * The TS reference side of a kernel: what one dispatch computes, written plainly. The CPU
 * backend runs these; the parity suite checks the WGSL and CUDA twins against them.
 */
import type { KernelSpec } from './spec.js';

export type TypedArray = Float32Array | Uint32Array | Int32Array;

/**
 * One dispatch of a kernel: buffers as typed views in `spec.bindings` order (element type per
 * binding), uniforms by name, and the workgroup grid (the reference honours it: work outside
 * the grid is not done, exactly as on a GPU).
 */
export type KernelReference = (
  buffers: TypedArray[],
  uniforms: Record<string, number>,
  groups: readonly [number, number, number],
) => void;

export interface Kernel {
  spec: KernelSpec;
  reference: KernelReference;
}
