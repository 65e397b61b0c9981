/**
 * DeviceDqnLearner and the DQN loss kernels refuse what they cannot run, with one clear error
 * each (their numerics are the parity cases of src/parity/dqn_cases.ts).
 */
import { describe, expect, it } from 'vitest';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import { kernelSource } from '../../../src/backend/cuda/sources.js';
import { defaultConfig } from '../../../src/config.js';
import { DeviceDqnLearner } from '../../../src/device/dqn.js';
import { dqnLossDispatch } from '../../../src/kernels/dqn_loss.js';
import { iqnLossDispatch } from '../../../src/kernels/iqn_loss.js';
import { duelingLayout } from '../../../src/nets/layout.js';

describe('device DQN learner input checks', () => {
  const backend = new CpuBackend();
  const buf = backend.createBuffer(4, 'x');
  const cfg = { ...defaultConfig.dqn, batch: 4 };

  it('rejects IQN without a key or past 64 taus, a wrong params count and a layout of another head', () => {
    const plain = duelingLayout('plain');
    const iqn = duelingLayout('iqn');
    const params = new Float32Array(iqn.size);
    const key = [1, 2] as const;
    expect(() => new DeviceDqnLearner({ backend, head: 'iqn', cfg, layout: iqn, params })).toThrow(
      /IQN needs the Philox key/,
    );
    expect(
      () =>
        new DeviceDqnLearner({ backend, head: 'iqn', cfg: { ...cfg, iqnTau: 65 }, layout: iqn, params, key }),
    ).toThrow(/dqn\.iqnTau 65 must be 1\.\.64/);
    expect(
      () =>
        new DeviceDqnLearner({
          backend,
          head: 'iqn',
          cfg: { ...cfg, iqnEmbed: 32 },
          layout: iqn,
          params,
          key,
        }),
    ).toThrow(/tau_embed is not 32 -> 256/);
    expect(
      () =>
        new DeviceDqnLearner({
          backend,
          head: 'iqn',
          cfg,
          layout: plain,
          params: new Float32Array(plain.size),
          key,
        }),
    ).toThrow(/not a dueling iqn layout/);
    expect(
      () => new DeviceDqnLearner({ backend, head: 'plain', cfg, layout: plain, params: new Float32Array(3) }),
    ).toThrow(/3 params, the dueling layout needs/);
    expect(
      () =>
        new DeviceDqnLearner({
          backend,
          head: 'c51',
          cfg,
          layout: plain,
          params: new Float32Array(plain.size),
        }),
    ).toThrow(/not a dueling c51 layout with 51 atoms/);
  });

  it('refuses an activation arena past the device binding limit in one line', () => {
    const iqn = duelingLayout('iqn');
    const small = Object.create(backend, {
      info: { value: { ...backend.info, limits: { maxStorageBufferBindingSize: 1 << 24 } } },
    });
    expect(
      () =>
        new DeviceDqnLearner({
          backend: small,
          head: 'iqn',
          cfg: { ...cfg, batch: 64 },
          layout: iqn,
          params: new Float32Array(iqn.size),
          key: [1, 2],
        }),
    ).toThrow(
      /activation arena needs \d+ bytes \(dqn\.batch 64 x 64 taus\), above this device's 16777216; lower dqn\.batch or dqn\.iqnTau/,
    );
  });

  it('the loss kernels reject supports and quantile counts they cannot hold', () => {
    const common = {
      online: buf,
      targetNet: buf,
      rows: buf,
      actions: buf,
      weights: buf,
      dOut: buf,
      td: buf,
      batch: 4,
      qOff: 0,
      nextOff: 0,
      targetOff: 0,
      dOutOff: 0,
    };
    const at = { v: 0, a: 0 };
    const loss = {
      acts: buf,
      targetActs: buf,
      rows: buf,
      actions: buf,
      weights: buf,
      deltas: buf,
      td: buf,
      batch: 4,
      online: at,
      next: at,
      target: at,
      dVOff: 0,
      dAOff: 0,
    };
    expect(() =>
      dqnLossDispatch({ ...loss, head: { kind: 'c51', support: { vMin: -10, vMax: 10, atoms: 65 } } }),
    ).toThrow(/C51 needs 2\.\.64 atoms/);
    expect(() => dqnLossDispatch({ ...loss, head: { kind: 'huber', kappa: 0 } })).toThrow(/kappa 0/);
    expect(() => dqnLossDispatch({ ...loss, batch: 0, head: { kind: 'huber', kappa: 1 } })).toThrow(
      /batch 0/,
    );
    expect(() =>
      iqnLossDispatch({ ...common, taus: buf, nTau: 32, nTarget: 65, kappa: 1, tauOff: 0 }),
    ).toThrow(/65 target quantiles, need 1\.\.64/);
  });
});

describe('device DQN learner launches', () => {
  it('launches every step kernel with PDL by default (each waits for its predecessor first); pdl: false launches plainly', () => {
    const backend = new CpuBackend();
    const cfg = { ...defaultConfig.dqn, batch: 8, iqnTau: 4 };
    const batch = {
      rows: backend.createBuffer(4 * 8 * 128, 'rows'),
      actions: backend.createBuffer(4 * 8, 'actions'),
      weights: backend.createBuffer(4 * 8, 'weights'),
    };
    for (const head of ['plain', 'c51', 'iqn'] as const) {
      const layout = duelingLayout(head, cfg.atoms, cfg.iqnEmbed);
      const step = (pdl?: boolean) => {
        const l = new DeviceDqnLearner({
          backend,
          head,
          cfg,
          layout,
          params: new Float32Array(layout.size),
          key: [1, 0],
          ...(pdl === undefined ? {} : { pdl }),
        });
        const ds = l.stepDispatches(batch);
        l.destroy();
        return ds;
      };
      const on = step();
      expect(
        on.every((d) => d.kernel.pdl === true),
        head,
      ).toBe(true);
      for (const name of new Set(on.map((d) => d.kernel.name))) {
        const src = kernelSource(name).source;
        const body = src.slice(src.indexOf(`${name}(KERNEL_ARGS) {`));
        expect(body.split('\n')[1].trim(), name).toMatch(/^LEARN_GRID_DEP_WAIT\(\);/);
      }
      const off = step(false);
      expect(off.some((d) => d.kernel.pdl)).toBe(false);
      expect(off.map((d) => d.kernel.name)).toEqual(on.map((d) => d.kernel.name));
    }
  });
});
