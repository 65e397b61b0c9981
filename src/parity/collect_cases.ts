/**
 * Parity cases of the collection kernels (collect_dqn with the plain, C51 and IQN heads,
 * collect_ppo; tiled and seed variants): two consecutive launches of N = 5 episodes x L = 40
 * steps on a small random market whose episodes are 12 bars long, so barriers fire, episodes
 * truncate and restart inside a launch, and the second launch starts from the state the first
 * left on the device. The expectation is the reference collectors of src/collect/ run directly
 * (not through a backend), so the CPU backend's twin is checked too.
 *
 * What must agree:
 * - actions, dones, truncateds exactly, and every float output (states, next states, rewards,
 *   TD errors, reward components; log-probs, values, advantages, returns) to
 *   atol FLOAT_ATOL + rtol FLOAT_RTOL, on each episode's steps before its first tie;
 * - a tie is a decision the reference takes by less than TIE_GAP: the two best Q-values closer
 *   than that (the GPU's Q-values may legitimately differ by its f32 rounding and fused
 *   multiply-adds), or for PPO the threshold u * sum within TIE_GAP * sum of a CDF boundary;
 *   from a tie on, the episode's later steps and its final state are not compared (PPO: the
 *   whole episode's advantages and returns, which GAE carries backwards);
 * - the per-episode state after the second launch (env_f to the float tolerance, env_i and the
 *   diversity window exactly) for episodes without a tie.
 * Browser-safe.
 */
import type { Backend, BackendKind } from '../backend/types.js';
import { argmaxQ, collectDqn, type DqnNets } from '../collect/dqn.js';
import { collectPpo, type PpoNets } from '../collect/ppo.js';
import type { DqnRollout, PpoRollout } from '../collect/rollout.js';
import { type Config, cloneDefaults, SPEC_REWARD_TERMS } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import {
  type CollectAlgo,
  type CollectVariant,
  type DeviceCollectorInit,
  DqnDeviceCollector,
  PpoDeviceCollector,
  type TileShape,
} from '../device/collect.js';
import type { CuriosityModel } from '../env/curiosity.js';
import { envParams } from '../env/params.js';
import { createEnv, ENV_F, ENV_I, type EnvState } from '../env/state.js';
import type { TypedArray } from '../kernels/reference.js';
import { forwardC51, forwardDueling, forwardIqn, forwardMlp, initParams } from '../nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  MARKET_FEATURES,
  NetId,
  NUM_ACTIONS,
  ppoActorLayout,
  ppoCriticLayout,
  type QHead,
  STATE_DIM,
} from '../nets/layout.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { Outputs, ParityCase } from './cases.js';
import type { Tolerance } from './compare.js';

/** Float outputs: f32 rounding and fused multiply-adds over a 40-step launch stay far inside. */
export const FLOAT_ATOL = 1e-4;
export const FLOAT_RTOL = 1e-4;
/** A decision closer than this (Q gap, or CDF distance relative to the sum) may flip on a GPU. */
export const TIE_GAP = 1e-5;

const TOLERANCE: Tolerance = { kind: 'close', atol: FLOAT_ATOL, rtol: FLOAT_RTOL };
const N = 5;
const L = 40;
const SEED = 11;
const BARS = 700;
const SPLIT: SplitRange = { start: 100, end: 650 };
/**
 * Tile shape on every backend: 2 episodes per workgroup, so N = 5 leaves a partial tile; short
 * weight slices keep the shader small for software compilers.
 */
const TILE: Partial<TileShape> = { tileEpisodes: 2, threads: 64, kt: 8 };
/**
 * The unrolled quad engine (ENGINE 2) with every row accumulator in use: DQN 8 episodes over 2
 * row groups (4 rows a thread; N = 5 leaves 3 rows empty), PPO 4 episodes in one row group.
 */
