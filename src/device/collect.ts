/**
 * Device-resident experience collection: the market, the networks, the per-episode state and
 * the rollout buffers live on a Backend; one `launch()` is one dispatch of collect_dqn or
 * collect_ppo (N episodes x L steps), with per-launch scalars as uniforms. Nothing comes back
 * to the host unless asked (`readDqn` / `readPpo` / `readEnv`), and weights are uploaded only
 * when `setWeights` is called. Episodes persist across launches; the Philox step counter
 * (`stepBase`) advances by L per launch, so consecutive launches continue every random stream
 * exactly as one longer launch would.
 *
 * The same object runs on every backend: on the CPU backend the dispatch runs the reference
 * collectors (src/kernels/collect_*.ts), so a trainer written against it is backend-agnostic.
 */

import { capsOf } from '../backend/caps.js';
import { CLUSTER_TUNING, tuningFor } from '../backend/tuning.js';
import type { Backend, ClusterOccupancy, DeviceBuffer, Dispatch, KernelSpec } from '../backend/types.js';
import type { DqnRollout, PpoRollout } from '../collect/rollout.js';
import type { Config } from '../config.js';
import type { Market, SplitRange } from '../data/types.js';
import { envParams } from '../env/params.js';
import { createEnv, ENV_F, ENV_I, type EnvState } from '../env/state.js';
import {
  type CollectDqnOptions,
  collectDqnDispatch,
  collectDqnSpec,
  cudaClusterSharedBytes,
  DEFAULT_CLUSTER,
  DQN_OUTPUT,
  DQN_UNIFORMS,
  dqnNetsSize,
  dqnWorkgroupBytes,
  HeadCode,
} from '../kernels/collect_dqn.js';
import { envUniforms, type OutputLayout, outputBytes, sectionViews } from '../kernels/collect_layout.js';
import {
  type CollectPpoOptions,
  collectPpoDispatch,
  collectPpoSpec,
  PPO_OUTPUT,
  ppoNetsSize,
  ppoWorkgroupBytes,
} from '../kernels/collect_ppo.js';
import { MAX_GROUPS_PER_DIM } from '../kernels/grid.js';
import {
  curiosityLayout,
  duelingLayout,
  ppoActorLayout,
  ppoCriticLayout,
  type QHead,
} from '../nets/layout.js';
import { seedToKey } from '../rng/philox.js';
import { type CollectAlgo, chooseTile, type TileShape } from './tile_choice.js';

export type { CollectAlgo, TileShape } from './tile_choice.js';
export { CUDA_TF32_WIDE_THREADS, chooseTile, QUAD_ENGINE_MIN_ROWS } from './tile_choice.js';
export type CollectVariant = 'tiled' | 'seed' | 'cluster';

export interface DeviceCollectorInit {
  backend: Backend;
  market: Market;
  /** Bars the episodes use (their start bars and every bar they touch). */
  split: SplitRange;
  /** env, rollout (episodes, steps), dqn / ppo scalars and train.seed are read. */
  cfg: Config;
  algo: CollectAlgo;
  /**
   * The kernel variant; undefined: the collector's own choice (chooseDqnVariant: the cluster kernel
   * where the device and N make it the faster, else `tiled`). `seed`: the seed's one thread per
   * episode (benchmark only).
   */
  variant?: CollectVariant;
  /**
   * `cluster` variant (CUDA sm_90+, plain DQN head): CTAs per thread-block cluster (default 8);
   * episodes per cluster come from tile.tileEpisodes, threads per CTA from tile.threads.
   */
  cluster?: number;
  /** Overrides of the automatically chosen tile shape. */
  tile?: Partial<TileShape>;
  /** Whether the curiosity bonus is computed (default true). */
  curiosity?: boolean;
  /**
   * Extra kernel constants merged into the spec, for one backend's twin: `{ TF32: 1 }` selects
   * the CUDA kernels' tensor-core mode (docs/COLLECT.md); the other twins ignore names they do
   * not use.
   */
  constants?: Record<string, number>;
}

