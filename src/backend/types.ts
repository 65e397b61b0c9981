/**
 * The narrow backend interface (STYLE: no RL logic in a backend). Kernels are described as data
 * (`KernelSpec`, src/kernels/spec.ts): both GPU backends and the CPU reference read the same
 * description.
 */
import type { DeviceBuffer, Dispatch, KernelSpec } from '../kernels/spec.js';

export type {
  BindingSpec,
  DeviceBuffer,
  Dispatch,
  KernelSpec,
  ScalarType,
  UniformSpec,
} from '../kernels/spec.js';

export type BackendKind = 'cpu' | 'webgpu' | 'cuda';

export interface BackendInfo {
  kind: BackendKind;
  /** Adapter / device name, e.g. `NVIDIA H200`, `llvmpipe`, `CPU reference`. */
  device: string;
  /** Driver / runtime versions, free text. */
  driver: string;
  /** Limits and features that matter to foxhunt, free text by key. */
  limits: Record<string, string | number>;
}

export interface Backend {
  readonly kind: BackendKind;
  readonly info: BackendInfo;
  createBuffer(byteSize: number, label: string): DeviceBuffer;
  /** Host -> device; ordered after everything encoded before it. */
  upload(dst: DeviceBuffer, data: ArrayBufferView, dstByteOffset?: number): void;
  /** Device -> device copy. */
  copy(
    src: DeviceBuffer,
    dst: DeviceBuffer,
    byteLength: number,
    srcByteOffset?: number,
    dstByteOffset?: number,
  ): void;
  /** Encodes the dispatches in order; they run as one submission (no host round trip between them). */
  run(dispatches: Dispatch[]): void;
  /**
   * Where the device has a second queue (CUDA: a second stream): runs the dispatches beside later
   * work, which waits for them only where it touches a buffer they write or writes one they read;
   * `download` of a buffer they write waits for them alone. Absent: `run` does the same in order.
   */
  runBeside?(dispatches: Dispatch[]): void;
  /** Device -> host; flushes pending work first. */
  download(src: DeviceBuffer, byteOffset?: number, byteLength?: number): Promise<ArrayBuffer>;
  /** Waits for all submitted work. */
  sync(): Promise<void>;
  /** Runs the dispatches and returns device-side elapsed milliseconds (timestamp queries / CUDA events). */
  time(dispatches: Dispatch[], repeats?: number): Promise<number>;
  destroyBuffer(buf: DeviceBuffer): void;
  destroy(): void;
}

/**
 * Backend extension (CUDA): how many thread-block clusters of a kernel the GPU holds at once
 * (cuOccupancyMaxActiveClusters), undefined for a kernel without clusters or a driver that cannot say.
 */
export interface ClusterOccupancy {
  maxActiveClusters(spec: KernelSpec): number | undefined;
}

/** A backend that cannot be used here, with the one line that says why and what to do. */
export class BackendUnavailableError extends Error {
  override name = 'BackendUnavailableError';
  constructor(
    readonly kind: BackendKind,
    reason: string,
  ) {
    super(`backend ${kind} unavailable: ${reason}`);
  }
}

/** The device was lost mid-run (driver reset, GPU removed): the run can resume from its last checkpoint. */
export class DeviceLostError extends Error {
  override name = 'DeviceLostError';
}
