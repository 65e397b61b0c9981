/**
 * The collection benchmark behind `foxhunt bench collect`: env-steps/s of collect_dqn or
 * collect_ppo on one backend for a sweep of N, the tiled kernel beside the seed's one thread per
 * episode, with the model FLOPs per env step (from the layouts) and the achieved FLOP/s (`foxhunt
 * bench` divides it by the device's datasheet peaks, src/backend/peaks.ts), plus the bytes a
 * step moves: weights read per env step (the nets once per workgroup step, shared by its
 * episodes) and experience written.
 *
 * Timing: one warm-up launch (pipeline compile), then more launches until WARM_MS of wall clock
 * have passed (warmUp), then Backend.time over `repeats` launches (device time: timestamp queries
 * on WebGPU, events on CUDA, wall clock on the CPU). Episodes keep stepping between launches, as in
 * training.
 */
import { capsOf } from '../backend/caps.js';
import type { Backend, Dispatch } from '../backend/types.js';
import type { Config } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { DQN_OUTPUT } from '../kernels/collect_dqn.js';
import { outputBytes } from '../kernels/collect_layout.js';
import { PPO_OUTPUT } from '../kernels/collect_ppo.js';
import { initParams } from '../nets/forward.js';
import {
  curiosityLayout,
  duelingLayout,
  type Layer,
  NetId,
  ppoActorLayout,
  ppoCriticLayout,
  type QHead,
} from '../nets/layout.js';
import {
  type CollectAlgo,
  type CollectVariant,
  DqnDeviceCollector,
  PpoDeviceCollector,
  type TileShape,
} from './collect.js';

const fma = (layers: readonly Layer[]) => layers.reduce((s, l) => s + l.in * l.out, 0);

/**
 * Model FLOPs of one env step (2 per multiply-add): DQN online net on s (IQN: trunk once,
 * embedding and streams per acting tau), PPO actor and critic on s, and the
 * curiosity model. The rare extra critic pass of a truncated PPO step is not counted.
 */
export function collectFlopsPerStep(algo: CollectAlgo, cfg: Config): number {
  const curiosity = fma(curiosityLayout().layers);
  if (algo === 'ppo') return 2 * (fma(ppoActorLayout().layers) + fma(ppoCriticLayout().layers) + curiosity);
  const head: QHead = algo === 'dqn' ? 'plain' : algo;
  const layers = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed).layers;
  const trunk = layers.filter((l) => l.name.startsWith('shared_layers'));
  const rest = layers.filter((l) => !l.name.startsWith('shared_layers'));
  const perNet = fma(trunk) + (head === 'iqn' ? cfg.dqn.iqnActTau : 1) * fma(rest);
  return 2 * (perNet + curiosity);
}

/**
 * Wall-clock time the launches before the timed ones take at least, after the first (which
 * compiles the pipeline). A GPU left idle while a process compiles its shaders for seconds drops
 * its clocks (the H200 to 345 MHz after 4 s idle), so the timed launches follow enough work to have
 * raised them, however short one launch is. (Not the cause of the 4-6x slow processes the H200
 * showed now and then: after 4-10 s idle, processes without this warm-up ran at full speed;
 * docs/BENCHMARKS.md, fourteenth session.)
 */
export const WARM_MS = 300;

/** WARM_MS, or FOXHUNT_BENCH_WARM_MS where set (bench experiments: 0 is one warm-up launch only). */
function warmMs(): number {
  const v = typeof process === 'undefined' ? undefined : process.env.FOXHUNT_BENCH_WARM_MS;
  if (v === undefined || v === '') return WARM_MS;
  const ms = Number(v);
  if (!Number.isFinite(ms) || ms < 0)
    throw new Error(`FOXHUNT_BENCH_WARM_MS must be a number of milliseconds >= 0, got ${v}`);
  return ms;
}

/**
 * Runs one launch of `dispatch()` (it compiles the pipeline), then on a GPU more until WARM_MS of
 * wall clock have passed (FOXHUNT_BENCH_WARM_MS overrides), so the timed launches start at the
 * GPU's working clocks.
 */
export async function warmUp(backend: Backend, dispatch: () => Dispatch): Promise<void> {
  backend.run([dispatch()]);
  await backend.sync();
  // The CPU has no clocks to raise.
  if (capsOf(backend).deviceClass === 'cpu') return;
  const ms = warmMs();
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    backend.run([dispatch()]);
    await backend.sync();
  }
}

export interface CollectBenchOptions {
  backend: Backend;
  market: Market;
  split: SplitRange;
  cfg: Config;
  algo: CollectAlgo;
  /** The kernel variant; undefined: the collector's own choice, what `foxhunt train` runs. */
  variant?: CollectVariant;
  /** Cluster variant: CTAs per cluster (default 8). */
  cluster?: number;
  episodes: number;
  steps: number;
  repeats: number;
  tile?: Partial<TileShape>;
  /** `tf32`: the CUDA kernels' tensor-core mode (constant TF32 = 1); `exact` otherwise. */
  precision?: 'exact' | 'tf32';
  /** Extra kernel constants merged over the ones the options imply (bench collect --constants). */
  constants?: Record<string, number>;
}

