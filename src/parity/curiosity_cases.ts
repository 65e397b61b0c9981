/**
 * Parity cases of the curiosity model's device pieces (curiosity_loss, curiosity_gather, the
 * DeviceCuriosityLearner's AdamW step) against the plain TS references (src/learn/curiosity.ts),
 * split from learn_cases.ts. Browser-safe.
 */
import type { DeviceBuffer } from '../backend/types.js';
import { defaultConfig } from '../config.js';
import { DeviceCuriosityLearner, type DeviceCuriosityRollout } from '../device/curiosity.js';
import { category } from '../env/actions.js';
import { curiosityGatherDispatch } from '../kernels/curiosity_gather.js';
import { curiosityLossDispatch } from '../kernels/curiosity_loss.js';
import type { TypedArray } from '../kernels/reference.js';
import { curiosityTrainStep } from '../learn/curiosity.js';
import { createMlpCache } from '../learn/mlp.js';
import { createAdam } from '../learn/optim.js';
import { shuffleIndex } from '../learn/shuffle.js';
import { initParams } from '../nets/forward.js';
import { CURIOSITY_IN, CURIOSITY_OUT, curiosityLayout, NetId, ppoActorLayout } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import type { ParityCase } from './cases.js';
import { floats, LOSS, memo, readF32, scoped } from './learn_cases.js';

function curiosityCase(batch: number, rows: number): ParityCase {
  const out = 32;
  const data = memo(() => ({ pred: floats(50, batch * out, -1, 1), target: floats(51, batch * out, -1, 1) }));
  return {
    name: `curiosity_loss ${rows} valid rows of ${batch} x ${out}`,
    kernel: 'curiosity_loss',
    tolerance: LOSS,
    expected: memo(() => {
      const { pred, target } = data();
      const n = rows * out;
      const dPred = new Float32Array(batch * out);
      let sum = 0;
      for (let e = 0; e < n; e++) {
        const err = pred[e] - target[e];
        sum += err * err;
        dPred[e] = (2 * err) / n;
      }
      return { dPred, mse: Float32Array.of(n ? sum / n : 0) };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const { pred, target } = data();
        const deltas = make(new Float32Array(batch * out).fill(Number.NaN), 'deltas');
        const stats = make(1, 'stats');
        backend.run([
          curiosityLossDispatch({
            acts: make(pred, 'acts'),
            targets: make(target, 'targets'),
            rowCount: make(Uint32Array.of(rows), 'rowCount'),
            deltas,
            stats,
            batch,
            outDim: out,
            predOff: 0,
            dPredOff: 0,
            statAt: 0,
          }),
        ]);
        return {
          dPred: await readF32(backend, deltas, 0, batch * out),
          mse: await readF32(backend, stats, 0, 1),
        };
      }),
  };
}

// ---- the whole device learner --------------------------------------------------------------

/** A rollout with episode ends: states [count, 54], actions, dones and truncateds (~10% each). */
function curiosityRollout(episodes: number, steps: number) {
  const count = episodes * steps;
  const d = ppoActorLayout().layers[0].in;
  return {
    count,
    steps,
    states: floats(60, count * d, -2, 2),
    actions: Int32Array.from(floats(61, count, 0, 45), Math.floor),
    dones: Int32Array.from(floats(62, count, 0, 1), (x) => (x < 0.1 ? 1 : 0)),
    truncateds: Int32Array.from(floats(63, count, 0, 1), (x) => (x < 0.1 ? 1 : 0)),
  };
}

type CuriosityHost = ReturnType<typeof curiosityRollout>;

/** The CPU engine's batch (src/engine/cpu_ppo.ts trainCuriosity), written out plainly. */
function curiosityBatch(r: CuriosityHost, batch: number, epoch: number, seed: number) {
  const d = ppoActorLayout().layers[0].in;
  const input = new Float32Array(batch * CURIOSITY_IN).fill(Number.NaN);
  const targets = new Float32Array(batch * CURIOSITY_OUT).fill(Number.NaN);
  let rows = 0;
  for (let j = 0; j < r.count && rows < batch; j++) {
    const idx = shuffleIndex(j, r.count, epoch, seed);
    if (r.dones[idx] || r.truncateds[idx] || idx % r.steps === r.steps - 1) continue;
    for (let k = 0; k < CURIOSITY_OUT; k++) {
      input[rows * CURIOSITY_IN + k] = r.states[idx * d + k];
      targets[rows * CURIOSITY_OUT + k] = r.states[(idx + 1) * d + k];
    }
    const cat = category(r.actions[idx]);
    for (let k = 0; k < 3; k++) input[rows * CURIOSITY_IN + CURIOSITY_OUT + k] = k === cat ? 1 : 0;
    rows++;
  }
  return { input, targets, rows };
}

