import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import { chooseBackend, createBackend, describeChoice } from '../../../src/backend/index.js';
import { type Backend, BackendUnavailableError } from '../../../src/backend/types.js';
import { hardwareLookingGpu, noCudaDevice, noCudaModule } from '../../support/webgpu.js';

describe('backend routing', () => {
  it('gives the CPU backend when asked for it', async () => {
    const choice = await chooseBackend('cpu');
    expect(choice.backend).toBeInstanceOf(CpuBackend);
    expect(choice.skipped).toEqual([]);
  });

  it('auto skips a missing CUDA module and a software adapter, then takes the CPU, saying why', async () => {
    const choice = await chooseBackend('auto', { loadCuda: noCudaModule });
    expect(choice.backend.kind).toBe('cpu');
    expect(choice.skipped).toEqual([
      { kind: 'cuda', reason: expect.stringMatching(/CUDA backend module did not load/) },
      {
        kind: 'webgpu',
        reason: expect.stringMatching(/only a software adapter \(llvmpipe.*--backend webgpu/),
      },
    ]);
    expect(describeChoice(choice)).toEqual([
      expect.stringMatching(/^backend cuda skipped: /),
      expect.stringMatching(/^backend webgpu skipped: only a software adapter/),
      'backend cpu: CPU reference',
    ]);
  });

  it('auto takes a hardware WebGPU adapter when CUDA has no device', async () => {
    const choice = await chooseBackend('auto', { loadCuda: noCudaDevice, gpu: hardwareLookingGpu() });
    try {
      expect(choice.backend.kind).toBe('webgpu');
      expect(choice.backend.info.device).toBe('NVIDIA H200');
      expect(choice.skipped).toEqual([{ kind: 'cuda', reason: 'no CUDA device' }]);
    } finally {
      choice.backend.destroy();
    }
  });

  it('auto takes CUDA first when its module finds a device', async () => {
    const fake = { kind: 'cuda', info: { kind: 'cuda', device: 'fake', driver: '', limits: {} } } as Backend;
    const choice = await chooseBackend('auto', {
      loadCuda: async () => ({ createCudaBackend: async () => fake }),
    });
    expect(choice.backend).toBe(fake);
    expect(choice.skipped).toEqual([]);
  });

  it('a named webgpu accepts a software adapter', async () => {
    const backend = await createBackend('webgpu');
    try {
      expect(backend.kind).toBe('webgpu');
      expect(backend.info.limits.software).toBe('yes');
    } finally {
      backend.destroy();
    }
  });

  it('a named backend that is unavailable throws one clear line', async () => {
    const noAdapter = { requestAdapter: async () => null } as unknown as GPU;
    const webgpu = createBackend('webgpu', { gpu: noAdapter });
    await expect(webgpu).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(webgpu).rejects.toThrow(/^backend webgpu unavailable: no WebGPU adapter \(install .*\)$/);

    const cuda = createBackend('cuda', { loadCuda: noCudaModule });
    await expect(cuda).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(cuda).rejects.toThrow(/^backend cuda unavailable: the CUDA backend module did not load/);

    const cudaOther = createBackend('cuda', {
      loadCuda: async () => ({
        createCudaBackend: () => Promise.reject(new Error('init failed\n  at native stack')),
      }),
    });
    await expect(cudaOther).rejects.toThrow(/^backend cuda unavailable: init failed$/);
  });

  it('a WebGPU implementation whose requestAdapter throws counts as unavailable', async () => {
    const broken = { requestAdapter: () => Promise.reject(new TypeError('boom')) } as unknown as GPU;
    const choice = await chooseBackend('auto', { loadCuda: noCudaModule, gpu: broken });
    expect(choice.backend.kind).toBe('cpu');
    expect(choice.skipped[1]).toEqual({ kind: 'webgpu', reason: 'requestAdapter failed: boom' });
  });
});