export interface CollectBenchResult {
  algo: CollectAlgo;
  variant: CollectVariant;
  precision: 'exact' | 'tf32';
  episodes: number;
  steps: number;
  /** Episodes per workgroup (1 for the seed variant: one per thread), threads per workgroup. */
  tileEpisodes: number;
  threads: number;
  /** Cluster variant: CTAs per cluster (each holding 1/cluster of every layer); absent otherwise. */
  cluster?: number;
  /** CollectBenchOptions.constants, when set. */
  constants?: Record<string, number>;
  /** The tile engine's threads across outputs and weight slice (WGSL). */
  tj: number;
  kt: number;
  /** The WGSL tile engine (0 scalar, 2 quad blocks; 0 on CUDA and the CPU, which ignore it). */
  engine: number;
  /** Device milliseconds per launch (N x L env steps). */
  ms: number;
  envStepsPerSec: number;
  flopsPerStep: number;
  flopsPerSec: number;
  /** Weight bytes read per env step: the nets once per workgroup step, shared by its episodes. */
  weightBytesPerStep: number;
  /** Experience bytes written per env step. */
  outputBytesPerStep: number;
}

/** Steps per launch that keep one output binding under `maxBinding` bytes (at least 1). */
export function stepsThatFit(algo: CollectAlgo, episodes: number, steps: number, maxBinding: number): number {
  const layout = algo === 'ppo' ? PPO_OUTPUT : DQN_OUTPUT;
  const perStep = outputBytes(layout, episodes, 1).f;
  return Math.max(1, Math.min(steps, Math.floor(maxBinding / perStep)));
}

export async function benchCollect(o: CollectBenchOptions): Promise<CollectBenchResult> {
  const cfg: Config = structuredClone(o.cfg);
  cfg.rollout.episodes = o.episodes;
  cfg.rollout.steps = o.steps;
  const precision = o.precision ?? 'exact';
  const kernelConstants: Record<string, number> | undefined = precision === 'tf32' ? { TF32: 1 } : undefined;
  const constants = o.constants ? { ...kernelConstants, ...o.constants } : kernelConstants;
  const init = {
    backend: o.backend,
    market: o.market,
    split: o.split,
    cfg,
    algo: o.algo,
    variant: o.variant,
    cluster: o.cluster,
    tile: o.tile,
    constants,
  };
  const seed = cfg.train.seed;
  const curiosity = initParams(curiosityLayout(), NetId.Curiosity, seed);
  let collector: DqnDeviceCollector | PpoDeviceCollector;
  let netsFloats: number;
  let epsilon = 0;
  if (o.algo === 'ppo') {
    const c = new PpoDeviceCollector(init);
    const actor = initParams(ppoActorLayout(), NetId.Actor, seed);
    const critic = initParams(ppoCriticLayout(), NetId.Critic, seed);
    c.setWeights({ actor, critic, curiosity });
    netsFloats = actor.length + critic.length + curiosity.length;
    collector = c;
  } else {
    const c = new DqnDeviceCollector(init);
    const layout = duelingLayout(c.head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
    const online = initParams(layout, NetId.QOnline, seed);
    c.setWeights({ online, curiosity });
    netsFloats = online.length + curiosity.length;
    epsilon = cfg.dqn.epsilonEnd;
    collector = c;
  }
  try {
    const dispatch = () =>
      collector instanceof DqnDeviceCollector ? collector.dispatch(epsilon) : collector.dispatch();
    await warmUp(o.backend, dispatch);
    const ms = await o.backend.time([dispatch()], o.repeats);
    const steps = o.episodes * o.steps;
    const flopsPerStep = collectFlopsPerStep(o.algo, cfg);
    const envStepsPerSec = steps / (ms / 1e3);
    const shape = collector.options;
    const variant = shape.variant;
    const perGroup = variant === 'seed' ? 1 : shape.tileEpisodes;
    // The cluster variant reads the nets once per launch and cluster, not once per step.
    const weightReaders = variant === 'cluster' ? perGroup * o.steps : perGroup;
    const out = outputBytes(o.algo === 'ppo' ? PPO_OUTPUT : DQN_OUTPUT, 1, 1);
    return {
      algo: o.algo,
      variant,
      precision,
      episodes: o.episodes,
      steps: o.steps,
      tileEpisodes: perGroup,
      threads: shape.threads,
      ...(variant === 'cluster' && collector instanceof DqnDeviceCollector
        ? { cluster: collector.options.cluster }
        : {}),
      ...(o.constants ? { constants: o.constants } : {}),
      tj: shape.tj,
      kt: shape.kt,
      engine: capsOf(o.backend).features.wgsl ? (shape.engine ?? 0) : 0,
      ms,
      envStepsPerSec,
      flopsPerStep,
      flopsPerSec: flopsPerStep * envStepsPerSec,
      weightBytesPerStep: (netsFloats * 4) / weightReaders,
      outputBytesPerStep: out.f + out.i,
    };
  } finally {
    collector.destroy();
  }
}