function uploadCuriosityRollout(
  make: (data: TypedArray | number, label: string) => DeviceBuffer,
  r: CuriosityHost,
): DeviceCuriosityRollout {
  const i = new Int32Array(3 * r.count);
  i.set(r.actions);
  i.set(r.dones, r.count);
  i.set(r.truncateds, 2 * r.count);
  return {
    f: make(r.states, 'rollout.f'),
    i: make(i, 'rollout.i'),
    count: r.count,
    steps: r.steps,
    sections: { states: 0, actions: 0, dones: r.count, truncateds: 2 * r.count },
  };
}

function curiosityGatherCase(episodes: number, steps: number, batch: number): ParityCase {
  const seed = 13;
  const epoch = 40;
  const host = memo(() => curiosityRollout(episodes, steps));
  return {
    name: `curiosity_gather ${episodes} x ${steps} rows into a batch of ${batch} (shuffled, episode ends skipped)`,
    kernel: 'curiosity_gather',
    tolerance: { kind: 'exact' },
    expected: memo(() => {
      const { input, targets, rows } = curiosityBatch(host(), batch, epoch, seed);
      return { input, targets, rows: Uint32Array.of(rows) };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const r = uploadCuriosityRollout(make, host());
        const acts = make(new Float32Array(batch * CURIOSITY_IN).fill(Number.NaN), 'acts');
        const targets = make(new Float32Array(batch * CURIOSITY_OUT).fill(Number.NaN), 'targets');
        const sched = make(Uint32Array.of(0xdead, 0, 0), 'sched');
        backend.run([
          curiosityGatherDispatch(
            {
              rolloutF: r.f,
              rolloutI: r.i,
              acts,
              targets,
              sched,
              sections: r.sections,
              count: r.count,
              steps: r.steps,
              batch,
              stateDim: ppoActorLayout().layers[0].in,
              inDim: CURIOSITY_IN,
              outDim: CURIOSITY_OUT,
              key: seedToKey(seed),
            },
            epoch,
          ),
        ]);
        return {
          input: await readF32(backend, acts, 0, batch * CURIOSITY_IN),
          targets: await readF32(backend, targets, 0, batch * CURIOSITY_OUT),
          rows: new Uint32Array(await backend.download(sched, 0, 4)),
        };
      }),
  };
}

/** DeviceCuriosityLearner.train against the CPU engine's batch + curiosityTrainStep (AdamW). */
function curiosityLearnerCase(episodes: number, steps: number, batch: number): ParityCase {
  const seed = 13;
  const epoch = 40;
  const env = defaultConfig.env;
  const layout = curiosityLayout();
  const host = memo(() => curiosityRollout(episodes, steps));
  const init = memo(() => initParams(layout, NetId.Curiosity, seed));
  return {
    name: `curiosity learner ${episodes} x ${steps}, batch ${batch}: gather, MSE, backward, AdamW (two steps)`,
    kernel: 'curiosity_learner',
    // AdamW at lr 1e-3: near-zero gradients may move a param by a fraction of lr differently.
    tolerance: { kind: 'close', atol: 3e-5, rtol: 1e-4 },
    expected: memo(() => {
      const params = init().slice();
      const adam = createAdam(layout.size);
      const cache = createMlpCache(layout, batch);
      const grad = new Float32Array(layout.size);
      const dPred = new Float32Array(batch * CURIOSITY_OUT);
      const mse = [epoch, epoch + 10].map((e) => {
        const { input, targets, rows } = curiosityBatch(host(), batch, e, seed);
        cache.acts[0].set(input.subarray(0, rows * CURIOSITY_IN));
        return curiosityTrainStep(layout, params, adam, cache, targets, rows, grad, dPred, {
          lr: env.curiosityLr,
          weightDecay: env.curiosityWeightDecay,
        });
      });
      return { params, mse: Float32Array.from(mse) };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const r = uploadCuriosityRollout(make, host());
        const dev = new DeviceCuriosityLearner({
          backend,
          layout,
          params: init(),
          batch,
          lr: env.curiosityLr,
          weightDecay: env.curiosityWeightDecay,
          seed,
          stateDim: ppoActorLayout().layers[0].in,
        });
        try {
          const mse = [await dev.train(r, epoch), await dev.train(r, epoch + 10)];
          return { params: await dev.readParams(), mse: Float32Array.from(mse) };
        } finally {
          dev.destroy();
        }
      }),
  };
}

/** The curiosity cases, in a stable order. */
export function curiosityParityCases(): ParityCase[] {
  return [
    curiosityCase(40, 37),
    curiosityCase(8, 0),
    curiosityGatherCase(4, 30, 50),
    curiosityGatherCase(2, 10, 64),
    curiosityLearnerCase(4, 30, 48),
  ];
}