const QUAD2_DQN: Partial<TileShape> = { ...TILE, tileEpisodes: 8, engine: 2 };
/** One C51 episode a workgroup of 128 threads: CUDA computes all 45 actions' logits at once (c51_whole). */
const C51_WHOLE: Partial<TileShape> = { ...TILE, tileEpisodes: 1, threads: 128 };
const QUAD2_PPO: Partial<TileShape> = { ...TILE, tileEpisodes: 4, engine: 2 };
const engineName = (engine: number | undefined) => (engine === 2 ? ' quad2 engine' : '');

/** A seeded random walk (Philox Stream.Test) with valid OHLC, varying spreads, random features. */
export function parityMarket(): Market {
  const m: Market = {
    n: BARS,
    features: new Float32Array(BARS * MARKET_FEATURES),
    ohlc: new Float32Array(BARS * 4),
    spreadBps: new Float32Array(BARS),
    timestamp: Float64Array.from({ length: BARS }, (_, t) => 1_700_000_000_000 + t * 60_000),
  };
  const w = new Uint32Array(4);
  const u = (t: number, k: number) => {
    philox4x32(Stream.Test, 300, t, k >> 2, 7, 0, w);
    return u32ToUnitFloat(w[k & 3]);
  };
  let close = 100;
  for (let t = 0; t < BARS; t++) {
    const vol = 0.001 + 0.004 * u(t, 0);
    // Gaps of up to +-0.75 vol (37 bps): some open past a 30 bps stop, so gap exits are compared.
    const open = close * (1 + vol * 1.5 * (u(t, 1) - 0.5));
    close = open * (1 + vol * 2 * (u(t, 2) - 0.5));
    const high = Math.max(open, close) * (1 + vol * u(t, 3));
    const low = Math.min(open, close) * (1 - vol * u(t, 4));
    m.ohlc.set([open, high, low, close], t * 4);
    m.spreadBps[t] = 1 + 4 * u(t, 5);
    for (let k = 0; k < MARKET_FEATURES; k++) m.features[t * MARKET_FEATURES + k] = 2 * u(t, 8 + k) - 1;
  }
  return m;
}

function parityConfig(algo: CollectAlgo): Config {
  const cfg = cloneDefaults();
  Object.assign(cfg.env, SPEC_REWARD_TERMS);
  cfg.rollout.episodes = N;
  cfg.rollout.steps = L;
  cfg.env.episodeBars = 12;
  // An unclipped curiosity bonus (the untrained model's error is ~1, above the default cap of 0.1), so
  // that the rewards carry the curiosity layers' numerics (clipped, no case saw them).
  cfg.env.curiosityMaxReward = 1e3;
  cfg.train.seed = SEED;
  if (algo === 'iqn') cfg.dqn.iqnActTau = 8;
  return cfg;
}

function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

const market = memo(parityMarket);
const curiosityNet = memo(() => initParams(curiosityLayout(), NetId.Curiosity, SEED));

/** The first step of each episode that a tie decided (L when none). */
type TieSteps = Int32Array;

/** Steps at and after the episode's first tie are zeroed (both sides), so they compare equal. */
function maskSteps(buf: TypedArray, width: number, ties: TieSteps): TypedArray {
  const out = buf.slice();
  // Every episode of the run (ties holds one entry per episode: N, or a case's own count).
  for (let e = 0; e < ties.length; e++) out.fill(0, (e * L + ties[e]) * width, (e + 1) * L * width);
  return out;
}

/** Whole episodes with a tie in either launch are zeroed. */
function maskEpisodes(buf: TypedArray, width: number, ties: TieSteps): TypedArray {
  const out = buf.slice();
  for (let e = 0; e < ties.length; e++) if (ties[e] < L) out.fill(0, e * L * width, (e + 1) * L * width);
  return out;
}

