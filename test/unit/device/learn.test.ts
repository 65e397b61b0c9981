/**
 * DevicePpoLearner: one submission per update (15 launches per minibatch step), CUDA-style graph
 * capture once and replay per update, bit-for-bit determinism per backend, Adam step count and
 * shuffle epochs carried across updates (against ppoUpdateReference), snapshot round trips, the
 * collector's buffer mapping and user-facing errors. Small networks keep it fast; the parity suite
 * covers the real actor and critic.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend, createCpuBackend } from '../../../src/backend/cpu/index.js';
import { kernelSource } from '../../../src/backend/cuda/sources.js';
import { createBackend } from '../../../src/backend/index.js';
import { type Backend, BackendUnavailableError, type Dispatch } from '../../../src/backend/types.js';
import { defaultConfig, type PpoConfig } from '../../../src/config.js';
import { DeviceCuriosityLearner, type DeviceCuriosityRollout } from '../../../src/device/curiosity.js';
import { DevicePpoLearner, type DevicePpoRollout } from '../../../src/device/learn.js';
import { collectorRollout, syntheticPpoRollout, uploadPpoRollout } from '../../../src/device/rollout.js';
import { PPO_OUTPUT } from '../../../src/kernels/collect_ppo.js';
import { createPpoLearner, ppoUpdateReference } from '../../../src/learn/ppo_update.js';
import { initParams } from '../../../src/nets/forward.js';
import { buildLayout, curiosityLayout, NetId } from '../../../src/nets/layout.js';

const STATE = 6;
const ACTIONS = 5;
const actorLayout = buildLayout('small_actor', [
  { name: 'a0', in: STATE, out: 8, act: 'relu' },
  { name: 'a1', in: 8, out: ACTIONS, act: 'none' },
]);
const criticLayout = buildLayout('small_critic', [
  { name: 'c0', in: STATE, out: 12, act: 'relu' },
  { name: 'c1', in: 12, out: 7, act: 'relu' },
  { name: 'c2', in: 7, out: 1, act: 'none' },
]);
const SEED = 4;
const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 10, updateEpochs: 3 };
const COUNT = 34; // 3 minibatches per epoch, 4 samples sit out each epoch

const init = () => ({
  actor: initParams(actorLayout, NetId.Actor, SEED),
  critic: initParams(criticLayout, NetId.Critic, SEED),
});
const hostRollout = () => syntheticPpoRollout(COUNT, STATE, ACTIONS, 2);

function learner(backend: Backend, over: Partial<ConstructorParameters<typeof DevicePpoLearner>[0]> = {}) {
  return new DevicePpoLearner({ backend, actorLayout, criticLayout, ...init(), cfg, seed: SEED, ...over });
}

/** A CPU backend that records its submissions and readbacks. */
class CountingBackend extends CpuBackend {
  runs: number[] = [];
  downloads = 0;
  override run(dispatches: Dispatch[]): void {
    this.runs.push(dispatches.length);
    super.run(dispatches);
  }
  override download(...args: Parameters<CpuBackend['download']>) {
    this.downloads++;
    return super.download(...args);
  }
}

/** ... that also captures like the CUDA backend: dispatches frozen once, replayed as a whole. */
class RecordingBackend extends CountingBackend {
  captures = 0;
  replays = 0;
  capture(dispatches: Dispatch[]) {
    this.captures++;
    const frozen = dispatches.map((d) => ({ ...d, uniforms: { ...d.uniforms } }));
    return {
      replay: () => {
        this.replays++;
        CpuBackend.prototype.run.call(this, frozen);
      },
      destroy: () => {},
    };
  }
}

const backends: Backend[] = [];
afterEach(() => {
  for (const b of backends.splice(0)) b.destroy();
});

