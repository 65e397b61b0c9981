import { describe, expect, it, vi } from 'vitest';
import { devMain } from '../../../dev/main.js';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { main } from '../../../src/cli/main.js';
import { collectDqn, type DqnNets } from '../../../src/collect/dqn.js';
import { collectPpo } from '../../../src/collect/ppo.js';
import { type Config, cloneDefaults, SPEC_REWARD_TERMS } from '../../../src/config.js';
import { chooseTile, DqnDeviceCollector, PpoDeviceCollector } from '../../../src/device/collect.js';
import { collectFlopsPerStep, stepsThatFit } from '../../../src/device/collect_bench.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import { collectDqnSpec, DQN_OUTPUT, dqnWorkgroupBytes } from '../../../src/kernels/collect_dqn.js';
import { COLLECT_BINDINGS, outputBytes } from '../../../src/kernels/collect_layout.js';
import { collectPpoSpec, PPO_OUTPUT, ppoWorkgroupBytes } from '../../../src/kernels/collect_ppo.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  NetId,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { randomMarket } from '../env/fixtures.js';

const market = randomMarket(600, 4);
const split = { start: 150, end: 550 };
const SEED = 5;

function config(n: number, steps: number): Config {
  const cfg = cloneDefaults();
  Object.assign(cfg.env, SPEC_REWARD_TERMS);
  cfg.rollout.episodes = n;
  cfg.rollout.steps = steps;
  cfg.env.episodeBars = 7;
  cfg.train.seed = SEED;
  return cfg;
}

const curiosity = initParams(curiosityLayout(), NetId.Curiosity, SEED);

/** A backend that reports a WebGPU-like workgroup memory limit (only the limits are read). */
function withWorkgroupBytes(bytes: number): Backend {
  const cpu = createCpuBackend();
  Object.defineProperty(cpu, 'info', {
    value: { ...cpu.info, limits: { maxComputeWorkgroupStorageSize: bytes } },
  });
  return cpu;
}

describe('DqnDeviceCollector', () => {
  it('on the CPU backend, two launches equal the reference collector run twice, state included', async () => {
    const cfg = config(3, 9);
    const layout = duelingLayout('plain');
    const online = initParams(layout, NetId.QOnline, SEED);
    const backend = createCpuBackend();
    const c = new DqnDeviceCollector({ backend, market, split, cfg, algo: 'dqn' });
    c.setWeights({ online, curiosity });
    c.launch(0.4);
    const first = await c.readDqn();
    c.launch(0.2);
    expect(c.stepBase).toBe(18);
    const second = await c.readDqn();
    const env = await c.readEnv();

    const params = envParams(cfg.env);
    const ref = createEnv(market, split, params, 3, SEED);
    const nets: DqnNets = {
      head: 'plain',
      layout,
      online,
      support: { vMin: -10, vMax: 10, atoms: 51 },
      actTaus: 32,
    };
    const cur = { layout: curiosityLayout(), params: curiosity };
    const r1 = collectDqn(ref, market, params, nets, cur, {
      steps: 9,
      epsilon: 0.4,
      stepBase: 0,
    });
    const r2 = collectDqn(ref, market, params, nets, cur, {
      steps: 9,
      epsilon: 0.2,
      stepBase: 9,
    });
    expect(first).toEqual(r1);
    expect(second).toEqual(r2);
    expect(env.f).toEqual(ref.f);
    expect(env.i).toEqual(ref.i);
    expect(env.window).toEqual(ref.window);
    // The launches covered restarts, so persistence was exercised.
    expect(Array.from(r2.truncateds).some((x) => x === 1)).toBe(true);
  });

  it('rejects weights of the wrong size with a message naming the network', () => {
    const c = new DqnDeviceCollector({
      backend: createCpuBackend(),
      market,
      split,
      cfg: config(2, 2),
      algo: 'dqn',
    });
    expect(() => c.setWeights({ online: new Float32Array(10) })).toThrow(/online has 10 floats/);
  });

  it('uploads nothing until weights are given and reads nothing back until asked', () => {
    const backend = createCpuBackend();
    const download = vi.spyOn(backend, 'download');
    const upload = vi.spyOn(backend, 'upload');
    const c = new DqnDeviceCollector({ backend, market, split, cfg: config(2, 3), algo: 'dqn' });
    const uploads = upload.mock.calls.length;
    c.launch(0.1);
    c.launch(0.1);
    expect(download).not.toHaveBeenCalled();
    expect(upload.mock.calls.length).toBe(uploads);
  });
});

