/**
 * ppo_gather's samples per workgroup: CUDA and WebGPU dispatch narrow workgroups (>= 128 for a
 * 512-sample minibatch). The kernel results are checked by the parity case "... 4 rows per
 * workgroup" (CPU, WebGPU, the parity suite's `emu` backend, CUDA).
 */
import { describe, expect, it } from 'vitest';
import type { DeviceBuffer } from '../../../src/backend/types.js';
import { ppoGatherRowsFor } from '../../../src/device/learn_mlp.js';
import {
  PPO_GATHER_CUDA_ROWS,
  type PpoGatherArgs,
  ppoGatherDispatch,
} from '../../../src/kernels/ppo_gather.js';

const buf = {} as DeviceBuffer;
const args = (batch: number, rowsPerGroup?: number): PpoGatherArgs => ({
  rolloutF: buf,
  rolloutI: buf,
  sched: buf,
  acts: buf,
  mb: buf,
  sections: { states: 0, logProbs: 0, advantages: 0, returns: 0, actions: 0 },
  count: 64000,
  batch,
  stateDim: 54,
  key: [1, 2],
  rowsPerGroup,
});

describe('ppo_gather workgroups', () => {
  it('takes 4 samples per workgroup on CUDA and WebGPU and 64 on the CPU', () => {
    expect(ppoGatherRowsFor('cuda')).toBe(PPO_GATHER_CUDA_ROWS);
    expect(PPO_GATHER_CUDA_ROWS).toBe(4);
    expect(ppoGatherRowsFor('webgpu')).toBe(PPO_GATHER_CUDA_ROWS);
    expect(ppoGatherRowsFor('cpu')).toBe(64);
  });

  it('spreads a 512-sample minibatch over 128 blocks on CUDA, 8 workgroups by default', () => {
    const narrow = ppoGatherDispatch(args(512, ppoGatherRowsFor('cuda')), 0, 0);
    expect(narrow.groups).toEqual([128, 1, 1]);
    expect(narrow.uniforms.rows).toBe(4);
    const wide = ppoGatherDispatch(args(512), 0, 0);
    expect(wide.groups).toEqual([8, 1, 1]);
    expect(wide.uniforms.rows).toBe(64);
    // A ragged last block.
    expect(ppoGatherDispatch(args(102, 4), 0, 0).groups).toEqual([26, 1, 1]);
  });

  it('rejects rows per workgroup outside 1..64', () => {
    for (const rows of [0, 65, 2.5]) {
      expect(() => ppoGatherDispatch(args(512, rows), 0, 0)).toThrow(/rows per workgroup/);
    }
  });
});