function maskEnv(env: EnvState, ties: [TieSteps, TieSteps]): Outputs {
  const f = env.f.slice();
  const i = env.i.slice();
  const w = env.window.slice();
  for (let e = 0; e < ties[0].length; e++) {
    if (ties[0][e] < L || ties[1][e] < L) {
      f.fill(0, e * ENV_F, (e + 1) * ENV_F);
      i.fill(0, e * ENV_I, (e + 1) * ENV_I);
      w.fill(0, e * env.w, (e + 1) * env.w);
    }
  }
  return { env_f: f, env_i: i, div_window: w };
}

/** Launch 2's steps are not compared after a tie in launch 1 either (their state differs). */
function carryTies(first: TieSteps, second: TieSteps): TieSteps {
  return second.map((s, e) => (first[e] < L ? 0 : s));
}

// ---- collect_dqn ---------------------------------------------------------------------------

interface DqnRun {
  rollouts: [DqnRollout, DqnRollout];
  env: EnvState;
}

function dqnNets(head: QHead, cfg: Config): DqnNets {
  const q = cfg.dqn;
  const layout = duelingLayout(head, q.atoms, q.iqnEmbed);
  return {
    head,
    layout,
    online: initParams(layout, NetId.QOnline, SEED),
    support: { vMin: q.vMin, vMax: q.vMax, atoms: q.atoms },
    actTaus: q.iqnActTau,
  };
}

/** First tie step per episode of a DQN rollout: greedy steps whose two best Q-values are close. */
function dqnTies(
  r: DqnRollout,
  nets: DqnNets,
  epsilon: number,
  stepBase: number,
  key: [number, number],
): TieSteps {
  const ties = new Int32Array(N).fill(L);
  const q = new Float32Array(NUM_ACTIONS);
  const probs = new Float32Array(NUM_ACTIONS * nets.support.atoms);
  const taus = new Float32Array(nets.actTaus);
  const w = new Uint32Array(4);
  for (let e = 0; e < N; e++) {
    for (let l = 0; l < L; l++) {
      const g = stepBase + l;
      philox4x32(Stream.Action, e, g, 0, key[0], key[1], w);
      if (u32ToUnitFloat(w[0]) < Math.fround(epsilon)) continue;
      const s = r.states.subarray((e * L + l) * STATE_DIM, (e * L + l + 1) * STATE_DIM);
      if (nets.head === 'plain') forwardDueling(nets.layout, nets.online, s, q);
      else if (nets.head === 'c51') forwardC51(nets.layout, nets.online, s, probs, q, nets.support);
      else {
        for (let k = 0; k < taus.length; k++) {
          if ((k & 3) === 0) philox4x32(Stream.Tau, e, g, k >> 2, key[0], key[1], w);
          taus[k] = u32ToUnitFloat(w[k & 3]);
        }
        forwardIqn(nets.layout, nets.online, s, taus, q);
      }
      const best = argmaxQ(q);
      let second = Number.NEGATIVE_INFINITY;
      for (let a = 0; a < NUM_ACTIONS; a++) if (a !== best) second = Math.max(second, q[a]);
      if (q[best] - second < TIE_GAP) {
        ties[e] = l;
        break;
      }
    }
  }
  return ties;
}

function dqnOutputs(r: DqnRollout, ties: TieSteps, prefix: string): Outputs {
  return {
    [`${prefix}actions`]: maskSteps(r.actions, 1, ties),
    [`${prefix}dones`]: maskSteps(r.dones, 1, ties),
    [`${prefix}truncateds`]: maskSteps(r.truncateds, 1, ties),
    [`${prefix}states`]: maskSteps(r.states, STATE_DIM, ties),
    [`${prefix}nextStates`]: maskSteps(r.nextStates, STATE_DIM, ties),
    [`${prefix}rewards`]: maskSteps(r.rewards, 1, ties),
    [`${prefix}components`]: maskSteps(r.components, 5, ties),
  };
}