/**
 * The collector's arithmetic in `foxhunt train` for `algo` at the run's matmul precision: TF32
 * tensor cores (constant TF32 = 1) for PPO and the plain DQN head when the precision is tf32 (their
 * TF32 builds have parity cases), exact f32 otherwise (the C51 and IQN heads always).
 */
export function trainCollectPrecision(algo: CollectAlgo, precision: 'exact' | 'tf32'): 'exact' | 'tf32' {
  return precision === 'tf32' && (algo === 'ppo' || algo === 'dqn') ? 'tf32' : 'exact';
}

/** Whether the kernels run their CUDA tensor-core mode (constant TF32 = 1). */
const tensorCores = (init: DeviceCollectorInit) =>
  capsOf(init.backend).features.tf32TensorCores && init.constants?.TF32 === 1;

function withConstants(spec: KernelSpec, extra: Record<string, number> | undefined): KernelSpec {
  return extra ? { ...spec, constants: { ...spec.constants, ...extra } } : spec;
}

const HEAD_OF: Record<Exclude<CollectAlgo, 'ppo'>, QHead> = { dqn: 'plain', c51: 'c51', iqn: 'iqn' };

/** Threads per workgroup of the seed variant: one episode each, as in the seed design. */
const SEED_THREADS = 64;

/** Workgroup memory a backend offers its kernels (CUDA and the CPU have no WGSL limit to meet). */
const workgroupBytes = (backend: Backend): number => capsOf(backend).limits.workgroupStorageBytes;

/** Threads per CTA of the cluster variant unless given. */
const CLUSTER_THREADS: number = CLUSTER_TUNING.threads;
/** Opt-in shared memory per block on sm_90, the only architecture with clusters today. */
const SM90_SHARED: number = CLUSTER_TUNING.sharedBytes;

/**
 * The cluster variant's shape: `cluster` CTAs per cluster (default 8, the portable maximum) and
 * episodes per cluster so that the clusters fill ~128 CTAs, halved while the shared-memory plan does
 * not fit; then, on CUDA, raised where the GPU holds fewer such clusters at once than N needs
 * (residentClusterEpisodes: an H200 holds 15 clusters of 8 CTAs, so N = 128 runs as 15 clusters of 9).
 */
function clusterOptions(
  base: Pick<CollectDqnOptions, 'head' | 'atoms' | 'iqnEmbed' | 'actTaus' | 'variant'>,
  init: DeviceCollectorInit,
): CollectDqnOptions {
  const caps = capsOf(init.backend);
  if (!caps.features.clusters)
    throw new Error(
      `collect dqn: the cluster variant runs on CUDA (sm_90+) only, not on ${caps.kind}${caps.architecture ? ` ${caps.architecture}` : ''}; use the tiled variant`,
    );
  const cluster = init.cluster ?? DEFAULT_CLUSTER;
  const n = init.cfg.rollout.episodes;
  const tf32 = tensorCores(init);
  let threads = init.tile?.threads ?? CLUSTER_THREADS;
  let e = clusterEpisodes(n, cluster, init.tile?.tileEpisodes, tf32, threads);
  const shape = { ...base, threads, tj: 32, kt: 8, tauRows: 1, cluster, tf32 };
  const backend = init.backend as Partial<ClusterOccupancy>;
  if (init.tile?.tileEpisodes === undefined && backend.maxActiveClusters) {
    const resident = backend.maxActiveClusters(collectDqnSpec({ ...shape, tileEpisodes: e }));
    e = residentClusterEpisodes(n, e, resident, cluster, tf32, threads);
  }
  if (init.tile?.threads === undefined) {
    const more = clusterThreads(e);
    if (cudaClusterSharedBytes({ tileEpisodes: e, cluster, tf32, threads: more }) <= SM90_SHARED)
      threads = more;
  }
  if (Math.ceil(n / e) * cluster > MAX_GROUPS_PER_DIM)
    throw new Error(
      `collect dqn: the cluster variant would launch ${Math.ceil(n / e) * cluster} blocks (> ${MAX_GROUPS_PER_DIM}) for ${n} episodes; it is meant for small N: use the tiled variant`,
    );
  return { ...shape, threads, tileEpisodes: e };
}

