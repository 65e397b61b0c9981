/**
 * The native surface of `foxhunt_cuda.node` (cuda/addon/addon.cc), one declaration per export, in
 * the order and with the arguments of the driver / NVRTC call each one wraps. Handles are bigint:
 * device pointers are plain addresses (`ptr + offset` is valid), everything else is opaque.
 * Failing calls throw an Error whose `code` is the CUDA error name (or FOXHUNT_*) and whose
 * `api` is the driver function.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BackendUnavailableError } from '../types.js';

export type Handle = bigint;
export type DevicePtr = bigint;

export interface NativeDeviceInfo {
  name: string;
  /** cuDriverGetVersion: 1000 * major + 10 * minor. */
  driverVersion: number;
  totalMemory: number;
  freeMemory: number;
  computeMajor: number;
  computeMinor: number;
  smCount: number;
  warpSize: number;
  maxThreadsPerBlock: number;
  maxSharedPerBlock: number;
  maxSharedPerBlockOptin: number;
  l2CacheBytes: number;
  memoryBusWidthBits: number;
  /** Absent where the driver no longer reports clock rates (deprecated in CUDA 13). */
  clockKHz?: number;
  memoryClockKHz?: number;
}

export interface CudaNative {
  /** Opens the driver at `libPath`, retains device `ordinal`'s primary context and makes it current. */
  init(ordinal: number, libPath: string): void;
  /** Releases the primary context; all handles become invalid. */
  shutdown(): void;
  deviceInfo(): NativeDeviceInfo;
  /** Opens NVRTC at `path`; returns its [major, minor] version. */
  loadNvrtc(path: string): [number, number];
  /** NVRTC source -> cubin; a compile error throws with the compiler log (also as `log`). */
  nvrtcCompile(
    source: string,
    name: string,
    headerSources: string[],
    headerNames: string[],
    options: string[],
  ): Uint8Array;
  moduleLoadData(image: Uint8Array): Handle;
  moduleUnload(module: Handle): void;
  moduleGetFunction(module: Handle, name: string): Handle;
  /** cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES): launches of `fn` may then ask for `bytes`. */
  funcSetMaxDynamicShared(fn: Handle, bytes: number): void;
  /** cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1): clusters of more than 8 blocks. */
  funcAllowNonPortableCluster(fn: Handle): void;
  /**
   * cuOccupancyMaxActiveClusters: how many clusters of cx x cy x cz blocks of bx x by x bz threads with
   * `sharedBytes` of dynamic shared memory the device holds at once (-1: the driver cannot say).
   */
  maxActiveClusters(
    fn: Handle,
    bx: number,
    by: number,
    bz: number,
    sharedBytes: number,
    cx: number,
    cy: number,
    cz: number,
  ): number;
  memAlloc(bytes: number): DevicePtr;
  memFree(ptr: DevicePtr): void;
  memsetD8Async(ptr: DevicePtr, value: number, bytes: number, stream: Handle): void;
  /** `src` may be reused as soon as this returns (the driver stages pageable memory). */
  memcpyHtoDAsync(dst: DevicePtr, src: ArrayBufferView, stream: Handle): void;
  /** Ordered on `stream`; returns once `dst.byteLength` bytes are in `dst`. */
  memcpyDtoH(dst: ArrayBufferView, src: DevicePtr, stream: Handle): void;
  memcpyDtoDAsync(dst: DevicePtr, src: DevicePtr, bytes: number, stream: Handle): void;
  /** cuLaunchKernel with the parameters as one packed buffer (see params.ts). */
  launchKernel(
    fn: Handle,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedBytes: number,
    stream: Handle,
    params: Uint8Array,
  ): void;
  /** launchKernel in thread-block clusters of clusterX x clusterY x clusterZ blocks (cuLaunchKernelEx). */
  launchKernelCluster(
    fn: Handle,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedBytes: number,
    stream: Handle,
    params: Uint8Array,
    clusterX: number,
    clusterY: number,
    clusterZ: number,
  ): void;
  /**
   * launchKernel with programmatic stream serialization (cuLaunchKernelEx; KernelSpec.pdl); a
   * plain launch where the driver has no cuLaunchKernelEx.
   */
  launchKernelPdl(
    fn: Handle,
    gridX: number,
    gridY: number,
    gridZ: number,
    blockX: number,
    blockY: number,
    blockZ: number,
    sharedBytes: number,
    stream: Handle,
    params: Uint8Array,
  ): void;
  streamCreate(): Handle;
  streamDestroy(stream: Handle): void;
  streamSynchronize(stream: Handle): void;
  /** Waits on a worker thread: the event loop keeps running. */
  streamSynchronizeAsync(stream: Handle): Promise<void>;
  eventCreate(): Handle;
  eventDestroy(event: Handle): void;
  eventRecord(event: Handle, stream: Handle): void;
  /** The stream's later work waits for the event (in a capture: the graph's edges between branches). */
  streamWaitEvent(stream: Handle, event: Handle): void;
  eventSynchronize(event: Handle): void;
  eventElapsedTime(start: Handle, end: Handle): number;
  streamBeginCapture(stream: Handle): void;
  streamEndCapture(stream: Handle): Handle;
  graphInstantiate(graph: Handle): Handle;
  graphLaunch(exec: Handle, stream: Handle): void;
  graphDestroy(graph: Handle): void;
  graphExecDestroy(exec: Handle): void;
}

/** The package root: the nearest folder above this module with a package.json (repo or bundle). */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('foxhunt: package.json not found above src/backend/cuda');
    dir = up;
  }
  return dir;
}

/** Where `npm ci` (node-gyp) and the bundle put the addon, relative to the package root. */
export const ADDON_PATH = 'build/Release/foxhunt_cuda.node';

let cached: CudaNative | undefined;

/** Loads the addon once; a missing build is a BackendUnavailableError that says how to build it. */
export function loadNative(): CudaNative {
  if (cached) return cached;
  const file = join(packageRoot(), ADDON_PATH);
  if (!existsSync(file)) {
    throw new BackendUnavailableError('cuda', 'CUDA addon not built: run npm ci / npm run build:addon');
  }
  try {
    cached = createRequire(import.meta.url)(file) as CudaNative;
  } catch (err) {
    // Built for another platform or libc, or a truncated file.
    const why = (err as Error).message.split('\n')[0];
    throw new BackendUnavailableError('cuda', `CUDA addon failed to load (${why}): run npm run build:addon`);
  }
  return cached;
}