/** The reference collector's two launches of `n` episodes at the given epsilons, and the state after. */
function dqnReference(cfg: Config, nets: DqnNets, n: number, epsilons: readonly [number, number]): DqnRun {
  const params = envParams(cfg.env);
  const env = createEnv(market(), SPLIT, params, n, SEED);
  const curiosity: CuriosityModel = { layout: curiosityLayout(), params: curiosityNet() };
  const rollouts = epsilons.map((epsilon, k) =>
    collectDqn(env, market(), params, nets, curiosity, {
      steps: L,
      epsilon,
      stepBase: k * L,
    }),
  ) as [DqnRollout, DqnRollout];
  return { rollouts, env };
}

/** The same two launches through a backend's collector (built from `init`), read back. */
async function dqnDeviceRun(
  init: Omit<DeviceCollectorInit, 'market' | 'split'>,
  nets: DqnNets,
  epsilons: readonly [number, number],
): Promise<DqnRun> {
  const c = new DqnDeviceCollector({ ...init, market: market(), split: SPLIT });
  try {
    c.setWeights({ online: nets.online, curiosity: curiosityNet() });
    c.launch(epsilons[0]);
    const first = await c.readDqn();
    c.launch(epsilons[1]);
    const second = await c.readDqn();
    return { rollouts: [first, second], env: await c.readEnv() };
  } finally {
    c.destroy();
  }
}

const EPSILONS: [number, number] = [0.3, 0.1];

/** Both launches' outputs of `n` episodes and the episode state after, no step masked (no ties). */
function dqnRunOutputs(run: DqnRun, n: number): Outputs {
  const none = new Int32Array(n).fill(L);
  return {
    ...dqnOutputs(run.rollouts[0], none, '1:'),
    ...dqnOutputs(run.rollouts[1], none, '2:'),
    env_f: run.env.f,
    env_i: run.env.i,
    div_window: run.env.window,
  };
}

/**
 * A DQN-family collector against the reference. `clipped`: the curiosity bonus at its default cap, so
 * the cap's branch (every step's bonus clipped) is compared too.
 */
function dqnCase(
  algo: Exclude<CollectAlgo, 'ppo'>,
  variant: CollectVariant,
  tile = TILE,
  clipped = false,
  label = '',
  backends?: BackendKind[],
): ParityCase {
  const head: QHead = algo === 'dqn' ? 'plain' : algo;
  const cfg = parityConfig(algo);
  if (clipped) cfg.env.curiosityMaxReward = cloneDefaults().env.curiosityMaxReward;
  const nets = memo(() => dqnNets(head, cfg));
  const reference = memo(() => dqnReference(cfg, nets(), N, EPSILONS));
  const ties = memo((): [TieSteps, TieSteps] => {
    const { rollouts, env } = reference();
    const first = dqnTies(rollouts[0], nets(), EPSILONS[0], 0, env.key);
    return [first, carryTies(first, dqnTies(rollouts[1], nets(), EPSILONS[1], L, env.key))];
  });
  const outputs = (run: DqnRun): Outputs => {
    const t = ties();
    return {
      ...dqnOutputs(run.rollouts[0], t[0], '1:'),
      ...dqnOutputs(run.rollouts[1], t[1], '2:'),
      ...maskEnv(run.env, t),
    };
  };
  return {
    name: `collect_dqn ${head} ${variant}${engineName(tile.engine)} N=${N} L=${L}, two launches${clipped ? ', curiosity bonus at its default cap' : ''}${label}`,
    kernel: variant === 'cluster' ? 'collect_dqn_cluster' : 'collect_dqn',
    // Thread-block clusters exist on CUDA only.
    ...(variant === 'cluster' ? { backends: ['cuda' as const] } : backends ? { backends } : {}),
    tolerance: TOLERANCE,
    expected: memo(() => outputs(reference())),
    actual: async (backend: Backend) =>
      outputs(
        await dqnDeviceRun(
          {
            backend,
            cfg,
            algo,
            variant,
            // Clusters of 8 CTAs x 2 episodes (the tile's): N = 5 leaves the last cluster half empty.
            ...(variant === 'cluster' ? { cluster: 8 } : {}),
            tile,
          },
          nets(),
          EPSILONS,
        ),
      ),
  };
}