/**
 * Threads per CTA of the cluster variant for E episodes per cluster: 256, or a warp for each of up to
 * 10 episodes (CLUSTER_TUNING.warpPerEpisodeFrom, maxThreads).
 */
export function clusterThreads(e: number): number {
  return e >= CLUSTER_TUNING.warpPerEpisodeFrom
    ? Math.min(32 * e, CLUSTER_TUNING.maxThreads)
    : CLUSTER_THREADS;
}

/**
 * Episodes per cluster once the GPU has said how many clusters it holds at once (`resident`, from
 * cuOccupancyMaxActiveClusters): more clusters than that run in waves (H200, 8-CTA clusters: 15 at a
 * time, so N = 128 as 16 clusters of 8 takes two waves, twice the time of one), so where
 * ceil(n / resident) episodes per cluster still fit (TF32: one m16 tile; the shared-memory plan),
 * that is the choice; otherwise `e` stands.
 */
export function residentClusterEpisodes(
  n: number,
  e: number,
  resident: number | undefined,
  cluster = DEFAULT_CLUSTER,
  tf32 = false,
  threads = CLUSTER_THREADS,
): number {
  if (resident === undefined || resident <= 0 || Math.ceil(n / e) <= resident) return e;
  const fewer = Math.ceil(n / resident);
  if (tf32 && fewer > CLUSTER_TUNING.tf32MaxEpisodes) return e;
  if (cudaClusterSharedBytes({ tileEpisodes: fewer, cluster, tf32, threads }) > SM90_SHARED) return e;
  return fewer;
}

/**
 * Episodes per cluster of the cluster variant for N episodes (see clusterOptions); the TF32 build
 * (`tf32`, one m16 tile of rows) takes at most 16.
 */
export function clusterEpisodes(
  n: number,
  cluster = DEFAULT_CLUSTER,
  override?: number,
  tf32 = false,
  threads = CLUSTER_THREADS,
): number {
  if (override !== undefined) return override;
  let e = Math.ceil(n / Math.max(1, Math.floor(CLUSTER_TUNING.targetCtas / cluster)));
  if (tf32) e = Math.min(e, CLUSTER_TUNING.tf32MaxEpisodes);
  while (e > 1 && cudaClusterSharedBytes({ tileEpisodes: e, cluster, tf32, threads }) > SM90_SHARED)
    e = Math.ceil(e / 2);
  return e;
}

/** Whether the cluster variant can take N episodes in one launch (its grid fits one dimension). */
export function clusterFits(n: number, cluster = DEFAULT_CLUSTER, override?: number, tf32 = false): boolean {
  return Math.ceil(n / clusterEpisodes(n, cluster, override, tf32)) * cluster <= MAX_GROUPS_PER_DIM;
}

/**
 * The DQN kernel variant a collector runs when none is asked for: the thread-block cluster kernel
 * for the plain head on a device with clusters (caps.features.clusters) up to the tuning row's
 * `clusterUpTo` N for the precision (`tf32`: the tensor-core build), where its grid fits and no
 * WGSL tile engine is asked for; the tiled kernel everywhere else.
 */
export function chooseDqnVariant(
  backend: Pick<Backend, 'kind' | 'info'>,
  algo: Exclude<CollectAlgo, 'ppo'>,
  n: number,
  tf32: boolean,
  tile?: Partial<TileShape>,
): CollectVariant {
  const caps = capsOf(backend);
  const upTo = tuningFor(caps).collect.clusterUpTo;
  const cluster =
    algo === 'dqn' &&
    caps.features.clusters &&
    upTo !== undefined &&
    n <= (tf32 ? upTo.tf32 : upTo.exact) &&
    tile?.engine === undefined &&
    clusterFits(n, DEFAULT_CLUSTER, tile?.tileEpisodes, tf32);
  return cluster ? 'cluster' : 'tiled';
}

