/**
 * Backend routing. `auto` takes the first usable of: CUDA (the cuda module loads and finds a
 * device), a hardware WebGPU adapter (software adapters such as llvmpipe or SwiftShader are
 * skipped: they are no faster than the CPU reference), the CPU reference. It reports which one it
 * took and why each earlier one was skipped, for the CLI to print. Asking for one backend by name
 * gives that backend or a BackendUnavailableError with one line saying why (a named `webgpu`
 * accepts a software adapter).
 *
 * The CUDA backend is imported dynamically under a computed name, so that a browser bundle never
 * follows it and a build without it still routes: its absence reads as "unavailable".
 */
import { createCpuBackend } from './cpu/index.js';
import { type Backend, type BackendKind, BackendUnavailableError } from './types.js';
import { createWebGpuBackend } from './webgpu/index.js';

export type BackendRequest = 'auto' | BackendKind;

export interface CreateBackendOptions {
  /** WebGPU: a GPU object to use (`navigator.gpu`, Dawn's `create()`); default: found automatically. */
  gpu?: GPU;
  /** CUDA: device ordinal. */
  cudaDevice?: number;
  /** CUDA: how to load the backend module; default: import `./cuda/index.js` (tests replace it). */
  loadCuda?: () => Promise<CudaModule>;
}

export interface SkippedBackend {
  kind: BackendKind;
  reason: string;
}

export interface BackendChoice {
  backend: Backend;
  /** Backends `auto` tried before the one it took, each with the reason it was skipped. */
  skipped: SkippedBackend[];
}

/** The contract of `src/backend/cuda/index.ts`, which is built separately (native addon). */
export interface CudaModule {
  createCudaBackend(options?: { device?: number }): Promise<Backend>;
}

const isNode = () => typeof process !== 'undefined' && typeof process.versions?.node === 'string';

async function createCuda(opts: CreateBackendOptions): Promise<Backend> {
  if (!isNode()) throw new BackendUnavailableError('cuda', 'CUDA needs Node (the browser has WebGPU only)');
  const path = './cuda/index.js';
  const load = opts.loadCuda ?? (() => import(/* @vite-ignore */ path) as Promise<CudaModule>);
  let mod: CudaModule;
  try {
    mod = await load();
  } catch (err) {
    throw new BackendUnavailableError(
      'cuda',
      `the CUDA backend module did not load (${(err as Error).message.split('\n')[0]})`,
    );
  }
  try {
    return await mod.createCudaBackend({ device: opts.cudaDevice });
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw err;
    throw new BackendUnavailableError('cuda', (err as Error).message.split('\n')[0]);
  }
}

function create(kind: BackendKind, opts: CreateBackendOptions, auto: boolean): Promise<Backend> {
  if (kind === 'cpu') return Promise.resolve(createCpuBackend());
  if (kind === 'webgpu') return createWebGpuBackend({ gpu: opts.gpu, requireHardware: auto });
  if (kind === 'cuda') return createCuda(opts);
  throw new BackendUnavailableError(kind, `unknown backend "${kind}" (use auto, cpu, webgpu or cuda)`);
}

/** The backend to use, with the reasons `auto` skipped the ones before it. */
export async function chooseBackend(
  request: BackendRequest,
  opts: CreateBackendOptions = {},
): Promise<BackendChoice> {
  if (request !== 'auto') return { backend: await create(request, opts, false), skipped: [] };
  const skipped: SkippedBackend[] = [];
  for (const kind of ['cuda', 'webgpu'] as const) {
    try {
      return { backend: await create(kind, opts, true), skipped };
    } catch (err) {
      if (!(err instanceof BackendUnavailableError)) throw err;
      skipped.push({ kind, reason: err.message.replace(/^backend \w+ unavailable: /, '') });
    }
  }
  return { backend: createCpuBackend(), skipped };
}

/** `chooseBackend` without the report. */
export async function createBackend(
  request: BackendRequest,
  opts: CreateBackendOptions = {},
): Promise<Backend> {
  return (await chooseBackend(request, opts)).backend;
}

/** One line per skipped backend and one for the chosen, e.g. for the CLI's stderr. */
export function describeChoice(choice: BackendChoice): string[] {
  return [
    ...choice.skipped.map((s) => `backend ${s.kind} skipped: ${s.reason}`),
    `backend ${choice.backend.kind}: ${choice.backend.info.device}`,
  ];
}

export type { Backend, BackendInfo, BackendKind, DeviceBuffer, Dispatch, KernelSpec } from './types.js';
export { BackendUnavailableError, DeviceLostError } from './types.js';