// ---- collect_ppo ---------------------------------------------------------------------------

interface PpoRun {
  rollouts: [PpoRollout, PpoRollout];
  env: EnvState;
}

function ppoNets(): PpoNets {
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  return {
    actorLayout,
    actor: initParams(actorLayout, NetId.Actor, SEED),
    criticLayout,
    critic: initParams(criticLayout, NetId.Critic, SEED),
  };
}

/** First tie step per episode: u * sum within TIE_GAP * sum of a CDF boundary. */
function ppoTies(r: PpoRollout, nets: PpoNets, stepBase: number, key: [number, number]): TieSteps {
  const ties = new Int32Array(N).fill(L);
  const logits = new Float32Array(NUM_ACTIONS);
  const w = new Uint32Array(4);
  for (let e = 0; e < N; e++) {
    for (let l = 0; l < L; l++) {
      const s = r.states.subarray((e * L + l) * STATE_DIM, (e * L + l + 1) * STATE_DIM);
      forwardMlp(nets.actorLayout, nets.actor, s, logits);
      const m = Math.max(...logits);
      const ex = Array.from(logits, (x) => Math.exp(x - m));
      const sum = ex.reduce((a, b) => a + b, 0);
      philox4x32(Stream.Action, e, stepBase + l, 0, key[0], key[1], w);
      const threshold = u32ToUnitFloat(w[0]) * sum;
      let cdf = 0;
      let tie = false;
      for (let k = 0; k < NUM_ACTIONS - 1 && !tie; k++) {
        cdf += ex[k];
        tie = Math.abs(threshold - cdf) < TIE_GAP * sum;
      }
      if (tie) {
        ties[e] = l;
        break;
      }
    }
  }
  return ties;
}

function ppoOutputs(r: PpoRollout, ties: TieSteps, prefix: string): Outputs {
  return {
    [`${prefix}actions`]: maskSteps(r.actions, 1, ties),
    [`${prefix}dones`]: maskSteps(r.dones, 1, ties),
    [`${prefix}truncateds`]: maskSteps(r.truncateds, 1, ties),
    [`${prefix}states`]: maskSteps(r.states, STATE_DIM, ties),
    [`${prefix}logProbs`]: maskSteps(r.logProbs, 1, ties),
    [`${prefix}values`]: maskSteps(r.values, 1, ties),
    [`${prefix}rewards`]: maskSteps(r.rewards, 1, ties),
    [`${prefix}components`]: maskSteps(r.components, 5, ties),
    [`${prefix}advantages`]: maskEpisodes(r.advantages, 1, ties),
    [`${prefix}returns`]: maskEpisodes(r.returns, 1, ties),
  };
}