/** Common state and buffers of both collectors. */
abstract class DeviceCollector {
  readonly backend: Backend;
  readonly n: number;
  readonly steps: number;
  readonly spec: KernelSpec;
  /** Global step of the next launch's first step (the Philox step counter). */
  stepBase = 0;
  protected readonly buffers: DeviceBuffer[];
  protected readonly market: Market;
  protected readonly split: SplitRange;
  protected readonly cfg: Config;
  protected readonly base: Record<string, number>;
  private readonly layout: OutputLayout;

  protected constructor(
    init: DeviceCollectorInit,
    spec: KernelSpec,
    netsFloats: number,
    layout: OutputLayout,
  ) {
    const { backend, market, split, cfg } = init;
    this.backend = backend;
    this.market = market;
    this.split = split;
    this.cfg = cfg;
    this.n = cfg.rollout.episodes;
    this.steps = cfg.rollout.steps;
    this.spec = spec;
    this.layout = layout;
    checkMarketFits(backend, market);
    const params = envParams(cfg.env);
    const env = createEnv(market, split, params, this.n, cfg.train.seed);
    const out = outputBytes(layout, this.n, this.steps);
    const make = (bytes: number, label: string) =>
      backend.createBuffer(Math.max(4, bytes), `collect ${label}`);
    this.buffers = [
      make(market.features.byteLength, 'features'),
      make(market.ohlc.byteLength, 'ohlc'),
      make(market.spreadBps.byteLength, 'spread'),
      make(params.entropyTable.byteLength, 'entropy'),
      make(netsFloats * 4, 'nets'),
      make(env.f.byteLength, 'env_f'),
      make(env.i.byteLength, 'env_i'),
      make(env.window.byteLength, 'div_window'),
      make(out.f, 'out_f'),
      make(out.i, 'out_i'),
    ];
    backend.upload(this.buffers[0], market.features);
    backend.upload(this.buffers[1], market.ohlc);
    backend.upload(this.buffers[2], market.spreadBps);
    backend.upload(this.buffers[3], params.entropyTable);
    this.writeEnv(env);
    this.base = {
      n: this.n,
      steps: this.steps,
      curiosity: init.curiosity === false ? 0 : 1,
      ...envUniforms(params, split, seedToKey(cfg.train.seed)),
    };
  }

  /** Replaces the per-episode state (e.g. from a checkpoint). */
  writeEnv(env: EnvState): void {
    if (env.n !== this.n)
      throw new Error(`collect: the state holds ${env.n} episodes, the collector ${this.n}`);
    this.backend.upload(this.buffers[5], env.f);
    this.backend.upload(this.buffers[6], env.i);
    this.backend.upload(this.buffers[7], env.window);
  }

  /** The per-episode state as it is on the device now. */
  async readEnv(): Promise<EnvState> {
    const [f, i, w] = await Promise.all([5, 6, 7].map((b) => this.backend.download(this.buffers[b])));
    return {
      n: this.n,
      w: this.cfg.env.diversityWindow,
      split: { ...this.split },
      key: seedToKey(this.cfg.train.seed),
      f: new Float32Array(f, 0, this.n * ENV_F),
      i: new Int32Array(i, 0, this.n * ENV_I),
      window: new Int32Array(w, 0, this.n * this.cfg.env.diversityWindow),
    };
  }

  /** Uploads `data` as the network stored at `offset` floats into the nets buffer. */
  protected uploadNet(data: Float32Array | undefined, offset: number, size: number, what: string): void {
    if (!data) return;
    if (data.length !== size) throw new Error(`collect: ${what} has ${data.length} floats, expected ${size}`);
    this.backend.upload(this.buffers[4], data, offset * 4);
  }

  /** The rollout buffers' sections as typed views of one download each. */
  protected async readSections(): Promise<Record<string, Float32Array | Int32Array>> {
    const [f, i] = await Promise.all([
      this.backend.download(this.buffers[8]),
      this.backend.download(this.buffers[9]),
    ]);
    return sectionViews(this.layout, new Float32Array(f), new Int32Array(i), this.n, this.steps);
  }

