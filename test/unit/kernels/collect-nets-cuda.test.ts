/**
 * The CUDA tile engine and collection networks (cuda/mlp_tile.cuh, cuda/collect_nets.cuh), run on
 * the CPU emulator, against the TS reference forwards of src/nets/forward.ts: bit-exact in the exact
 * mode (up to exp/cos for C51/IQN), within TF32 rounding in the tensor-core mode, which also checks
 * the mma.sync fragment layout and the k permutation of the loads.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { forwardC51, forwardDueling, forwardIqn, forwardMlp, initParams } from '../../../src/nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  type NetLayout,
  NUM_ACTIONS,
  ppoActorLayout,
  ppoCriticLayout,
  STATE_DIM,
} from '../../../src/nets/layout.js';
import { philox4x32, u32ToUnitFloat } from '../../../src/rng/philox.js';
import { Stream } from '../../../src/rng/streams.js';
import { buildEmu, compare, emuUnavailable, runEmu } from '../../emu/emu.js';

const ROWS = 20;
const C51_ROWS = 5;
const IQN_ROWS = 3;
const IQN_K = 8;
const support = { vMin: -10, vMax: 10, atoms: 51 };

/** n floats uniform in [-2, 2) from Philox's test stream. */
function inputs(n: number, salt: number, lo = -2, hi = 2): Float32Array {
  const out = new Float32Array(n);
  const w = new Uint32Array(4);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(Stream.Test, salt, i >> 2, 0, 7, 9, w);
    out[i] = Math.fround(lo + (hi - lo) * u32ToUnitFloat(w[i & 3]));
  }
  return out;
}

interface Case {
  net: string;
  layout: NetLayout;
  rows: number;
  inDim: number;
  outDim: number;
  /** TS reference output of one row. */
  ref: (params: Float32Array, x: Float32Array, taus: Float32Array, out: Float32Array) => void;
  /** Exact mode: 0 = bit-exact; else the tolerance exp/cos need. */
  exactTol: number;
}