function ppoCase(variant: CollectVariant, tile = TILE): ParityCase {
  const cfg = parityConfig('ppo');
  const nets = memo(ppoNets);
  const reference = memo((): PpoRun => {
    const params = envParams(cfg.env);
    const env = createEnv(market(), SPLIT, params, N, SEED);
    const curiosity: CuriosityModel = { layout: curiosityLayout(), params: curiosityNet() };
    const rollouts = [0, 1].map((k) =>
      collectPpo(env, market(), params, nets(), curiosity, {
        steps: L,
        stepBase: k * L,
        gamma: cfg.ppo.gamma,
        lambda: cfg.ppo.lambda,
      }),
    ) as [PpoRollout, PpoRollout];
    return { rollouts, env };
  });
  const ties = memo((): [TieSteps, TieSteps] => {
    const { rollouts, env } = reference();
    const first = ppoTies(rollouts[0], nets(), 0, env.key);
    return [first, carryTies(first, ppoTies(rollouts[1], nets(), L, env.key))];
  });
  const outputs = (run: PpoRun): Outputs => {
    const t = ties();
    return {
      ...ppoOutputs(run.rollouts[0], t[0], '1:'),
      ...ppoOutputs(run.rollouts[1], t[1], '2:'),
      ...maskEnv(run.env, t),
    };
  };
  return {
    name: `collect_ppo ${variant}${engineName(tile.engine)} N=${N} L=${L}, two launches`,
    kernel: 'collect_ppo',
    tolerance: TOLERANCE,
    expected: memo(() => outputs(reference())),
    actual: async (backend: Backend) => {
      const c = new PpoDeviceCollector({
        backend,
        market: market(),
        split: SPLIT,
        cfg,
        algo: 'ppo',
        variant,
        tile,
      });
      try {
        c.setWeights({ actor: nets().actor, critic: nets().critic, curiosity: curiosityNet() });
        c.launch();
        const first = await c.readPpo();
        c.launch();
        const second = await c.readPpo();
        return outputs({ rollouts: [first, second], env: await c.readEnv() });
      } finally {
        c.destroy();
      }
    },
  };
}

// ---- collect_dqn on tensor cores (CUDA TF32) ---------------------------------------------------

/** Float tolerance of the tensor-core builds: reduced-precision operands through four layers. */
const TENSOR_ATOL = 2e-2;
const TENSOR_RTOL = 2e-2;

/**
 * A tensor-core build of the plain DQN collector against the reference: `n` episodes, epsilon 1 in
 * both launches, so every action is the Philox draw and trajectories cannot fork where the reduced
 * precision Q-values reorder near-ties: actions, dones, truncations, states and the episode state
 * must match as in f32; the curiosity bonus inside rewards and components (unclipped, parityConfig: the
 * bonus carries the curiosity layers) within TENSOR_ATOL + TENSOR_RTOL. The Q-values themselves are
 * checked by dqnGreedyCase.
 * `init` picks the build (backend, variant, tile, constants).
 */
function dqnEpsilonOneCase(
  n: number,
  head: Pick<ParityCase, 'name' | 'kernel' | 'backends' | 'requires'>,
  init: Omit<DeviceCollectorInit, 'market' | 'split' | 'backend' | 'cfg' | 'algo'>,
): ParityCase {
  const cfg = parityConfig('dqn');
  cfg.rollout.episodes = n;
  const nets = memo(() => dqnNets('plain', cfg));
  const epsilons = [1, 1] as const;
  const reference = memo(() => dqnReference(cfg, nets(), n, epsilons));
  const outputs = (run: DqnRun): Outputs => dqnRunOutputs(run, n);
  return {
    ...head,
    tolerance: { kind: 'close', atol: TENSOR_ATOL, rtol: TENSOR_RTOL },
    expected: memo(() => outputs(reference())),
    actual: async (backend: Backend) =>
      outputs(await dqnDeviceRun({ ...init, backend, cfg, algo: 'dqn' }, nets(), epsilons)),
  };
}

/**
 * The CUDA tensor-core builds (constant TF32 = 1: TF32 operands, f32 sums). `cluster` runs the
 * thread-block cluster kernel (8 CTAs x 8 episodes: N = 5 leaves 3 rows of the m16 tile and 3 CTAs
 * without an episode), else the tiled kernel at the parity tile.
 */
function dqnTf32Case(variant: 'tiled' | 'cluster'): ParityCase {
  return dqnEpsilonOneCase(
    N,
    {
      name: `collect_dqn plain ${variant} TF32 tensor cores N=${N} L=${L}${variant === 'cluster' ? ' (8 CTAs x 8 episodes)' : ''}, epsilon 1, two launches`,
      kernel: variant === 'cluster' ? 'collect_dqn_cluster' : 'collect_dqn',
      backends: ['cuda'],
    },
    {
      variant,
      constants: { TF32: 1 },
      ...(variant === 'cluster' ? { cluster: 8, tile: { tileEpisodes: 8 } } : { tile: TILE }),
    },
  );
}

