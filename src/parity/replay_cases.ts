/**
 * Parity cases of the device replay (replay_insert, per_sample) through DeviceReplay, against the
 * TS references src/learn/replay.ts and src/learn/per.ts: the ring and tree after inserts that wrap
 * and overflow the ring, a sample (indices, gathered rows and actions exact; weights within f32
 * pow ulps), and a priority update with duplicated rows followed by a second sample.
 */
import type { Backend } from '../backend/types.js';
import { createDqnRollout, type DqnRollout } from '../collect/rollout.js';
import { collectorDqnSections, DeviceReplay, type DeviceReplayInit } from '../device/replay.js';
import { DQN_OUTPUT } from '../kernels/collect_dqn.js';
import { createPer, perBeta, perInsert, perSample, perUpdate } from '../learn/per.js';
import { createReplay, insertRollout, REPLAY_F } from '../learn/replay.js';
import { STATE_DIM } from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import type { Outputs, ParityCase } from './cases.js';
import type { Tolerance } from './compare.js';
import { floats, memo, readF32 } from './learn_cases.js';

/** pow in f32 (leaves p^alpha, weights (size P)^-beta) against f64 pow rounded once. */
const POW: Tolerance = { kind: 'close', atol: 1e-6, rtol: 2e-6 };

/** A synthetic collect_dqn launch: states, rewards in [-1, 1), some dones and truncations. */
function syntheticDqnRollout(id: number, n: number, steps: number): DqnRollout {
  const r = createDqnRollout(n, steps);
  const m = n * steps;
  r.states.set(floats(40 + 4 * id, m * STATE_DIM, -2, 2));
  r.nextStates.set(floats(41 + 4 * id, m * STATE_DIM, -2, 2));
  r.rewards.set(floats(42 + 4 * id, m, -1, 1));
  const u = floats(43 + 4 * id, m, 0, 1);
  for (let t = 0; t < m; t++) {
    r.actions[t] = t % 45;
    r.dones[t] = u[t] < 0.1 ? 1 : 0;
    r.truncateds[t] = u[t] > 0.93 ? 1 : 0;
  }
  return r;
}

/** Uploads a rollout in collect_dqn's out_f / out_i layout. */
function uploadCollectorRollout(backend: Backend, r: DqnRollout) {
  const count = r.n * r.steps;
  const sections = collectorDqnSections(count);
  const outF = new Float32Array(DQN_OUTPUT.floatsPerStep * count).fill(Number.NaN);
  const outI = new Int32Array(DQN_OUTPUT.intsPerStep * count).fill(-7);
  outF.set(r.states, sections.states);
  outF.set(r.nextStates, sections.nextStates);
  outF.set(r.rewards, sections.rewards);
  outI.set(r.actions, sections.actions);
  outI.set(r.dones, sections.dones);
  outI.set(r.truncateds, sections.truncateds);
  const f = backend.createBuffer(outF.byteLength, 'dqn.out_f');
  const i = backend.createBuffer(outI.byteLength, 'dqn.out_i');
  backend.upload(f, outF);
  backend.upload(i, outI);
  return { f, i, episodes: r.n, steps: r.steps, sections };
}

interface ChainPlan {
  capacity: number;
  batch: number;
  /** Launches (episodes x steps) inserted before the first sample. */
  launches: [number, number][];
  /** Train step sampled (first step 3 + stepSlot). */
  stepSlot: number;
  /** Also update priorities from TD errors and sample again. */
  update: boolean;
}

