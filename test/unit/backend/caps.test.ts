/**
 * Backends as data (src/backend/caps.ts, tuning.ts): the capabilities derived from what each
 * backend reports, the tuning row of each device class, and the learner's plan choices read from
 * it (the values they had when they were `backend.kind` checks).
 */
import { describe, expect, it } from 'vitest';
import { capsOf } from '../../../src/backend/caps.js';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { TUNING, tuningFor } from '../../../src/backend/tuning.js';
import type { Backend } from '../../../src/backend/types.js';
import {
  dwHandoffFor,
  dwSplitBudgetFor,
  kSplitFor,
  ppoGatherRowsFor,
} from '../../../src/device/learn_mlp.js';

const device = (kind: Backend['kind'], limits: Record<string, string | number>) =>
  ({ kind, info: { kind, device: 'x', driver: '', limits } }) as Pick<Backend, 'kind' | 'info'>;

const h200 = device('cuda', {
  computeCapability: '9.0',
  smCount: 132,
  maxSharedPerBlockOptin: 232448,
});
const sm89 = device('cuda', { computeCapability: '8.9', smCount: 58, maxSharedPerBlockOptin: 101376 });
const dawn = device('webgpu', {
  vendor: 'nvidia',
  architecture: 'hopper',
  software: 'no',
  features: 'timestamp-query,subgroups',
  maxComputeWorkgroupStorageSize: 49152,
  maxComputeInvocationsPerWorkgroup: 1024,
});
const lavapipe = device('webgpu', {
  vendor: 'mesa',
  architecture: '',
  software: 'yes',
  features: 'timestamp-query',
  maxComputeWorkgroupStorageSize: 32768,
  maxComputeInvocationsPerWorkgroup: 256,
});

describe('backend caps', () => {
  it('describes CUDA by compute capability: clusters on sm_90, not on sm_89', () => {
    const c = capsOf(h200);
    expect(c).toMatchObject({
      deviceClass: 'cuda',
      vendor: 'nvidia',
      architecture: 'sm_90',
      software: false,
    });
    expect(c.computeCapability).toEqual([9, 0]);
    expect(c.features).toEqual({
      tf32TensorCores: true,
      clusters: true,
      dynamicSharedMemory: true,
      wgsl: false,
    });
    expect(c.limits).toMatchObject({
      sharedOptinBytes: 232448,
      smCount: 132,
      workgroupStorageBytes: 48 * 1024,
    });
    expect(capsOf(sm89).features.clusters).toBe(false);
    expect(capsOf(sm89).architecture).toBe('sm_89');
  });

  it('describes WebGPU by adapter: hardware or software, its features and limits', () => {
    const d = capsOf(dawn);
    expect(d).toMatchObject({
      deviceClass: 'webgpu',
      vendor: 'nvidia',
      architecture: 'hopper',
      software: false,
    });
    expect(d.features.wgsl).toBe(true);
    expect(d.features.tf32TensorCores).toBe(false);
    expect(d.limits.invocationsPerWorkgroup).toBe(1024);
    const l = capsOf(lavapipe);
    expect(l.deviceClass).toBe('webgpu-software');
    expect(l.limits.workgroupStorageBytes).toBe(32768);
  });

  it('describes the CPU, and a backend that reports no info', () => {
    const c = capsOf(createCpuBackend());
    expect(c).toMatchObject({ deviceClass: 'cpu', vendor: 'cpu', software: false });
    expect(Object.values(c.features).some(Boolean)).toBe(false);
    expect(capsOf({ kind: 'webgpu' }).deviceClass).toBe('webgpu');
  });

  it('has a tuning row per device class', () => {
    expect(Object.keys(TUNING).sort()).toEqual(['cpu', 'cuda', 'webgpu', 'webgpu-software']);
    expect(tuningFor(h200)).toBe(TUNING.cuda);
    expect(tuningFor(lavapipe)).toBe(TUNING['webgpu-software']);
    expect(tuningFor(capsOf(dawn))).toBe(TUNING.webgpu);
  });

  it('plans the learner as the kind checks did', () => {
    const cpu = createCpuBackend();
    // kSplit: CUDA 4; WebGPU from its limits; the CPU 1.
    expect([h200, dawn, lavapipe, cpu].map((b) => kSplitFor(b))).toEqual([4, 4, 2, 1]);
    // Split-dW budget: two per SM where stated, 256 on WebGPU, 0 on the CPU.
    expect([h200, sm89, dawn, lavapipe, cpu].map((b) => dwSplitBudgetFor(b))).toEqual([
      264, 116, 256, 256, 0,
    ]);
    expect([h200, dawn, lavapipe, cpu].map((b) => dwHandoffFor(b))).toEqual([
      'last',
      'later',
      'later',
      'last',
    ]);
    expect([h200, dawn, lavapipe, cpu].map((b) => ppoGatherRowsFor(b))).toEqual([4, 4, 4, 64]);
    expect(['cuda', 'webgpu', 'cpu'].map((k) => ppoGatherRowsFor(k as Backend['kind']))).toEqual([4, 4, 64]);
    expect([h200, dawn, cpu].map((b) => tuningFor(b).learn.deltaChain)).toEqual([true, false, false]);
  });
});