const cases: Case[] = [
  {
    net: 'plain',
    layout: duelingLayout('plain'),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) => forwardDueling(duelingLayout('plain'), p, x, o),
    exactTol: 0,
  },
  {
    // The stream hidden layers out of place (the 64-episode plan), where the TF32 build stores
    // the trunk and advantage hidden layers as TF32 values.
    net: 'plain_hid',
    layout: duelingLayout('plain'),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) => forwardDueling(duelingLayout('plain'), p, x, o),
    exactTol: 0,
  },
  {
    // At 2 mod 4 floats into the buffer (behind a net of 2 mod 4 floats): 8-byte weight pairs, not float4.
    net: 'plain_at2',
    layout: duelingLayout('plain'),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) => forwardDueling(duelingLayout('plain'), p, x, o),
    exactTol: 0,
  },
  {
    // 5 rows: the advantage logits in chunks of 5 actions, recomputed for the softmax.
    net: 'c51',
    layout: duelingLayout('c51'),
    rows: C51_ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) =>
      forwardC51(duelingLayout('c51'), p, x, new Float32Array(NUM_ACTIONS * support.atoms), o, support),
    exactTol: 1e-5,
  },
  {
    // 2 rows: all 45 actions' logits at once, computed once.
    net: 'c51_whole',
    layout: duelingLayout('c51'),
    rows: 2,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) =>
      forwardC51(duelingLayout('c51'), p, x, new Float32Array(NUM_ACTIONS * support.atoms), o, support),
    exactTol: 1e-5,
  },
  {
    net: 'iqn',
    layout: duelingLayout('iqn'),
    rows: IQN_ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, t, o) => forwardIqn(duelingLayout('iqn'), p, x, t, o),
    exactTol: 1e-5,
  },
  {
    net: 'actor',
    layout: ppoActorLayout(),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: NUM_ACTIONS,
    ref: (p, x, _t, o) => forwardMlp(ppoActorLayout(), p, x, o),
    exactTol: 0,
  },
  {
    net: 'critic',
    layout: ppoCriticLayout(),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: 1,
    ref: (p, x, _t, o) => forwardMlp(ppoCriticLayout(), p, x, o),
    exactTol: 0,
  },
  {
    // At an odd float offset, as the PPO critic after the actor: a scalar, a pair and a scalar.
    net: 'critic_at1',
    layout: ppoCriticLayout(),
    rows: ROWS,
    inDim: STATE_DIM,
    outDim: 1,
    ref: (p, x, _t, o) => forwardMlp(ppoCriticLayout(), p, x, o),
    exactTol: 0,
  },
  {
    net: 'curiosity',
    layout: curiosityLayout(),
    rows: ROWS,
    inDim: 35,
    outDim: 32,
    ref: (p, x, _t, o) => forwardMlp(curiosityLayout(), p, x, o),
    exactTol: 0,
  },
];

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `CUDA collection nets on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let exact = '';
    let tf32 = '';
    beforeAll(() => {
      exact = buildEmu('nets_harness.cpp', { COLLECT_TF32: 0 });
      tf32 = buildEmu('nets_harness.cpp', { COLLECT_TF32: 1 });
    });

    it('uses the flat layouts of src/nets/layout.ts', async () => {
      const { execFileSync } = await import('node:child_process');
      const got = JSON.parse(execFileSync(exact, ['layout'], { encoding: 'utf8' })) as Record<
        string,
        number[]
      >;
      const offsets = (l: NetLayout) => [...l.layers.flatMap((x) => [x.wOffset, x.bOffset]), l.size];
      expect(got.plain).toEqual(offsets(duelingLayout('plain')));
      expect(got.c51).toEqual(offsets(duelingLayout('c51')));
      expect(got.iqn).toEqual(offsets(duelingLayout('iqn')));
      expect(got.actor).toEqual(offsets(ppoActorLayout()));
      expect(got.critic).toEqual(offsets(ppoCriticLayout()));
      expect(got.curiosity).toEqual(offsets(curiosityLayout()));
    });

    for (const c of cases) {
      const params = initParams(c.layout, 0, 12345);
      const x = inputs(c.rows * c.inDim, 1);
      const taus = inputs(c.rows * IQN_K, 2, 0, 1);
      const want = new Float32Array(c.rows * c.outDim);
      const row = new Float32Array(Math.max(c.outDim, NUM_ACTIONS));
      for (let r = 0; r < c.rows; r++) {
        c.ref(
          params,
          x.subarray(r * c.inDim, (r + 1) * c.inDim),
          taus.subarray(r * IQN_K, (r + 1) * IQN_K),
          row,
        );
        want.set(row.subarray(0, c.outDim), r * c.outDim);
      }
      const input = new Float32Array(params.length + x.length + (c.net === 'iqn' ? taus.length : 0));
      input.set(params);
      input.set(x, params.length);
      if (c.net === 'iqn') input.set(taus, params.length + x.length);

      it(`${c.net}: exact mode matches the TS reference${c.exactTol ? ` within ${c.exactTol} (exp/cos)` : ' bit for bit'}`, () => {
        const got = runEmu(exact, [c.net, '@in', '@out'], input);
        const { maxErr, firstBad } = compare(got, want, c.exactTol, c.exactTol);
        expect(
          firstBad,
          `first mismatch at ${firstBad}: ${got[firstBad]} vs ${want[firstBad]}, max err ${maxErr}`,
        ).toBe(-1);
      });

      it(`${c.net}: tensor-core (TF32) mode is within TF32 rounding`, () => {
        const got = runEmu(tf32, [c.net, '@in', '@out'], input);
        const scale = want.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        const { maxErr, firstBad } = compare(got, want, 1e-2 * scale, 1e-2);
        expect(
          firstBad,
          `first mismatch at ${firstBad}: ${got[firstBad]} vs ${want[firstBad]}, max err ${maxErr}`,
        ).toBe(-1);
        // TF32 inputs lose 13 mantissa bits: an exact result would mean the mma path did not run.
        expect(maxErr).toBeGreaterThan(0);
      });
    }
  },
);
