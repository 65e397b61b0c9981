/**
 * The matmul kernels' CUDA twins (mlp_forward, mlp_backward, mlp_chain_forward) on the CPU fiber
 * emulator (test/emu/) on small networks of the PPO networks' shape (several tiles in every
 * dimension, ragged edges, k split between groups), shapes the parity suite does not run; every
 * other learner, curiosity and DQN-family case runs on the emulator as the parity suite's `emu`
 * backend (test/parity/kernels.test.ts). The backend reports itself as the CPU with 16 SMs, so
 * the backward launches split dW.
 * mlp_chain_forward runs as CUDA's staged build (the tail's parameters copied into shared memory,
 * 512 threads) on critics whose tails take each of its paths: ragged widths (scalar reads), the
 * PPO tail's widths 256 -> 128 -> 64 -> 1 at an odd params offset (the copy shifted by 1 float
 * through a shuffle, chunk pairs swapped for odd outputs), aligned weights (no shift, ragged chunk
 * counts per k-group) and the same at 2 and 3 floats past a 16-byte boundary, a 189 KiB tail (two
 * batches of loads per thread), and the PPO actor and critic themselves (the tail at its real odd
 * offset); with 16 and 2 rows per block besides the default 8; and as the 256-thread build on a
 * tail too large for shared memory (the fallback). Each case checks which build ran.
 */
import { describe, expect, it } from 'vitest';
import type { Dispatch, KernelSpec } from '../../../src/backend/types.js';
import { buildLayout } from '../../../src/nets/layout.js';
import { mlpParityCase } from '../../../src/parity/learn_cases.js';
import { describeFailure, runCase } from '../../../src/parity/run.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `matmul CUDA twins on the emulator, small networks${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const backend = new CudaEmuBackend();
    // The kernels each case launched (which build of mlp_chain_forward ran).
    const ran: KernelSpec[] = [];
    const run = backend.run.bind(backend);
    backend.run = (dispatches: Dispatch[]) => {
      ran.push(...dispatches.map((d) => d.kernel));
      run(dispatches);
    };
    const actor = buildLayout('small_actor', [
      { name: 'a0', in: 54, out: 40, act: 'relu' },
      { name: 'a1', in: 40, out: 45, act: 'none' },
    ]);
    const critic = buildLayout('small_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 70, act: 'leaky' },
      { name: 'c2', in: 70, out: 1, act: 'none' },
    ]);
    // Critics with a chain tail after the actor's 2 layers (layers 2.. of each run as one launch).
    const raggedCritic = buildLayout('ragged_tail_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 70, act: 'leaky' },
      { name: 'c2', in: 70, out: 37, act: 'relu' },
      { name: 'c3', in: 37, out: 1, act: 'none' },
    ]);
    const ppoTailCritic = buildLayout('ppo_tail_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 256, act: 'relu' },
      { name: 'c2', in: 256, out: 128, act: 'relu' },
      { name: 'c3', in: 128, out: 64, act: 'relu' },
      { name: 'c4', in: 64, out: 1, act: 'none' },
    ]);
    // 4,004 actor floats: the critic's tail weights start at multiples of 4.
    const alignedActor = buildLayout('aligned_actor', [
      { name: 'a0', in: 54, out: 40, act: 'relu' },
      { name: 'a1', in: 40, out: 44, act: 'none' },
    ]);
    const alignedCritic = buildLayout('aligned_tail_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 72, act: 'relu' },
      { name: 'c2', in: 72, out: 40, act: 'leaky' },
      { name: 'c3', in: 40, out: 1, act: 'none' },
    ]);
    // 4,086 and 4,127 actor floats: the aligned critic's tail at 2 and 3 floats past a 16-byte
    // boundary (the staged build's WSHIFT 2 and 3; the small actor gives the PPO tail WSHIFT 1).
    const shiftedActor = (out: number) =>
      buildLayout(`actor_${out}`, [
        { name: 'a0', in: 54, out: 40, act: 'relu' },
        { name: 'a1', in: 40, out, act: 'none' },
      ]);
    // 48,445 tail floats (189 KiB): the staged build's copy takes two batches of loads per thread.
    const bigTailCritic = buildLayout('big_tail_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 256, act: 'relu' },
      { name: 'c2', in: 256, out: 180, act: 'relu' },
      { name: 'c3', in: 180, out: 12, act: 'leaky' },
      { name: 'c4', in: 12, out: 1, act: 'none' },
    ]);
    // 131,841 tail floats (515 KiB): more than a block's shared memory, so the 256-thread build.
    const wideCritic = buildLayout('wide_tail_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 256, act: 'relu' },
      { name: 'c2', in: 256, out: 256, act: 'leaky' },
      { name: 'c3', in: 256, out: 256, act: 'relu' },
      { name: 'c4', in: 256, out: 1, act: 'none' },
    ]);
    const cases = [
      mlpParityCase('mlp_forward', 70, [actor, critic]),
      mlpParityCase('mlp_backward', 70, [actor, critic]),
      mlpParityCase('mlp_chain_forward', 70, [actor, raggedCritic]),
      mlpParityCase('mlp_chain_forward', 70, [actor, ppoTailCritic]),
      mlpParityCase('mlp_chain_forward', 70, [actor, ppoTailCritic], 16),
      mlpParityCase('mlp_chain_forward', 70, [actor, raggedCritic], 2),
      mlpParityCase('mlp_chain_forward', 70, [alignedActor, alignedCritic]),
      mlpParityCase('mlp_chain_forward', 70, [shiftedActor(46), alignedCritic]),
      mlpParityCase('mlp_chain_forward', 70, [shiftedActor(47), alignedCritic]),
      mlpParityCase('mlp_chain_forward', 70, [actor, bigTailCritic]),
      // The PPO actor and critic themselves: the critic's tail at its real params offset.
      mlpParityCase('mlp_chain_forward', 24),
      mlpParityCase('mlp_chain_forward', 70, [actor, wideCritic]),
    ];
    for (const c of cases) {
      it(c.name, async () => {
        const before = backend.launches;
        ran.length = 0;
        const r = await runCase(backend, c);
        expect(r.pass, describeFailure(r)).toBe(true);
        expect(backend.launches).toBeGreaterThan(before);
        if (c.kernel === 'mlp_chain_forward') {
          const chain = ran.filter((k) => k.name === 'mlp_chain_forward');
          const staged = !c.name.includes('wide_tail');
          expect(chain.length).toBeGreaterThan(0);
          for (const k of chain) {
            expect([k.constants?.STAGED ?? 0, k.workgroupSize[0]]).toEqual(staged ? [1, 512] : [0, 256]);
          }
          const shift = /actor_4([67])/.exec(c.name);
          if (shift) expect(chain[0].constants?.WSHIFT).toBe(Number(shift[1]) - 4);
        }
      });
    }
  },
);