describe('DevicePpoLearner', () => {
  it('runs an update as one submission per epoch of 1 + stages + 1 + stages + 1 launches per step, one readback', async () => {
    const backend = new CountingBackend();
    backends.push(backend);
    const dev = learner(backend);
    const r = uploadPpoRollout(backend, hostRollout(), STATE);
    backend.runs = [];
    backend.downloads = 0;
    const stats = await dev.update(r, 0);
    const perEpoch = Math.floor(COUNT / cfg.minibatch);
    const steps = cfg.updateEpochs * perEpoch;
    // Critic depth 3: gather, 3 forward stages, loss, 3 backward stages, adam.
    expect(backend.runs).toEqual(Array(cfg.updateEpochs).fill(perEpoch * (1 + 3 + 1 + 3 + 1)));
    expect(backend.downloads).toBe(1);
    expect(stats.minibatches).toBe(steps);
  });

  it('captures an update once (a graph per epoch) and replays it for later updates, same results as running it', async () => {
    const graphed = new RecordingBackend();
    const plain = createCpuBackend();
    backends.push(graphed, plain);
    const a = learner(graphed);
    const b = learner(plain, { graphs: false });
    const ra = uploadPpoRollout(graphed, hostRollout(), STATE);
    const rb = uploadPpoRollout(plain, hostRollout(), STATE);
    for (let u = 0; u < 3; u++) {
      const sa = await a.update({ ...ra, sections: { ...ra.sections } }, u);
      const sb = await b.update(rb, u);
      expect(sa).toEqual(sb);
    }
    expect(graphed.captures).toBe(cfg.updateEpochs);
    expect(graphed.replays).toBe(3 * cfg.updateEpochs);
    expect(graphed.runs).toEqual([]);
    expect(await a.readParams()).toEqual(await b.readParams());
    // Another rollout buffer: captured again.
    const other = uploadPpoRollout(graphed, hostRollout(), STATE);
    await a.update(other, 3);
    expect(graphed.captures).toBe(2 * cfg.updateEpochs);
  });

  it('continues Adam and the shuffle epochs across updates like ppoUpdateReference', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const dev = learner(backend);
    const r = uploadPpoRollout(backend, hostRollout(), STATE);
    const { actor, critic } = init();
    const ref = createPpoLearner(actorLayout, actor, criticLayout, critic);
    for (const u of [5, 6]) {
      const want = ppoUpdateReference(ref, hostRollout(), cfg, SEED, u);
      const got = await dev.update(r, u);
      for (const k of Object.keys(want) as (keyof typeof want)[]) expect(got[k]).toBeCloseTo(want[k], 5);
    }
    const p = await dev.readParams();
    const o = await dev.readOptim();
    for (const [gotArr, wantArr] of [
      [p.actor, ref.actor],
      [p.critic, ref.critic],
      [o.actor.m, ref.actorAdam.m],
      [o.critic.v, ref.criticAdam.v],
    ]) {
      let worst = 0;
      gotArr.forEach((x, k) => {
        worst = Math.max(worst, Math.abs(x - wantArr[k]));
      });
      expect(worst).toBeLessThan(1e-6);
    }
    expect(o.actor.step).toBe(ref.actorAdam.step);
    expect(o.critic.step).toBe(ref.criticAdam.step);
  });

  it('resumes bit for bit from its params and Adam state', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const r = uploadPpoRollout(backend, hostRollout(), STATE);
    const first = learner(backend);
    await first.update(r, 0);
    const params = await first.readParams();
    const optim = await first.readOptim();
    const resumed = learner(backend, { actor: params.actor, critic: params.critic });
    resumed.writeOptim(optim);
    const a = await first.update(r, 1);
    const b = await resumed.update(r, 1);
    expect(b).toEqual(a);
    expect(await resumed.readParams()).toEqual(await first.readParams());
  });

  it('is deterministic per backend: two runs give identical bits (CPU, and WebGPU where present)', async (ctx) => {
    const kinds: ('cpu' | 'webgpu')[] = ['cpu', 'webgpu'];
    for (const kind of kinds) {
      let backend: Backend;
      try {
        backend = await createBackend(kind);
      } catch (err) {
        if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
          ctx.annotate(`${kind} skipped: ${err.message}`);
          continue;
        }
        throw err;
      }
      backends.push(backend);
      const runOnce = async () => {
        const dev = learner(backend);
        const r = uploadPpoRollout(backend, hostRollout(), STATE);
        const s = await dev.update(r, 2);
        const p = await dev.readParams();
        dev.destroy();
        return { s, p };
      };
      const x = await runOnce();
      const y = await runOnce();
      expect(y.s, kind).toEqual(x.s);
      expect(Buffer.from(y.p.critic.buffer).equals(Buffer.from(x.p.critic.buffer)), kind).toBe(true);
      expect(Buffer.from(y.p.actor.buffer).equals(Buffer.from(x.p.actor.buffer)), kind).toBe(true);
    }
  });

  it('copies its params into a collector-style nets buffer on the device', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const dev = learner(backend);
    const nets = backend.createBuffer(4 * (actorLayout.size + criticLayout.size + 3), 'nets');
    dev.copyParamsTo(nets);
    const got = new Float32Array(await backend.download(nets));
    const { actor, critic } = init();
    expect(Array.from(got.subarray(0, actor.length))).toEqual(Array.from(actor));
    expect(Array.from(got.subarray(actor.length, actor.length + critic.length))).toEqual(Array.from(critic));
  });

  it('launches the update with PDL by default, only kernels whose CUDA source waits first; pdl: false launches plainly', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const run = async (pdl: boolean | undefined) => {
      const dev = learner(backend, pdl === undefined ? {} : { pdl });
      const r = uploadPpoRollout(backend, hostRollout(), STATE);
      const flagged = dev
        .updateDispatches(r)
        .filter((d) => d.kernel.pdl)
        .map((d) => d.kernel.name);
      const s = await dev.update(r, 0);
      const p = await dev.readParams();
      dev.destroy();
      return { flagged: new Set(flagged), s, p };
    };
    const on = await run(undefined);
    expect([...on.flagged].sort()).toEqual([
      'adam_step',
      'mlp_backward',
      'mlp_forward',
      'ppo_gather',
      'ppo_loss',
    ]);
    // A PDL launch may start before the previous kernel ends: its first statement must be the wait,
    // except ppo_gather's, which first loads what no launch of an update writes (the rollout, the
    // schedule) and stores nothing before its wait.
    for (const name of on.flagged) {
      const src = kernelSource(name).source;
      const body = src.slice(src.indexOf(`${name}(KERNEL_ARGS) {`));
      if (name === 'ppo_gather') {
        const before = body.slice(0, body.indexOf('LEARN_GRID_DEP_WAIT();'));
        expect(before.length).toBeGreaterThan(0);
        expect(before).not.toMatch(/\b(acts|mb)\[[^\]]*\]\s*=/);
        expect(before).not.toMatch(/\b(acts|mb)\b\s*\[/);
        continue;
      }
      expect(body.split('\n')[1].trim(), name).toMatch(/^LEARN_GRID_DEP_WAIT\(\);/);
    }
    // 'early' adds its trigger constant on CUDA only: WGSL would reject an unknown override.
    const early = learner(backend, { pdl: 'early' });
    const earlyKernels = early
      .updateDispatches(uploadPpoRollout(backend, hostRollout(), STATE))
      .map((d) => d.kernel);
    expect(new Set(earlyKernels.filter((k) => k.pdl).map((k) => k.name))).toEqual(on.flagged);
    expect(earlyKernels.some((k) => k.constants?.LEARN_PDL_TRIGGER !== undefined)).toBe(false);
    early.destroy();
    const off = await run(false);
    expect(off.flagged.size).toBe(0);
    expect(off.s).toEqual(on.s);
    expect(Buffer.from(off.p.actor.buffer).equals(Buffer.from(on.p.actor.buffer))).toBe(true);
  });

  it("reads collect_ppo's output sections where the collector writes them", () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const f = backend.createBuffer(4, 'out_f');
    const i = backend.createBuffer(4, 'out_i');
    const r: DevicePpoRollout = collectorRollout(f, i, 1000);
    const at = (name: string) => PPO_OUTPUT.sections.find((s) => s.name === name)!.offset * 1000;
    expect(r.sections).toEqual({
      states: at('states'),
      logProbs: at('logProbs'),
      advantages: at('advantages'),
      returns: at('returns'),
      actions: at('actions'),
    });
    expect(r.count).toBe(1000);
  });

  it('refuses what it cannot run with one clear line', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const dev = learner(backend);
    const small = uploadPpoRollout(backend, syntheticPpoRollout(9, STATE, ACTIONS), STATE);
    await expect(dev.update(small, 0)).rejects.toThrow(
      'ppo update: 9 samples cannot fill one minibatch of 10',
    );
    expect(() => dev.writeParams(new Float32Array(3), init().critic)).toThrow(
      `device ppo learner: actor has 3 floats, the layout needs ${actorLayout.size}`,
    );
    const tanhOut = buildLayout('bad', [{ name: 'x', in: STATE, out: 1, act: 'relu' }]);
    expect(
      () =>
        new DevicePpoLearner({
          backend,
          actorLayout,
          criticLayout: tanhOut,
          ...init(),
          critic: new Float32Array(tanhOut.size),
          cfg,
          seed: 1,
        }),
    ).toThrow('the actor and critic output layers must be linear');
  });
});

