/**
 * What a backend can do, as data: its device class, vendor, architecture, features and the limits
 * the kernels' plans read. Code above src/backend/ asks these questions instead of comparing
 * `backend.kind`; the numbers a device class is tuned with are in ./tuning.ts.
 *
 * Derived from `backend.kind` and `backend.info` on each call (cheap), so a backend that reports
 * itself under another kind (tests stand the CPU in for a GPU that way) gets that kind's caps.
 */

import type { Backend, BackendKind } from './types.js';

/**
 * The device classes the tuning table has a row for: CUDA, WebGPU on a GPU, WebGPU on a software
 * adapter (lavapipe, SwiftShader, WARP: a CPU behind the WebGPU API), the CPU reference.
 */
export type DeviceClass = 'cuda' | 'webgpu' | 'webgpu-software' | 'cpu';

export interface BackendCaps {
  /** The backend (for messages, and for what a checkpoint was written by); decisions read the rest. */
  kind: BackendKind;
  deviceClass: DeviceClass;
  /** `nvidia`, the WebGPU adapter's vendor, or `cpu`; '' where unknown. */
  vendor: string;
  /** `sm_90` on CUDA, the adapter's architecture on WebGPU (`hopper`), '' where unknown. */
  architecture: string;
  /** CUDA compute capability [major, minor]; undefined elsewhere. */
  computeCapability?: [number, number];
  /** A software adapter: correct, no faster than the CPU reference. */
  software: boolean;
  features: {
    /** CUDA TF32 tensor cores (the kernels' TF32 constant): mma.sync on every CUDA device foxhunt builds for. */
    tf32TensorCores: boolean;
    /**
     * Thread-block clusters and distributed shared memory (CUDA sm_90+; a CUDA backend that does not
     * state its compute capability is taken at its word when it compiles the kernel).
     */
    clusters: boolean;
    /** Opt-in dynamic shared memory past the 48 KiB static plan (CUDA). */
    dynamicSharedMemory: boolean;
    /** WGSL kernels: the collection kernel's tile engines and the split-dW hand-off apply. */
    wgsl: boolean;
  };
  limits: {
    /** Workgroup memory a WGSL kernel may use (48 KiB where the backend states none: CUDA, CPU). */
    workgroupStorageBytes: number;
    /** CUDA opt-in shared memory per block; undefined elsewhere. */
    sharedOptinBytes?: number;
    /** Largest storage buffer binding, where stated. */
    maxStorageBufferBindingSize?: number;
    /** Invocations per workgroup, where stated (WebGPU). */
    invocationsPerWorkgroup?: number;
    /** A workgroup's largest x size, where stated (WebGPU). */
    workgroupSizeX?: number;
    /** Streaming multiprocessors, where stated (CUDA). */
    smCount?: number;
  };
}

const num = (v: string | number | undefined): number | undefined => (typeof v === 'number' ? v : undefined);

/** The capabilities of `backend`, from its kind and what it reports in `info`. */
export function capsOf(backend: Pick<Backend, 'kind'> & { info?: Backend['info'] }): BackendCaps {
  const kind = backend.kind;
  const limits = backend.info?.limits ?? {};
  const cc = /^(\d+)\.(\d+)$/.exec(String(limits.computeCapability ?? ''));
  const computeCapability: [number, number] | undefined =
    kind === 'cuda' && cc ? [Number(cc[1]), Number(cc[2])] : undefined;
  const software = kind === 'webgpu' && limits.software === 'yes';
  return {
    kind,
    deviceClass: kind === 'webgpu' ? (software ? 'webgpu-software' : 'webgpu') : kind,
    vendor: kind === 'cuda' ? 'nvidia' : kind === 'cpu' ? 'cpu' : String(limits.vendor ?? ''),
    architecture: computeCapability
      ? `sm_${computeCapability[0]}${computeCapability[1]}`
      : kind === 'webgpu'
        ? String(limits.architecture ?? '')
        : '',
    computeCapability,
    software,
    features: {
      tf32TensorCores: kind === 'cuda',
      clusters: kind === 'cuda' && (computeCapability === undefined || computeCapability[0] >= 9),
      dynamicSharedMemory: kind === 'cuda',
      wgsl: kind === 'webgpu',
    },
    limits: {
      workgroupStorageBytes: num(limits.maxComputeWorkgroupStorageSize) ?? 48 * 1024,
      sharedOptinBytes: num(limits.maxSharedPerBlockOptin),
      maxStorageBufferBindingSize: num(limits.maxStorageBufferBindingSize),
      invocationsPerWorkgroup: num(limits.maxComputeInvocationsPerWorkgroup),
      workgroupSizeX: num(limits.maxComputeWorkgroupSizeX),
      smCount: num(limits.smCount),
    },
  };
}