/** Inserts, samples and optionally updates + resamples; returns what the device holds. */
export function replayChainCase(p: ChainPlan): ParityCase {
  const init: DeviceReplayInit = {
    capacity: p.capacity,
    batch: p.batch,
    gamma: 0.97,
    nStep: 3,
    alpha: 0.6,
    eps: 1e-6,
    betaStart: 0.4,
    betaEnd: 1,
    betaSteps: 10,
    key: seedToKey(21),
  };
  const firstStep = 3;
  const rollouts = memo(() => p.launches.map(([n, l], k) => syntheticDqnRollout(k, n, l)));
  const td = memo(() => floats(60, p.batch, -3, 3));
  const expected = memo((): Outputs => {
    const rep = createReplay(p.capacity);
    const per = createPer(p.capacity, init.alpha, init.eps);
    for (const r of rollouts()) {
      const { first, count } = insertRollout(rep, r, init.gamma, init.nStep);
      perInsert(per, first, count);
    }
    const rows = new Int32Array(p.batch);
    const weights = new Float32Array(p.batch);
    const draw = (step: number) => {
      const beta = perBeta(init.betaStart, init.betaEnd, step, init.betaSteps);
      perSample(per, rep.size, p.batch, beta, [init.key[0], init.key[1]], step, rows, weights);
    };
    const out: Outputs = { ring: rep.f.slice(), actions: rep.i.slice(), treeAfterInsert: per.tree.slice() };
    draw(firstStep + p.stepSlot);
    if (p.update) {
      perUpdate(per, rows, td(), p.batch);
      out.tree = per.tree.slice();
      out.maxPriority = Float32Array.of(per.maxPriority);
      draw(firstStep + p.stepSlot + 1);
    }
    const batchRows = new Float32Array(p.batch * REPLAY_F);
    const batchActions = new Int32Array(p.batch);
    for (let j = 0; j < p.batch; j++) {
      batchRows.set(rep.f.subarray(rows[j] * REPLAY_F, (rows[j] + 1) * REPLAY_F), j * REPLAY_F);
      batchActions[j] = rep.i[rows[j]];
    }
    return { ...out, rows: rows.slice(), weights: weights.slice(), batchRows, batchActions };
  });
  const sizes = p.launches.map(([n, l]) => `${n}x${l}`).join(' + ');
  return {
    name: `replay_insert + per_sample capacity=${p.capacity} launches ${sizes} batch=${p.batch}${p.update ? ', priority update, resample' : ''}`,
    kernel: p.update ? 'per_sample' : 'replay_insert',
    tolerance: POW,
    expected,
    actual: async (backend) => {
      const replay = new DeviceReplay(backend, init);
      const uploaded = rollouts().map((r) => uploadCollectorRollout(backend, r));
      const tdBuf = backend.createBuffer(4 * p.batch, 'td');
      try {
        backend.upload(tdBuf, td());
        replay.setFirstStep(firstStep);
        for (const r of uploaded) backend.run(replay.insert(r));
        const out: Outputs = {
          ring: await readF32(backend, replay.ringF, 0, p.capacity * REPLAY_F),
          actions: new Int32Array(await backend.download(replay.ringI)),
          treeAfterInsert: await readF32(backend, replay.tree, 0, 2 * replay.leaves),
        };
        backend.run(replay.sample(p.stepSlot));
        if (p.update) {
          backend.run(replay.updatePriorities(tdBuf));
          out.tree = await readF32(backend, replay.tree, 0, 2 * replay.leaves);
          out.maxPriority = await readF32(backend, replay.state, 0, 1);
          backend.run(replay.sample(p.stepSlot + 1));
        }
        const B = p.batch;
        const batchI = new Int32Array(await backend.download(replay.batchI));
        return {
          ...out,
          rows: batchI.slice(B, 2 * B),
          weights: await readF32(backend, replay.batchF, B * REPLAY_F, B),
          batchRows: await readF32(backend, replay.batchF, 0, B * REPLAY_F),
          batchActions: batchI.slice(0, B),
        };
      } finally {
        replay.destroy();
        for (const r of uploaded) {
          backend.destroyBuffer(r.f);
          backend.destroyBuffer(r.i);
        }
        backend.destroyBuffer(tdBuf);
      }
    },
  };
}

export function replayParityCases(): ParityCase[] {
  return [
    // One launch into a larger ring (empty leaves on the right of the tree), batch not a power of 2.
    replayChainCase({ capacity: 50, batch: 24, launches: [[3, 7]], stepSlot: 0, update: false }),
    // Two launches that wrap the ring, the second larger than it (keeps its last rows); 64 samples of
    // 40 rows: the update has duplicate rows (the last wins).
    replayChainCase({
      capacity: 40,
      batch: 64,
      launches: [
        [3, 9],
        [5, 10],
      ],
      stepSlot: 2,
      update: true,
    }),
    // A batch that is not a multiple of 4 from a ring of fewer rows (phase 2 scans its rows four at
    // a time: the last load holds rows past the batch).
    replayChainCase({ capacity: 20, batch: 30, launches: [[2, 10]], stepSlot: 1, update: true }),
    // The default batch from a ring of 3000 rows; the resample (unequal priorities) repeats rows.
    replayChainCase({
      capacity: 3000,
      batch: 512,
      launches: [
        [16, 100],
        [16, 100],
      ],
      stepSlot: 5,
      update: true,
    }),
    // A batch past per_sample's SHARED_ROWS (phase 2 reads the rows from batchI).
    replayChainCase({
      capacity: 3000,
      batch: 2100,
      launches: [
        [16, 100],
        [16, 100],
      ],
      stepSlot: 1,
      update: true,
    }),
  ];
}
