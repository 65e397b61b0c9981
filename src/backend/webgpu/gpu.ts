/**
 * Finding a WebGPU implementation, the same code path in Node and in a browser: the caller's
 * `GPU` object, else `navigator.gpu`, else Dawn's Node bindings (npm `webgpu`), imported
 * dynamically under a name a bundler does not follow, so browser bundles never pull it in.
 */
import { BackendUnavailableError } from '../types.js';
import { type FdApi, quietAdapters } from './dawn_log.js';

/**
 * Dawn toggles for Node. `timestamp_quantization`: the browser's anti-fingerprinting rounding of
 * timestamps, useless for benchmarks. A device toggle that does nothing where it does not apply,
 * so it is passed on every Node instance.
 */
export const DAWN_NODE_FLAGS = ['disable-dawn-features=timestamp_quantization'];

/**
 * The flags a Node Dawn instance is created with: DAWN_NODE_FLAGS plus any in the environment
 * variable FOXHUNT_DAWN_FLAGS (whitespace-separated, e.g.
 * `enable-dawn-features=disable_robustness` to measure Dawn without its bounds-checking
 * rewrites). Read once, when the process's instance is created.
 */
export function dawnNodeFlags(env: Record<string, string | undefined> = process.env): string[] {
  const extra = (env.FOXHUNT_DAWN_FLAGS ?? '').split(/\s+/).filter((f) => f.length > 0);
  return mergeDawnFlags([...DAWN_NODE_FLAGS, ...extra]);
}

/**
 * One `enable-dawn-features=` and one `disable-dawn-features=` flag holding every toggle named in
 * any of them (Dawn's Node bindings keep only the last flag of a name); other flags as given.
 */
export function mergeDawnFlags(flags: string[]): string[] {
  const lists = new Map<string, string[]>();
  const other: string[] = [];
  for (const f of flags) {
    const m = /^(enable-dawn-features|disable-dawn-features)=(.*)$/.exec(f);
    if (!m) {
      other.push(f);
      continue;
    }
    const list = lists.get(m[1]) ?? [];
    for (const t of m[2].split(',').filter((x) => x.length > 0)) if (!list.includes(t)) list.push(t);
    lists.set(m[1], list);
  }
  return [...[...lists].map(([k, v]) => `${k}=${v.join(',')}`), ...other];
}

interface DawnModule {
  create(flags: string[]): GPU;
}

/** The caller's GPU, else navigator.gpu, else a Dawn instance; throws BackendUnavailableError. */
export async function findGpu(gpu?: GPU): Promise<GPU> {
  if (gpu) return gpu;
  const nav = (globalThis as { navigator?: { gpu?: GPU } }).navigator;
  if (nav?.gpu) return nav.gpu;
  const isNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
  if (!isNode) {
    throw new BackendUnavailableError(
      'webgpu',
      'this browser has no navigator.gpu (use a WebGPU-enabled browser or a secure context)',
    );
  }
  const name = 'webgpu';
  let mod: DawnModule;
  try {
    mod = (await import(/* @vite-ignore */ name)) as DawnModule;
  } catch (err) {
    throw new BackendUnavailableError(
      'webgpu',
      `cannot load Dawn's Node bindings (npm package webgpu): ${(err as Error).message}`,
    );
  }
  // One Dawn instance per process: creating and dropping instances repeatedly has crashed Dawn's
  // Node bindings at teardown, and an instance is cheap to share between backends.
  if (!dawnGpu) {
    dawnGpu = mod.create(dawnNodeFlags(process.env));
    if (!process.env.FOXHUNT_DEBUG) dawnGpu = quietAdapters(dawnGpu, ...(await dawnLog(process.env)));
  }
  return dawnGpu;
}

let dawnGpu: GPU | undefined;

/** node:fs and the debug log's path (dawn_log.ts), imported under names a bundler does not follow. */
async function dawnLog(env: Record<string, string | undefined>): Promise<[FdApi, string]> {
  const [fsName, osName] = ['node:fs', 'node:os'];
  const fs = (await import(/* @vite-ignore */ fsName)) as FdApi;
  const os = (await import(/* @vite-ignore */ osName)) as { tmpdir(): string };
  return [fs, env.FOXHUNT_DAWN_LOG ?? `${os.tmpdir()}/foxhunt-dawn.log`];
}

/** Adapter facts that routing and reports need. */
export interface AdapterSummary {
  vendor: string;
  architecture: string;
  description: string;
  /** A CPU implementation (llvmpipe/lavapipe, SwiftShader, WARP): correct but no faster than the CPU backend. */
  software: boolean;
}

const SOFTWARE = /llvmpipe|lavapipe|swiftshader|software|warp|basic render/i;

export function summarizeAdapter(adapter: GPUAdapter): AdapterSummary {
  const info = adapter.info;
  const vendor = info?.vendor ?? '';
  const architecture = info?.architecture ?? '';
  const description = info?.description || info?.device || '';
  // `isFallbackAdapter` moved from the adapter to its info; older implementations have only one.
  const fallback =
    (info as { isFallbackAdapter?: boolean } | undefined)?.isFallbackAdapter ??
    (adapter as { isFallbackAdapter?: boolean }).isFallbackAdapter ??
    false;
  const software =
    fallback || SOFTWARE.test(`${vendor} ${architecture} ${description} ${info?.device ?? ''}`);
  return { vendor, architecture, description, software };
}

export function adapterName(s: AdapterSummary): string {
  return s.description || [s.vendor, s.architecture].filter(Boolean).join(' ') || 'unknown adapter';
}
