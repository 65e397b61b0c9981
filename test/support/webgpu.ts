/**
 * The WebGPU backend a describe block shares: created before its tests, destroyed after them.
 * `webgpu(ctx)` gives it, or skips the test with the reason when no adapter exists; with
 * FOXHUNT_REQUIRE_WEBGPU=1 (set by .ci/run) a missing adapter fails instead.
 */
import { afterAll, beforeAll } from 'vitest';
import { type CudaModule, createBackend } from '../../src/backend/index.js';
import { type Backend, BackendUnavailableError } from '../../src/backend/types.js';
import { findGpu } from '../../src/backend/webgpu/gpu.js';

export function useWebgpu(): (ctx: { skip: (note: string) => void }) => Backend {
  let backend: Backend | undefined;
  let why = '';
  beforeAll(async () => {
    try {
      backend = await createBackend('webgpu');
    } catch (err) {
      if (!(err instanceof BackendUnavailableError) || process.env.FOXHUNT_REQUIRE_WEBGPU === '1') throw err;
      why = err.message;
    }
  }, 60_000);
  afterAll(() => backend?.destroy());
  return (ctx) => {
    if (!backend) {
      ctx.skip(`WebGPU unavailable: ${why} (set FOXHUNT_REQUIRE_WEBGPU=1 to fail instead)`);
      throw new Error('unreachable: ctx.skip throws');
    }
    return backend;
  };
}

export const noCudaModule = () => Promise.reject(new Error('Cannot find module ./cuda/index.js'));
export const noCudaDevice = (): Promise<CudaModule> =>
  Promise.resolve({
    createCudaBackend: () => Promise.reject(new BackendUnavailableError('cuda', 'no CUDA device')),
  });

/**
 * Dawn on lavapipe, with the adapter dressed up as a hardware GPU (to exercise `auto`). It wraps
 * the process's shared Dawn instance: an instance of its own would be garbage-collected later,
 * and Dawn has aborted the process when an instance is collected while another device works.
 */
export function hardwareLookingGpu(): GPU {
  return {
    requestAdapter: async (o?: GPURequestAdapterOptions) => {
      const adapter = await (await findGpu()).requestAdapter(o);
      if (!adapter) return null;
      const info = {
        vendor: 'nvidia',
        architecture: 'hopper',
        description: 'NVIDIA H200',
        isFallbackAdapter: false,
      };
      return new Proxy(adapter, {
        get: (target, prop) => {
          if (prop === 'info') return info;
          const v = Reflect.get(target, prop, target);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
    },
  } as unknown as GPU;
}
