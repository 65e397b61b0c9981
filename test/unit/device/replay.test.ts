/**
 * The device replay (src/device/replay.ts: replay_insert, per_sample) against the TS
 * references replay.ts and per.ts: the parity cases on the CPU backend (the kernels' TS
 * references) and the capacity checks; the CUDA twins run the same cases as the parity suite's
 * `emu` backend (test/parity/kernels.test.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import { CpuBackend, createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { cloneDefaults, SPEC_REWARD_TERMS } from '../../../src/config.js';
import { DqnDeviceCollector } from '../../../src/device/collect.js';
import { collectorDqnRollout, DeviceReplay, type DeviceReplayInit } from '../../../src/device/replay.js';
import { createPer, perInsert } from '../../../src/learn/per.js';
import { createReplay, insertRollout } from '../../../src/learn/replay.js';
import { initParams } from '../../../src/nets/forward.js';
import { curiosityLayout, duelingLayout, NetId } from '../../../src/nets/layout.js';
import { replayParityCases } from '../../../src/parity/replay_cases.js';
import { describeFailure, runCase } from '../../../src/parity/run.js';
import { randomMarket } from '../env/fixtures.js';

const init: DeviceReplayInit = {
  capacity: 100,
  batch: 8,
  gamma: 0.99,
  nStep: 3,
  alpha: 0.6,
  eps: 1e-6,
  betaStart: 0.4,
  betaEnd: 1,
  betaSteps: 10,
  key: [1, 0],
};

describe('device replay on the CPU backend', () => {
  const backend = new CpuBackend();
  for (const c of replayParityCases()) {
    it(c.name, async () => {
      const r = await runCase(backend, c);
      expect(r.pass, describeFailure(r)).toBe(true);
    });
  }

  it('refuses a ring larger than the device storage buffers or memory, and bad sizes', () => {
    const limited = (limits: Record<string, number>): Backend =>
      Object.assign(Object.create(backend), { info: { ...backend.info, limits } });
    expect(
      () => new DeviceReplay(limited({ maxStorageBufferBindingSize: 2 ** 27 }), { ...init, capacity: 1e6 }),
    ).toThrow(
      /replayCapacity 1000000: the replay ring takes 440000000 bytes, over this device's largest storage buffer/,
    );
    expect(() => new DeviceReplay(limited({ freeMemoryMiB: 100 }), { ...init, capacity: 1e6 })).toThrow(
      /replay \+ PER tree take 0\.42 GiB, over 80% of the device's 0\.1 GiB free; lower dqn.replayCapacity/,
    );
    expect(() => new DeviceReplay(backend, { ...init, capacity: 0 })).toThrow(/replayCapacity 0 must be/);
    expect(() => new DeviceReplay(backend, { ...init, nStep: 0 })).toThrow(/nStep 0 must be/);
    expect(() => new DeviceReplay(backend, init).sample(0)).toThrow(/empty replay/);
  });
});

describe('device replay fed by the DQN collector', () => {
  it('inserts collect_dqn output buffers as replay.ts inserts the read-back rollout (two launches, wrap)', async () => {
    const cfg = cloneDefaults();
    Object.assign(cfg.env, SPEC_REWARD_TERMS);
    cfg.rollout.episodes = 3;
    cfg.rollout.steps = 9;
    cfg.env.episodeBars = 5;
    cfg.train.seed = 5;
    const backend = createCpuBackend();
    const layout = duelingLayout('plain');
    const c = new DqnDeviceCollector({
      backend,
      market: randomMarket(600, 4),
      split: { start: 150, end: 550 },
      cfg,
      algo: 'dqn',
    });
    c.setWeights({
      online: initParams(layout, NetId.QOnline, 5),
      curiosity: initParams(curiosityLayout(), NetId.Curiosity, 5),
    });
    const capacity = 40;
    const replay = new DeviceReplay(backend, { ...init, capacity });
    const ref = createReplay(capacity);
    const per = createPer(capacity, init.alpha, init.eps);
    let ends = 0;
    for (const eps of [0.5, 0.3]) {
      c.launch(eps);
      const out = collectorDqnRollout(c.deviceBuffers[8], c.deviceBuffers[9], 3, 9);
      backend.run(replay.insert(out));
      const r = await c.readDqn();
      ends += r.dones.reduce((a, b) => a + b, 0) + r.truncateds.reduce((a, b) => a + b, 0);
      const { first, count } = insertRollout(ref, r, init.gamma, init.nStep);
      perInsert(per, first, count);
    }
    expect(ends).toBeGreaterThan(0);
    expect([replay.head, replay.size]).toEqual([ref.head, ref.size]);
    expect(new Float32Array(await backend.download(replay.ringF))).toEqual(ref.f);
    expect(new Int32Array(await backend.download(replay.ringI))).toEqual(ref.i);
    expect(new Float32Array(await backend.download(replay.tree))).toEqual(per.tree);
    // No device allocation after construction: a sample and a priority update create no buffer.
    const td = backend.createBuffer(4 * init.batch, 'td');
    const created = vi.spyOn(backend, 'createBuffer');
    backend.run([...replay.sample(0), ...replay.updatePriorities(td)]);
    expect(created).not.toHaveBeenCalled();
  });
});
