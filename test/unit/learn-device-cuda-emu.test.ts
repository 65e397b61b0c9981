/**
 * The learner's parity cases (src/parity/learn_cases.ts) on the CUDA twins themselves: each
 * dispatch runs `cuda/<name>.cu` on the CPU fiber emulator (test/unit/learn-device-cuda), so the
 * CUDA sources are executed and checked against the TS learner on a machine without a GPU. The
 * whole-PPO-learner cases are left to the CPU, WebGPU and H200 runs (the emulator spends ~30 s on
 * one real-size minibatch step); every kernel they chain is covered here on its own, and the
 * curiosity learner case chains gather, forward, loss, backward and AdamW.
 */
import { describe, expect, it } from 'vitest';
import { learnParityCases } from '../../src/parity/learn_cases.js';
import { describeFailure, runCase } from '../../src/parity/run.js';
import { CudaEmuBackend, emuUnavailable } from './learn-device-cuda/emu_backend.js';

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `learner CUDA twins on the emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const backend = new CudaEmuBackend();
    for (const c of learnParityCases().filter((c) => c.kernel !== 'ppo_learner')) {
      it(c.name, async () => {
        const before = backend.launches;
        const r = await runCase(backend, c);
        expect(r.pass, describeFailure(r)).toBe(true);
        expect(backend.launches).toBeGreaterThan(before);
      });
    }
  },
);