describe('DeviceCuriosityLearner', () => {
  const layout = curiosityLayout();
  const make = (backend: Backend) =>
    new DeviceCuriosityLearner({
      backend,
      layout,
      params: initParams(layout, NetId.Curiosity, SEED),
      batch: 16,
      lr: 1e-3,
      weightDecay: 1e-2,
      seed: SEED,
      stateDim: 54,
    });
  /** Episodes of `steps` bars with states from a ramp, no episode ends. */
  function rollout(backend: Backend, episodes: number, steps: number): DeviceCuriosityRollout {
    const count = episodes * steps;
    const f = backend.createBuffer(4 * count * 54, 'f');
    backend.upload(
      f,
      Float32Array.from({ length: count * 54 }, (_, k) => Math.sin(k)),
    );
    const i = backend.createBuffer(4 * 3 * count, 'i');
    backend.upload(
      i,
      Int32Array.from({ length: count }, (_, k) => k % 45),
    );
    return { f, i, count, steps, sections: { states: 0, actions: 0, dones: count, truncateds: 2 * count } };
  }

  it('takes no step on an empty batch (one-step episodes have no next bar), like the CPU engine', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const dev = make(backend);
    const before = await dev.readParams();
    expect(await dev.train(rollout(backend, 8, 1), 0)).toBe(0);
    expect(dev.step).toBe(0);
    expect(await dev.readParams()).toEqual(before);
    expect((await dev.readOptim()).v.every((x) => x === 0)).toBe(true);
  });

  it('steps AdamW once per call with rows, one submission and one readback', async () => {
    const backend = new CountingBackend();
    backends.push(backend);
    const dev = make(backend);
    const r = rollout(backend, 2, 12);
    const before = await dev.readParams();
    backend.runs = [];
    backend.downloads = 0;
    const mse = await dev.train(r, 3);
    // gather, forward x 2, loss, backward x 2, adam.
    expect(backend.runs).toEqual([7]);
    expect(backend.downloads).toBe(1);
    expect(mse).toBeGreaterThan(0);
    expect(dev.step).toBe(1);
    expect(await dev.readParams()).not.toEqual(before);
    expect(() => dev.writeParams(new Float32Array(2))).toThrow(
      `device curiosity: params has 2 floats, the layout needs ${layout.size}`,
    );
  });
});
