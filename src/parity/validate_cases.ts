/**
 * Parity cases of validate_policy (src/kernels/validate_policy.ts): PPO's greedy actor over a
 * 550-bar split of the collection cases' random market, as one launch through DeviceValidator,
 * against the host backtest (src/eval/backtest.ts) run directly. One case with the default
 * simulator (trades, barrier exits that do not end the episode), one whose collapse threshold is
 * close to V_0, so the episode collapses and the rest of the curve must stay flat.
 *
 * What must agree: the actions exactly, and the equity, exposure and traded notional of every
 * step to atol + rtol (the kernels round traded to f32; the GPU may fuse multiply-adds), up to the
 * first tie: a step whose two best logits (reference) are closer than TIE_GAP, where an action may
 * legitimately differ; from there both sides are zeroed. Browser-safe.
 */
import type { Backend } from '../backend/types.js';
import { cloneDefaults } from '../config.js';
import type { SplitRange } from '../data/types.js';
import { DeviceValidator, type SharedValidateBuffers } from '../device/validate.js';
import { type EnvParams, envParams } from '../env/params.js';
import { policyRollout } from '../eval/backtest.js';
import { ppoGreedyPolicy } from '../eval/policies.js';
import type { TypedArray } from '../kernels/reference.js';
import { forwardMlp, initParams } from '../nets/forward.js';
import { NetId, NUM_ACTIONS, ppoActorLayout, STATE_DIM } from '../nets/layout.js';
import type { Outputs, ParityCase } from './cases.js';
import { parityMarket, TIE_GAP } from './collect_cases.js';

const SPLIT: SplitRange = { start: 100, end: 650 };
const STEPS = SPLIT.end - SPLIT.start - 1;
const SEED = 11;

function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

const market = memo(parityMarket);
/** The initial actor with its output layer scaled up, so that the greedy action varies with the state. */
const actor = memo(() => {
  const layout = ppoActorLayout();
  const p = initParams(layout, NetId.Actor, SEED);
  const out = layout.layers[layout.layers.length - 1];
  for (let k = out.wOffset; k < out.wOffset + out.in * out.out; k++) p[k] = Math.fround(p[k] * 20);
  return p;
});

/** Zeroes steps from `from` on. */
function maskFrom(buf: TypedArray, from: number): TypedArray {
  const out = buf.slice();
  out.fill(0, from);
  return out;
}

/** The reference's rollout and its first tie step (STEPS when none). */
function reference(params: EnvParams) {
  const layout = ppoActorLayout();
  const logits = new Float32Array(NUM_ACTIONS);
  let tie = STEPS;
  const greedy = ppoGreedyPolicy(actor(), layout);
  const policy = (state: Float32Array, bar: number) => {
    forwardMlp(layout, actor(), state.subarray(0, STATE_DIM), logits);
    const sorted = Array.from(logits).sort((a, b) => b - a);
    if (sorted[0] - sorted[1] < TIE_GAP) tie = Math.min(tie, bar - SPLIT.start);
    return greedy(state, bar);
  };
  const r = policyRollout(market(), SPLIT, params, policy);
  return { ...r, tie };
}

function outputs(
  r: { trace: { equity: Float64Array; exposure: Float64Array; traded: Float64Array }; actions: Int32Array },
  tie: number,
): Outputs {
  return {
    actions: maskFrom(r.actions, tie),
    equity: maskFrom(Float32Array.from(r.trace.equity.subarray(1)), tie),
    exposure: maskFrom(Float32Array.from(r.trace.exposure), tie),
    traded: maskFrom(Float32Array.from(r.trace.traded), tie),
  };
}

function validateCase(name: string, adjust: (p: EnvParams) => EnvParams): ParityCase {
  const params = adjust(envParams(cloneDefaults().env));
  const ref = memo(() => reference(params));
  return {
    name: `validate_policy ppo greedy ${STEPS} steps, ${name}`,
    kernel: 'validate_policy',
    tolerance: { kind: 'close', atol: 1e-4, rtol: 1e-4 },
    expected: () => outputs(ref(), ref().tie),
    actual: async (backend: Backend) => {
      const m = market();
      const make = (data: Float32Array, label: string) => {
        const b = backend.createBuffer(data.byteLength, `validate parity ${label}`);
        backend.upload(b, data);
        return b;
      };
      const shared: SharedValidateBuffers = [
        make(m.features, 'features'),
        make(m.ohlc, 'ohlc'),
        make(m.spreadBps, 'spread'),
        make(params.entropyTable, 'entropy'),
        make(actor(), 'nets'),
      ];
      const v = new DeviceValidator(backend, shared, params, SPLIT);
      try {
        return outputs(await v.run(252), ref().tie);
      } finally {
        v.destroy();
        for (const b of shared) backend.destroyBuffer(b);
      }
    },
  };
}

export function validateParityCases(): ParityCase[] {
  return [
    validateCase('default simulator', (p) => p),
    validateCase('collapse at 99.9% of V_0', (p) => ({ ...p, collapseFraction: Math.fround(0.999) })),
  ];
}