  /** The device buffers in binding order (out_f and out_i hold the rollout). */
  get deviceBuffers(): readonly DeviceBuffer[] {
    return this.buffers;
  }

  destroy(): void {
    for (const b of this.buffers) this.backend.destroyBuffer(b);
  }
}

export interface DqnWeights {
  online?: Float32Array;
  curiosity?: Float32Array;
}

/** The collect_dqn build a DqnDeviceCollector of `init` runs: its variant, tile and head. */
export function dqnCollectorOptions(init: DeviceCollectorInit): CollectDqnOptions {
  if (init.algo === 'ppo') throw new Error('DqnDeviceCollector: use PpoDeviceCollector for ppo');
  const head = HEAD_OF[init.algo];
  const q = init.cfg.dqn;
  const variant =
    init.variant ??
    chooseDqnVariant(init.backend, init.algo, init.cfg.rollout.episodes, tensorCores(init), init.tile);
  const base = { head, atoms: q.atoms, iqnEmbed: q.iqnEmbed, actTaus: q.iqnActTau, variant };
  if (variant === 'cluster') return clusterOptions(base, init);
  const limit = workgroupBytes(init.backend);
  const shape = chooseTile(
    init.algo,
    init.cfg.rollout.episodes,
    init.backend,
    q.iqnActTau,
    variant === 'seed' ? { threads: SEED_THREADS, ...init.tile } : init.tile,
    (t) => dqnWorkgroupBytes({ ...base, ...t }) <= limit,
    variant === 'tiled' && tensorCores(init),
  );
  return {
    ...base,
    ...shape,
    tileEpisodes: variant === 'seed' ? shape.threads : shape.tileEpisodes,
  };
}

/**
 * Throws one clear error when the market's features (51 f32 per bar, the largest binding the
 * collectors and the device validation share) exceed the device's largest storage binding:
 * 128 MiB on lavapipe and many browsers holds ~658k bars, under a 5-year minute file.
 */
export function checkMarketFits(backend: Backend, market: Market): void {
  const lim = backend.info.limits;
  const most = Math.min(
    Number(lim.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY),
    Number(lim.maxBufferSize ?? Number.POSITIVE_INFINITY),
  );
  const bytes = market.features.byteLength;
  if (bytes <= most) return;
  const perBar = bytes / market.n;
  throw new Error(
    `the market's ${market.n} bars take ${bytes} bytes of features, over this device's largest storage ` +
      `buffer (${most} bytes: ${Math.floor(most / perBar)} bars); train on fewer bars (a shorter --data file), ` +
      'or another backend (--backend cpu, or cuda)',
  );
}

/** collect_dqn on a backend (plain, C51 or IQN head). */
export class DqnDeviceCollector extends DeviceCollector {
  readonly head: QHead;
  readonly options: CollectDqnOptions;

  constructor(init: DeviceCollectorInit) {
    const options = dqnCollectorOptions(init);
    super(init, withConstants(collectDqnSpec(options), init.constants), dqnNetsSize(options), DQN_OUTPUT);
    this.head = options.head;
    this.options = options;
  }

  /** Uploads whichever networks are given (flat buffers in duelingLayout / curiosityLayout). */
  setWeights(w: DqnWeights): void {
    const q = duelingLayout(this.head, this.options.atoms, this.options.iqnEmbed).size;
    this.uploadNet(w.online, 0, q, 'online');
    this.uploadNet(w.curiosity, q, curiosityLayout().size, 'curiosity');
  }

