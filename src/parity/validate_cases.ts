/**
 * Parity cases of validate_policy (src/kernels/validate_policy.ts) and validate_dqn
 * (src/kernels/validate_dqn.ts): PPO's greedy actor, and the plain, C51 and IQN dueling nets'
 * greedy policies (IQN: the mean over IQN_ACT_TAUS fixed taus (t + 0.5) / K, K not a power of
 * two so that the kernels' rounding of the taus is exercised), over a 550-bar split of the
 * collection cases' random market, through DeviceValidator (its launches of VALIDATE_CHUNK_STEPS:
 * two), against the host backtest (src/eval/backtest.ts, dqnGreedyPolicy) run directly. Per policy
 * one case with the default simulator (trades, barrier exits that do not end the episode), the
 * same in launches of 37 steps (15 launches, the episode carried between them), and one whose
 * collapse threshold is close to V_0, so the episode collapses and the rest of the curve must stay
 * flat. The nets are the initial ones with their output layers scaled up, so
 * the greedy action varies with the state; the DQN nets sit at a float offset of the nets buffer.
 *
 * What must agree: the actions exactly, and the equity, exposure and traded notional of every
 * step to atol + rtol (the kernels round traded to f32; the GPU may fuse multiply-adds, its exp is
 * a few ulp off), up to the first tie: a step whose two best logits or Q values (reference) are
 * closer than TIE_GAP, where an action may legitimately differ; from there both sides are zeroed.
 * Browser-safe.
 */
import type { Backend } from '../backend/types.js';
import { cloneDefaults } from '../config.js';
import type { SplitRange } from '../data/types.js';
import { DeviceValidator, uploadValidateBuffers } from '../device/validate.js';
import { type EnvParams, envParams } from '../env/params.js';
import { policyRollout } from '../eval/backtest.js';
import { dqnGreedyPolicy, type Policy, ppoGreedyPolicy } from '../eval/policies.js';
import type { TypedArray } from '../kernels/reference.js';
import {
  type C51Support,
  forwardC51,
  forwardDueling,
  forwardIqn,
  forwardMlp,
  initParams,
} from '../nets/forward.js';
import {
  duelingLayout,
  layerByName,
  NetId,
  NUM_ACTIONS,
  ppoActorLayout,
  type QHead,
  STATE_DIM,
} from '../nets/layout.js';
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

/** The C51 support of the DQN cases (the config's default). */
const SUPPORT: C51Support = { vMin: -10, vMax: 10, atoms: 51 };
/** Where the DQN cases put the online net in the nets buffer (floats). */
const DQN_BASE = 12;

/** IQN's act taus and cosine embedding in the IQN cases. */
const IQN_ACT_TAUS = 12;
const IQN_EMBED = 64;
const TAU_EMBED_SCALE = 8;

/** The policy a case validates: PPO's actor or a DQN-family head. */
type Validated = 'ppo' | 'plain' | 'c51' | 'iqn';

/** The nets buffer of a case: the actor, or the online net (output layers scaled up) at DQN_BASE. */
const nets = {
  ppo: actor,
  plain: memo(() => dqnNets('plain', 20)),
  c51: memo(() => dqnNets('c51', 4)),
  iqn: memo(() => dqnNets('iqn', 20, TAU_EMBED_SCALE)),
} satisfies Record<Validated, () => Float32Array>;

/**
 * The online net with its output layers' weights scaled by `scale` (and IQN's tau_embed, weights
 * and bias, by `embedScale`: the product with the trunk otherwise damps the state's effect).
 */
function dqnNets(head: QHead, scale: number, embedScale = 1): Float32Array {
  const layout = duelingLayout(head, SUPPORT.atoms, IQN_EMBED);
  const p = initParams(layout, NetId.QOnline, SEED);
  const scaled = [
    ...['value_stream.1', 'advantage_stream.1'].map((name) => [name, scale] as const),
    ...(head === 'iqn' ? [['tau_embed', embedScale] as const] : []),
  ];
  for (const [name, by] of scaled) {
    const l = layerByName(layout, name);
    const end = name === 'tau_embed' ? l.bOffset + l.out : l.wOffset + l.in * l.out;
    for (let k = l.wOffset; k < end; k++) p[k] = Math.fround(p[k] * by);
  }
  const out = new Float32Array(DQN_BASE + layout.size);
  out.set(p, DQN_BASE);
  return out;
}

