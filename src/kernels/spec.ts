/**
 * A kernel described as data (`KernelSpec`): both GPU backends and the CPU reference read the same
 * description; src/backend/types.ts re-exports these types beside the `Backend` interface.
 *
 * Binding convention, shared by all twins:
 * - WGSL: storage buffers are `@group(0) @binding(i)` in `bindings` order; the uniforms are one
 *   struct at `@group(0) @binding(bindings.length)`, fields in `uniforms` order, each 4 bytes.
 * - CUDA: `extern "C" __global__ void <name>(<buffers in order>, <uniform struct by value>)`,
 *   the struct's fields in `uniforms` order, each 4 bytes (u32 / i32 / f32).
 * - CPU: `(buffers: TypedArray views in order, uniforms: Record<string, number>, groups) => void`.
 */

export type ScalarType = 'f32' | 'u32' | 'i32';

export interface BindingSpec {
  name: string;
  /** Element type of the buffer (for typed-array views on the CPU and WGSL array types). */
  type: ScalarType;
  access: 'read' | 'read_write';
}

export interface UniformSpec {
  name: string;
  type: ScalarType;
}

export interface KernelSpec {
  /** Base name of the twins: `wgsl/<name>.wgsl`, `cuda/<name>.cu`, the TS reference `<name>`. */
  name: string;
  bindings: BindingSpec[];
  uniforms: UniformSpec[];
  /** Threads per workgroup (WGSL `@workgroup_size`) / per block (CUDA blockDim). */
  workgroupSize: [number, number, number];
  /** Compile-time constants (WGSL `override`s / CUDA `#define`s); part of the pipeline cache key. */
  constants?: Record<string, number>;
  /**
   * CUDA only: dynamic shared memory per block in bytes (`extern __shared__`), for kernels whose
   * tiles outgrow the 48 KiB of static shared memory; the backend raises the function's limit
   * (cuFuncSetAttribute) and launches with this many bytes. WGSL and CPU twins ignore it.
   */
  sharedBytes?: number;
  /**
   * CUDA only (sm_90+): blocks per thread-block cluster in x, y, z; the grid must be a multiple of
   * it in each dimension. The CUDA backend launches with cuLaunchKernelEx; WebGPU and the CPU
   * reject such a kernel.
   */
  cluster?: [number, number, number];
  /**
   * CUDA only (sm_90+): Programmatic Dependent Launch. The CUDA backend launches with
   * cuLaunchKernelEx and programmatic stream serialization, so the grid may become resident while
   * the previous kernel of the stream finishes; the kernel must wait (`griddepcontrol.wait`, as
   * LEARN_GRID_DEP_WAIT in cuda/learn_common.cuh) before touching memory, which keeps plain stream
   * order. Older GPUs, WebGPU and the CPU launch as usual: it changes no results.
   */
  pdl?: boolean;
}

/** An opaque device allocation; only its owning backend can read it. */
export interface DeviceBuffer {
  readonly size: number;
  readonly label: string;
}

export interface Dispatch {
  kernel: KernelSpec;
  /** Buffers in `kernel.bindings` order. */
  buffers: DeviceBuffer[];
  /** One value per `kernel.uniforms` entry. */
  uniforms: Record<string, number>;
  /** Workgroups / blocks in x, y, z. */
  groups: [number, number, number];
}

/** What a kernel module needs of a backend to allocate its scratch buffers (a `Backend` is one). */
export interface BufferFactory {
  createBuffer(bytes: number, label: string): DeviceBuffer;
}