  /** The dispatch of one launch at the current stepBase (for timing; does not advance). */
  dispatch(epsilon: number): Dispatch {
    const q = this.cfg.dqn;
    const uniforms: Record<string, number> = {
      ...this.base,
      stepBase: this.stepBase >>> 0,
      epsilon: Math.fround(epsilon),
      vMin: Math.fround(q.vMin),
      vMax: Math.fround(q.vMax),
      head: HeadCode[this.head],
      atoms: q.atoms,
      actTaus: q.iqnActTau,
      iqnEmbed: q.iqnEmbed,
    };
    for (const u of DQN_UNIFORMS)
      if (!(u.name in uniforms)) throw new Error(`collect_dqn: uniform ${u.name} unset`);
    return collectDqnDispatch(this.spec, [...this.buffers], uniforms);
  }

  /** One launch: N x L experiences into the rollout buffers; advances stepBase by L. */
  launch(epsilon: number): void {
    this.backend.run([this.dispatch(epsilon)]);
    this.stepBase += this.steps;
  }

  async readDqn(): Promise<DqnRollout> {
    const s = await this.readSections();
    return {
      n: this.n,
      steps: this.steps,
      states: s.states as Float32Array,
      actions: s.actions as Int32Array,
      rewards: s.rewards as Float32Array,
      nextStates: s.nextStates as Float32Array,
      dones: s.dones as Int32Array,
      truncateds: s.truncateds as Int32Array,
      components: s.components as Float32Array,
    };
  }
}

export interface PpoWeights {
  actor?: Float32Array;
  critic?: Float32Array;
  curiosity?: Float32Array;
}

/** collect_ppo on a backend. */
export class PpoDeviceCollector extends DeviceCollector {
  readonly options: CollectPpoOptions;

  constructor(init: DeviceCollectorInit) {
    if (init.algo !== 'ppo') throw new Error('PpoDeviceCollector: use DqnDeviceCollector for dqn, c51, iqn');
    const variant = init.variant ?? 'tiled';
    if (variant === 'cluster') throw new Error('collect ppo: the cluster variant is DQN (plain head) only');
    const limit = workgroupBytes(init.backend);
    const shape = chooseTile(
      'ppo',
      init.cfg.rollout.episodes,
      init.backend,
      1,
      variant === 'seed' ? { threads: SEED_THREADS, ...init.tile } : init.tile,
      (t) => ppoWorkgroupBytes({ variant, ...t }) <= limit,
      variant === 'tiled' && tensorCores(init),
    );
    const options: CollectPpoOptions = {
      variant,
      ...shape,
      tileEpisodes: variant === 'seed' ? shape.threads : shape.tileEpisodes,
    };
    super(init, withConstants(collectPpoSpec(options), init.constants), ppoNetsSize(), PPO_OUTPUT);
    this.options = options;
  }

  /** Uploads whichever networks are given (flat buffers in ppoActorLayout / ppoCriticLayout / curiosityLayout). */
  setWeights(w: PpoWeights): void {
    const a = ppoActorLayout().size;
    const v = ppoCriticLayout().size;
    this.uploadNet(w.actor, 0, a, 'actor');
    this.uploadNet(w.critic, a, v, 'critic');
    this.uploadNet(w.curiosity, a + v, curiosityLayout().size, 'curiosity');
  }

  dispatch(): Dispatch {
    const p = this.cfg.ppo;
    return collectPpoDispatch(this.spec, [...this.buffers], {
      ...this.base,
      stepBase: this.stepBase >>> 0,
      gamma: Math.fround(p.gamma),
      lambda: Math.fround(p.lambda),
    });
  }

  /** One launch: N x L experiences with GAE into the rollout buffers; advances stepBase by L. */
  launch(): void {
    this.backend.run([this.dispatch()]);
    this.stepBase += this.steps;
  }

  async readPpo(): Promise<PpoRollout> {
    const s = await this.readSections();
    return {
      n: this.n,
      steps: this.steps,
      states: s.states as Float32Array,
      actions: s.actions as Int32Array,
      logProbs: s.logProbs as Float32Array,
      values: s.values as Float32Array,
      rewards: s.rewards as Float32Array,
      dones: s.dones as Int32Array,
      truncateds: s.truncateds as Int32Array,
      advantages: s.advantages as Float32Array,
      returns: s.returns as Float32Array,
      components: s.components as Float32Array,
    };
  }
}