/** Relative tolerance of a greedy action's Q under TF32 (dqnGreedyCase): ~1e-3 a layer, four layers. */
const GREEDY_RTOL = 1e-2;

/**
 * A CUDA TF32 build acting greedily (epsilon 0 in both launches): its Q-values reach no output, so
 * each action is checked against the f32 reference net on the state the kernel chose it in. Output:
 * per step, (max Q - Q(a)) / max |Q| under the reference (0 where the kernel took a best action);
 * expected all zeros within GREEDY_RTOL. Trajectories may fork at near ties, so nothing else is
 * compared (dqnTf32Case checks the simulator's outputs).
 */
function dqnGreedyCase(variant: 'tiled' | 'cluster'): ParityCase {
  const cfg = parityConfig('dqn');
  cfg.rollout.episodes = N;
  const nets = memo(() => dqnNets('plain', cfg));
  const shortfall = (run: DqnRun): Outputs => {
    const out = new Float32Array(2 * N * L);
    const q = new Float32Array(NUM_ACTIONS);
    run.rollouts.forEach((r, k) => {
      for (let i = 0; i < N * L; i++) {
        forwardDueling(
          nets().layout,
          nets().online,
          r.states.subarray(i * STATE_DIM, (i + 1) * STATE_DIM),
          q,
        );
        const scale = q.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
        out[k * N * L + i] = scale > 0 ? (q[argmaxQ(q)] - q[r.actions[i]]) / scale : 0;
      }
    });
    return { shortfall: out };
  };
  return {
    name: `collect_dqn plain ${variant} TF32 tensor cores N=${N} L=${L}${variant === 'cluster' ? ' (8 CTAs x 8 episodes)' : ''}, greedy: each action a best one of the f32 net within ${GREEDY_RTOL}`,
    kernel: variant === 'cluster' ? 'collect_dqn_cluster' : 'collect_dqn',
    backends: ['cuda'],
    tolerance: { kind: 'close', atol: GREEDY_RTOL, rtol: 0 },
    expected: memo(() => ({ shortfall: new Float32Array(2 * N * L) })),
    actual: async (backend: Backend) =>
      shortfall(
        await dqnDeviceRun(
          {
            backend,
            cfg,
            algo: 'dqn',
            variant,
            constants: { TF32: 1 },
            ...(variant === 'cluster' ? { cluster: 8, tile: { tileEpisodes: 8 } } : { tile: TILE }),
          },
          nets(),
          [0, 0],
        ),
      ),
  };
}

/** The collection kernels' cases, tiled first, then the seed variants the benchmark compares. */
export function collectParityCases(): ParityCase[] {
  return [
    dqnCase('dqn', 'tiled'),
    dqnCase('c51', 'tiled'),
    dqnCase(
      'c51',
      'tiled',
      C51_WHOLE,
      false,
      ' (1 episode x 128 threads: one pass over the advantage logits)',
      // The one-pass path is the CUDA exact build's only (WGSL's C51 code is the case above's), so
      // WebGPU and the CPU skip it (on lavapipe it took 41 s).
      ['cuda'],
    ),
    dqnCase('iqn', 'tiled'),
    ppoCase('tiled'),
    dqnCase('dqn', 'tiled', QUAD2_DQN),
    ppoCase('tiled', QUAD2_PPO),
    dqnCase('dqn', 'seed'),
    dqnCase('dqn', 'cluster'),
    dqnCase('dqn', 'tiled', TILE, true),
    dqnCase('dqn', 'cluster', TILE, true),
    dqnTf32Case('tiled'),
    dqnTf32Case('cluster'),
    dqnGreedyCase('tiled'),
    dqnGreedyCase('cluster'),
    ppoCase('seed'),
  ];
}