/** The policy's values to argmax (logits or Q) and the greedy policy itself. */
function scorer(which: Validated): {
  score: (state: Float32Array, out: Float32Array) => void;
  greedy: Policy;
} {
  if (which === 'ppo') {
    const layout = ppoActorLayout();
    return {
      score: (state, out) => forwardMlp(layout, actor(), state.subarray(0, STATE_DIM), out),
      greedy: ppoGreedyPolicy(actor(), layout),
    };
  }
  const layout = duelingLayout(which, SUPPORT.atoms, IQN_EMBED);
  const online = nets[which]().subarray(DQN_BASE);
  const probs = new Float32Array(NUM_ACTIONS * SUPPORT.atoms);
  const taus = Float32Array.from({ length: IQN_ACT_TAUS }, (_, k) => (k + 0.5) / IQN_ACT_TAUS);
  return {
    score: (state, out) =>
      which === 'c51'
        ? forwardC51(layout, online, state, probs, out, SUPPORT)
        : which === 'iqn'
          ? forwardIqn(layout, online, state, taus, out)
          : forwardDueling(layout, online, state, out),
    greedy: dqnGreedyPolicy(which, layout, online, SUPPORT, IQN_ACT_TAUS),
  };
}

/** The reference's rollout and its first tie step (STEPS when none). */
function reference(which: Validated, params: EnvParams) {
  const values = new Float32Array(NUM_ACTIONS);
  const { score, greedy } = scorer(which);
  let tie = STEPS;
  const policy = (state: Float32Array, bar: number) => {
    score(state, values);
    const sorted = Array.from(values).sort((a, b) => b - a);
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

function validateCase(
  which: Validated,
  name: string,
  adjust: (p: EnvParams) => EnvParams,
  chunkSteps?: number,
  window?: number,
): ParityCase {
  const params = adjust(envParams(cloneDefaults().env));
  const ref = memo(() => reference(which, params));
  const kernel = which === 'ppo' ? 'validate_policy' : 'validate_dqn';
  return {
    name: `${kernel} ${which} greedy ${STEPS} steps, ${name}`,
    kernel,
    // Speculation's rounds are validate_dqn's on WebGPU (CUDA runs the cluster kernel's launches).
    ...(window ? { backends: ['cpu' as const, 'webgpu' as const] } : {}),
    tolerance: { kind: 'close', atol: 1e-4, rtol: 1e-4 },
    expected: () => outputs(ref(), ref().tie),
    actual: async (backend: Backend) => {
      const m = market();
      const shared = uploadValidateBuffers(backend, m, params.entropyTable, nets[which]());
      const v = new DeviceValidator(
        backend,
        shared,
        params,
        SPLIT,
        which === 'ppo'
          ? { kind: 'ppo' }
          : {
              kind: 'dqn',
              head: which,
              netBase: DQN_BASE,
              ...SUPPORT,
              actTaus: IQN_ACT_TAUS,
              iqnEmbed: IQN_EMBED,
            },
        { chunkSteps, window },
      );
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
  const collapse = (p: EnvParams) => ({ ...p, collapseFraction: Math.fround(0.999) });
  return (['ppo', 'plain', 'c51', 'iqn'] as const).flatMap((which) => [
    validateCase(which, 'default simulator', (p) => p),
    validateCase(which, 'default simulator, launches of 37 steps', (p) => p, 37, 0),
    validateCase(which, 'collapse at 99.9% of V_0', collapse),
    // Speculation's rounds on the plain head: its machinery is the same for every head (lavapipe,
    // which runs CI's WebGPU cases, takes minutes for C51's and IQN's windows).
    ...(which !== 'plain'
      ? []
      : [
          validateCase(which, 'speculative rounds of 16 steps', (p) => p, undefined, 16),
          validateCase(which, 'speculative rounds of 16 steps, collapse', collapse, undefined, 16),
        ]),
  ]);
}