describe('PpoDeviceCollector', () => {
  it("refuses a market whose features exceed the device's storage binding, naming the bars that fit", () => {
    // lavapipe's 128 MiB held 658k bars: a 5-year minute file (2.6M bars) stopped at its first
    // dispatch with only the buffer's name; the collector now says what to do before allocating.
    const backend = createCpuBackend();
    Object.defineProperty(backend, 'info', {
      value: { ...backend.info, limits: { maxStorageBufferBindingSize: 100_000 } },
    });
    const create = () => new PpoDeviceCollector({ backend, market, split, cfg: config(2, 11), algo: 'ppo' });
    expect(create).toThrow(
      "the market's 600 bars take 122400 bytes of features, over this device's largest storage buffer " +
        '(100000 bytes: 490 bars); train on fewer bars (a shorter --data file), or another backend (--backend cpu, or cuda)',
    );
  });

  it('on the CPU backend, a launch equals the reference collector (GAE included)', async () => {
    const cfg = config(2, 11);
    const actor = initParams(ppoActorLayout(), NetId.Actor, SEED);
    const critic = initParams(ppoCriticLayout(), NetId.Critic, SEED);
    const c = new PpoDeviceCollector({ backend: createCpuBackend(), market, split, cfg, algo: 'ppo' });
    c.setWeights({ actor, critic, curiosity });
    c.launch();
    const got = await c.readPpo();
    const params = envParams(cfg.env);
    const ref = createEnv(market, split, params, 2, SEED);
    const want = collectPpo(
      ref,
      market,
      params,
      { actorLayout: ppoActorLayout(), actor, criticLayout: ppoCriticLayout(), critic },
      { layout: curiosityLayout(), params: curiosity },
      { steps: 11, stepBase: 0, gamma: 0.99, lambda: 0.95 },
    );
    expect(got).toEqual(want);
  });

  it('curiosity off gives a zero curiosity component', async () => {
    const c = new PpoDeviceCollector({
      backend: createCpuBackend(),
      market,
      split,
      cfg: config(2, 4),
      algo: 'ppo',
      curiosity: false,
    });
    c.setWeights({
      actor: initParams(ppoActorLayout(), NetId.Actor, 1),
      critic: initParams(ppoCriticLayout(), NetId.Critic, 1),
    });
    c.launch();
    const r = await c.readPpo();
    for (let i = 0; i < 8; i++) expect(r.components[i * 5 + 4]).toBe(0);
  });
});

