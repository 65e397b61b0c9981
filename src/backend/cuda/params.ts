/**
 * The kernel parameter block of a CUDA launch (src/backend/types.ts convention): one 8-byte device
 * pointer per binding, in `bindings` order, then the uniform struct by value (4 bytes per field,
 * `uniforms` order). Pointers are 8-aligned at 8 * i and the struct (alignment 4) starts right
 * after them, which is exactly where the C ABI puts `f(T* a, U* b, S s)`'s arguments, so the block
 * can go to cuLaunchKernel as CU_LAUNCH_PARAM_BUFFER_POINTER.
 */
import type { Dispatch } from '../types.js';
import { packUniforms, uniformBytes } from '../uniforms.js';

/** Bytes of the parameter block of a dispatch of `d.kernel`. */
export function paramBytes(d: Pick<Dispatch, 'kernel'>): number {
  return 8 * d.kernel.bindings.length + uniformBytes(d.kernel);
}

/** Packs `pointers` (one per binding) and `d.uniforms` into a fresh parameter block. */
export function packParams(d: Dispatch, pointers: readonly bigint[]): Uint8Array {
  const { kernel } = d;
  if (pointers.length !== kernel.bindings.length) {
    throw new Error(
      `kernel ${kernel.name}: expected ${kernel.bindings.length} buffer pointers, got ${pointers.length}`,
    );
  }
  const bytes = new Uint8Array(paramBytes(d));
  const view = new DataView(bytes.buffer);
  for (const [i, p] of pointers.entries()) view.setBigUint64(8 * i, p, true);
  packUniforms(d, view, 8 * pointers.length);
  return bytes;
}
