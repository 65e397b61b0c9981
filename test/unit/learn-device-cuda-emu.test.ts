/**
 * The learner's parity cases (src/parity/learn_cases.ts) on the CUDA twins themselves: each
 * dispatch runs `cuda/<name>.cu` on the CPU fiber emulator (test/unit/learn-device-cuda), so the
 * CUDA sources are executed and checked against the TS learner on a machine without a GPU. The
 * whole-PPO-learner cases are left to the CPU, WebGPU and H200 runs (the emulator spends about a
 * minute on one real-size minibatch step), and the matmul cases run on smaller networks of the same
 * shape (several tiles in every dimension, ragged edges, k split between groups); every kernel is
 * covered, and the curiosity learner case chains gather, forward, loss, backward and AdamW.
 */
import { describe, expect, it } from 'vitest';
import { buildLayout } from '../../src/nets/layout.js';
import { learnParityCases, mlpParityCase } from '../../src/parity/learn_cases.js';
import { describeFailure, runCase } from '../../src/parity/run.js';
import { CudaEmuBackend, emuUnavailable } from './learn-device-cuda/emu_backend.js';

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `learner CUDA twins on the emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const backend = new CudaEmuBackend();
    const actor = buildLayout('small_actor', [
      { name: 'a0', in: 54, out: 40, act: 'relu' },
      { name: 'a1', in: 40, out: 45, act: 'none' },
    ]);
    const critic = buildLayout('small_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 70, act: 'leaky' },
      { name: 'c2', in: 70, out: 1, act: 'none' },
    ]);
    const cases = [
      ...learnParityCases().filter((c) => c.kernel !== 'ppo_learner' && !c.kernel.startsWith('mlp_')),
      mlpParityCase('mlp_forward', 70, [actor, critic]),
      mlpParityCase('mlp_backward', 70, [actor, critic]),
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const before = backend.launches;
        const r = await runCase(backend, c);
        expect(r.pass, describeFailure(r)).toBe(true);
        expect(backend.launches).toBeGreaterThan(before);
      });
    }
  },
);