describe('tile shapes', () => {
  it('small N spreads few episodes over each workgroup; large N fills the tile', () => {
    const big = withWorkgroupBytes(48 * 1024);
    expect(chooseTile('dqn', 128, big, 32).tileEpisodes).toBe(1);
    expect(chooseTile('dqn', 65536, big, 32).tileEpisodes).toBe(32);
    expect(chooseTile('ppo', 65536, big, 32).tileEpisodes).toBe(16);
    // Fewer episodes per workgroup leave more threads per episode across the layer's outputs.
    expect(chooseTile('dqn', 128, big, 32).tj).toBe(256);
    expect(chooseTile('dqn', 65536, big, 32).tj).toBe(32);
  });

  it('the chosen shapes fit the workgroup memory they were chosen for', () => {
    for (const bytes of [16 * 1024, 32 * 1024, 48 * 1024]) {
      const backend = withWorkgroupBytes(bytes);
      for (const n of [1, 5, 128, 4096, 65536]) {
        for (const head of ['plain', 'c51', 'iqn'] as const) {
          const algo = head === 'plain' ? 'dqn' : head;
          const c = new DqnDeviceCollector({ backend, market, split, cfg: config(n, 1), algo });
          expect(dqnWorkgroupBytes(c.options)).toBeLessThanOrEqual(bytes);
          c.destroy();
        }
        const p = new PpoDeviceCollector({ backend, market, split, cfg: config(n, 1), algo: 'ppo' });
        expect(ppoWorkgroupBytes(p.options)).toBeLessThanOrEqual(bytes);
        p.destroy();
      }
    }
  });

  it('a device with too little workgroup memory gets one clear error', () => {
    expect(
      () =>
        new PpoDeviceCollector({
          backend: withWorkgroupBytes(4096),
          market,
          split,
          cfg: config(4, 1),
          algo: 'ppo',
        }),
    ).toThrow(/no tile fits this device's 4096 bytes of workgroup memory/);
  });

  it('descriptors reject impossible shapes', () => {
    const base = { atoms: 51, iqnEmbed: 64, actTaus: 32, threads: 256, tj: 32, kt: 8, tauRows: 32 };
    expect(() => collectDqnSpec({ ...base, head: 'c51', variant: 'seed', tileEpisodes: 1 })).toThrow(/seed/);
    expect(() =>
      collectDqnSpec({ ...base, head: 'plain', variant: 'tiled', tileEpisodes: 4, tj: 48 }),
    ).toThrow(/tj 48/);
    expect(() =>
      collectDqnSpec({ ...base, head: 'iqn', variant: 'tiled', tileEpisodes: 1, tauRows: 5 }),
    ).toThrow(/tauRows 5/);
    expect(() => collectPpoSpec({ variant: 'tiled', tileEpisodes: 8, threads: 256, tj: 32, kt: 6 })).toThrow(
      /kt 6/,
    );
  });
});

describe('layout data', () => {
  it('output sections tile out_f and out_i without gaps and name every rollout field', () => {
    for (const layout of [DQN_OUTPUT, PPO_OUTPUT]) {
      let f = 0;
      let i = 0;
      for (const s of layout.sections) {
        if (s.type === 'f32') {
          expect(s.offset).toBe(f);
          f += s.width;
        } else {
          expect(s.offset).toBe(i);
          i += s.width;
        }
      }
      expect([f, i]).toEqual([layout.floatsPerStep, layout.intsPerStep]);
    }
    // 2 states of 54, reward, 5 components; action, done, truncated.
    expect(outputBytes(DQN_OUTPUT, 1, 1)).toEqual({ f: 114 * 4, i: 12 });
  });

  it('both kernels bind ten storage buffers and name every layer offset they read', () => {
    expect(COLLECT_BINDINGS).toHaveLength(10);
    const spec = collectDqnSpec({
      head: 'plain',
      atoms: 51,
      iqnEmbed: 64,
      actTaus: 32,
      variant: 'tiled',
      tileEpisodes: 32,
      threads: 256,
      tj: 32,
      kt: 8,
      tauRows: 32,
    });
    const q = duelingLayout('plain');
    expect(spec.constants?.NET_Q_ADVANTAGE_STREAM_1_W).toBe(q.layers[5].wOffset);
    // The online net and the curiosity model only: the collection runs no target net.
    expect(spec.constants?.NET_T_BASE).toBeUndefined();
    expect(spec.constants?.NET_C_FC2_B).toBe(q.size + curiosityLayout().layers[1].bOffset);
  });
});

describe('bench collect', () => {
  it('counts the model FLOPs of a step from the layouts', () => {
    const cfg = cloneDefaults();
    // 2 x (online 150,784 + curiosity 4,288) multiply-adds.
    expect(collectFlopsPerStep('dqn', cfg)).toBe(2 * (150_784 + 4_288));
    // 2 x (actor 17,984 + critic 363,584 + curiosity 4,288).
    expect(collectFlopsPerStep('ppo', cfg)).toBe(2 * (17_984 + 363_584 + 4_288));
  });

  it('lowers L until the outputs fit one binding', () => {
    expect(stepsThatFit('dqn', 65536, 64, 2 ** 31)).toBe(64);
    expect(stepsThatFit('dqn', 65536, 64, 2 ** 27)).toBe(Math.floor(2 ** 27 / (65536 * 460)));
    expect(stepsThatFit('dqn', 1 << 20, 64, 1000)).toBe(1);
  });

  it('runs what train runs on the CPU backend and prints JSON', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const args = ['--backend', 'cpu', '--episodes', '2,3', '--steps', '2', '--repeats', '1', '--json'];
      expect(await main(['bench', 'collect', '--algo', 'dqn', ...args])).toBe(0);
      const out = JSON.parse(log.mock.calls.map((c) => c.join(' ')).join('\n'));
      // No variant flag: the collector's own choice; precision auto is exact off CUDA.
      expect(out.precision).toBe('exact');
      expect(out.peaks).toBeNull();
      expect(
        out.results.map((r: { variant: string; episodes: number }) => `${r.variant}${r.episodes}`),
      ).toEqual(['tiled2', 'tiled3']);
      for (const r of out.results) expect(r.envStepsPerSec).toBeGreaterThan(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });

  it('refuses the tuning knobs, which the dev harness takes', async () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(await main(['bench', 'collect', '--variant', 'seed', '--backend', 'cpu'])).toBe(1);
      expect(err.mock.calls.join('\n')).toMatch(/unknown option --variant/);
      // The WebGPU f16 engines were retired: f16 is no precision of bench collect.
      expect(
        await main(['bench', 'collect', '--algo', 'dqn', '--precision', 'f16', '--backend', 'cpu']),
      ).toBe(1);
      expect(err.mock.calls.join('\n')).toMatch(/--precision must be one of auto, exact, tf32, got "f16"/);
      expect(await main(['bench', 'collect', '--precision', 'tf32', '--backend', 'cpu'])).toBe(1);
      expect(err.mock.calls.join('\n')).toMatch(
        /--precision tf32 runs on CUDA tensor cores, and the backend is cpu/,
      );
    } finally {
      err.mockRestore();
    }
  });

  it('dev harness: runs on the CPU backend and prints JSON with both variants', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const code = await devMain([
        'collect',
        '--algo',
        'dqn',
        '--backend',
        'cpu',
        '--episodes',
        '2,3',
        '--steps',
        '2',
        '--repeats',
        '1',
        '--json',
      ]);
      expect(code).toBe(0);
      const out = JSON.parse(log.mock.calls.map((c) => c.join(' ')).join('\n'));
      expect(
        out.results.map((r: { variant: string; episodes: number }) => `${r.variant}${r.episodes}`),
      ).toEqual(['tiled2', 'seed2', 'tiled3', 'seed3']);
      for (const r of out.results) expect(r.envStepsPerSec).toBeGreaterThan(0);
    } finally {
      log.mockRestore();
      err.mockRestore();
    }
  });

  it('dev harness: rejects a seed variant of a head it does not have', async () => {
    const err = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      expect(await devMain(['collect', '--algo', 'c51', '--variant', 'seed', '--backend', 'cpu'])).toBe(1);
      expect(err.mock.calls.join('\n')).toMatch(/seed variant runs the plain dqn head and ppo only/);
    } finally {
      err.mockRestore();
    }
  });
});
