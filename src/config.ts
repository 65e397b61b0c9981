/**
 * Every default of SPEC.md in one typed object, one doc comment per field.
 * Load order: defaults <- JSON file (`--config FILE`) <- CLI flags (`--section.field value`).
 * `validateConfig` rejects impossible values with a message that names the field.
 */

export type Algo = 'ppo' | 'dqn' | 'c51' | 'iqn';
export type BackendName = 'auto' | 'cpu' | 'webgpu' | 'cuda';
/** Matmul arithmetic: exact f32, or TF32 tensor cores (CUDA). */
export type Precision = 'exact' | 'tf32';
/** train.precision: a Precision, or `auto` (tf32 on CUDA, exact elsewhere; resolvePrecision). */
export type PrecisionSetting = Precision | 'auto';

/** The arithmetic a run on `backendKind` uses for train.precision `setting`. */
export function resolvePrecision(setting: PrecisionSetting, backendKind: string): Precision {
  if (setting === 'auto') return backendKind === 'cuda' ? 'tf32' : 'exact';
  return setting;
}

export interface DataConfig {
  /** Fraction of bars (after warm-up) in the training split. */
  trainFrac: number;
  /** Fraction of bars in the validation split; the test split gets the rest. */
  valFrac: number;
  /** Longest feature window in bars: warm-up length and the gap between splits. */
  maxLookback: number;
  /** Spread in basis points used when the data has no bid/ask or spread column. */
  defaultSpreadBps: number;
  /** Bars of the built-in synthetic market when no data file is given. */
  synthBars: number;
}

export interface EnvConfig {
  /** Exchange fee per trade, basis points of notional (market and limit orders). */
  feeBps: number;
  /** Maker rebate for passive orders, basis points (passive cost = feeBps - rebateBps). */
  rebateBps: number;
  /** Distance of a passive limit order from the last close on the trader's own side, bps. */
  passiveOffsetBps: number;
  /** Fraction of portfolio value kept as cash: target exposure is scaled by (1 - reservePct). */
  reservePct: number;
  /** Initial portfolio value V_0 of every episode. */
  initialCapital: number;
  /** Profit-taking barrier distance from entry, bps. */
  profitTargetBps: number;
  /** Stop-loss barrier distance from entry, bps. */
  stopLossBps: number;
  /** Bars after opening at which a position is closed by the time barrier. */
  maxHoldingBars: number;
  /** Whether a fired barrier ends the episode (done = 1). */
  barrierTerminates: boolean;
  /** Reward multiplier on the relative change of portfolio value. */
  pnlScale: number;
  /** Reward multiplier bonus on a profit-barrier step (+) and on a stop-barrier step (-). */
  barrierRewardScale: number;
  /** |position_norm| above which the risk penalty applies. */
  riskThreshold: number;
  /** Risk penalty slope: penalty = riskPenaltyScale * max(0, |position_norm| - riskThreshold). */
  riskPenaltyScale: number;
  /** Length of the circular window of action categories for the diversity entropy. */
  diversityWindow: number;
  /** Minimum actions in the window before the diversity penalty can apply. */
  diversityMinActions: number;
  /** Entropy (bits) below which the diversity penalty applies. */
  diversityEntropyThreshold: number;
  /** Diversity penalty added to the reward (negative). */
  diversityPenalty: number;
  /** Curiosity bonus = min(curiosityScale * mse, curiosityMaxReward). */
  curiosityScale: number;
  /** Upper bound of the curiosity bonus. */
  curiosityMaxReward: number;
  /** Train the curiosity model every this many collection rounds. */
  curiosityEvery: number;
  /** Curiosity model AdamW batch size. */
  curiosityBatch: number;
  /** Curiosity model AdamW learning rate. */
  curiosityLr: number;
  /** Curiosity model AdamW weight decay. */
  curiosityWeightDecay: number;
  /** Steps after which a running episode is truncated (bootstrapped) and restarted. */
  episodeBars: number;
}

export interface RolloutConfig {
  /** Parallel episodes N. */
  episodes: number;
  /** Steps per launch L; one launch yields N * L experiences. */
  steps: number;
}

export interface PpoConfig {
  /** Discount factor. */
  gamma: number;
  /** GAE lambda. */
  lambda: number;
  /** Surrogate clip range. */
  clip: number;
  /** Value loss coefficient. */
  valueCoef: number;
  /** Entropy bonus coefficient. */
  entropyCoef: number;
  /** Passes over each rollout. */
  updateEpochs: number;
  /** Minibatch size. */
  minibatch: number;
  /** Adam learning rate. */
  lr: number;
  /** Global gradient-norm clip. */
  maxGradNorm: number;
  /** Normalise advantages per minibatch to zero mean, unit variance. */
  normalizeAdvantages: boolean;
}

export interface DqnConfig {
  /** Discount factor. */
  gamma: number;
  /**
   * n-step return length: each collected step is stored with the discounted sum of up to nStep
   * rewards of its episode, cut at an episode end and at the launch's last step (src/learn/replay.ts).
   */
  nStep: number;
  /** Replay capacity in transitions (a ring: the oldest are overwritten); 444 bytes each (110 floats and an action). */
  replayCapacity: number;
  /**
   * Write the replay ring and the PER tree into checkpoints (replay.safetensors, 444 bytes a
   * transition). false keeps checkpoints small and fast; a --resume then starts from an empty
   * replay and continues, but not exactly as the uninterrupted run would.
   */
  checkpointReplay: boolean;
  /** Prioritized replay exponent alpha. */
  priorityAlpha: number;
  /** Importance-sampling exponent at the start (annealed to betaEnd). */
  betaStart: number;
  /** Importance-sampling exponent at the end of the anneal (held after it). */
  betaEnd: number;
  /**
   * Epochs over which beta anneals linearly from betaStart to betaEnd (counted in train steps:
   * betaEpochs * stepsPerEpoch); independent of train.epochs, so a resumed run with more epochs
   * continues the same schedule.
   */
  betaEpochs: number;
  /** Added to |TD| to form a priority (new transitions enter at the largest priority seen). */
  priorityEps: number;
  /** Adam learning rate. */
  lr: number;
  /** Global gradient-norm clip. */
  maxGradNorm: number;
  /** Hard target sync every this many training steps (0 = Polyak after every step, polyakTau; C51's default). */
  targetEvery: number;
  /** Polyak averaging factor when targetEvery is 0. */
  polyakTau: number;
  /** Training batch size. */
  batch: number;
  /** Training steps per epoch (SPEC 9: 300; C51 600, ALGO_DEFAULTS). */
  stepsPerEpoch: number;
  /** Epsilon at the first epoch. */
  epsilonStart: number;
  /** Epsilon floor. */
  epsilonEnd: number;
  /**
   * Epochs over which epsilon decays linearly. 10, not 50: on the synthetic market's validation
   * split plain DQN beat both baselines (the earlier, barrier-closed buy-and-hold) in 37 of 74
   * epochs at 10 against 2 of 78 at 50 (docs/RESULTS.md, 2026-12-05).
   */
  epsilonDecayEpochs: number;
  /** C51 atoms per action. */
  atoms: number;
  /** C51 support minimum. */
  vMin: number;
  /** C51 support maximum. */
  vMax: number;
  /** IQN cosine embedding size. */
  iqnEmbed: number;
  /** IQN tau samples for the online and target quantiles (N = N'). */
  iqnTau: number;
  /** IQN tau samples when acting (K). */
  iqnActTau: number;
  /** Quantile Huber kappa. */
  huberKappa: number;
}

export interface TrainConfig {
  /** Algorithm family. */
  algo: Algo;
  /** Compute backend; `auto` picks CUDA, then hardware WebGPU, then CPU. */
  backend: BackendName;
  /**
   * Matmul arithmetic of the learners (PPO and the DQN family) and of the PPO and plain DQN
   * collectors (C51 and IQN collect in f32): `exact` (f32, the parity mode), `tf32` (CUDA tensor
   * cores, operands rounded to 10-bit mantissas; needs backend `cuda`) or `auto` (the default:
   * tf32 when the run lands on CUDA, exact on WebGPU and the CPU).
   */
  precision: PrecisionSetting;
  /** Epochs to run. */
  epochs: number;
  /** Run seed: the Philox key (low and high u32 of this integer). */
  seed: number;
  /** Output directory for the JSON-lines log and checkpoints. */
  outDir: string;
  /** Write a checkpoint every this many epochs (the last epoch always writes one). */
  checkpointEvery: number;
  /** Bars per year for annualising Sharpe/Sortino; 0 = infer from timestamps. */
  barsPerYear: number;
}

export interface Config {
  data: DataConfig;
  env: EnvConfig;
  rollout: RolloutConfig;
  ppo: PpoConfig;
  dqn: DqnConfig;
  train: TrainConfig;
}

/**
 * The reward terms as SPEC 4-5 first defined them: barrier exits end the episode, a diversity
 * penalty of -0.1 below 1 bit of action entropy, a curiosity bonus of min(1.0 * mse, 0.1), a risk
 * penalty of 0.5 per unit of |position_norm| above 0.8. The defaults turn all four off: on the GPU
 * at default sizes (3 seeds, validation split) each made the policy worse (docs/RESULTS.md,
 * "Reward-term ablation" and "PPO defaults since 2026-12-05"). Kernel tests and parity cases switch
 * them back on so that every path of the collection kernels stays exercised.
 */
export const SPEC_REWARD_TERMS = Object.freeze({
  barrierTerminates: true,
  diversityPenalty: -0.1,
  curiosityScale: 1.0,
  riskPenaltyScale: 0.5,
});

export const defaultConfig: Readonly<Config> = Object.freeze({
  data: { trainFrac: 0.7, valFrac: 0.15, maxLookback: 120, defaultSpreadBps: 2, synthBars: 60_000 },
  env: {
    feeBps: 1,
    rebateBps: 0.2,
    passiveOffsetBps: 1,
    reservePct: 0.05,
    initialCapital: 1,
    profitTargetBps: 50,
    stopLossBps: 30,
    maxHoldingBars: 120,
    barrierTerminates: false,
    pnlScale: 100,
    barrierRewardScale: 0.5,
    riskThreshold: 0.8,
    riskPenaltyScale: 0,
    diversityWindow: 100,
    diversityMinActions: 10,
    diversityEntropyThreshold: 1.0,
    diversityPenalty: 0,
    curiosityScale: 0,
    curiosityMaxReward: 0.1,
    curiosityEvery: 1,
    curiosityBatch: 1024,
    curiosityLr: 1e-3,
    curiosityWeightDecay: 1e-2,
    episodeBars: 500,
  },
  rollout: { episodes: 128, steps: 500 },
  ppo: {
    gamma: 0.99,
    lambda: 0.95,
    clip: 0.2,
    valueCoef: 0.5,
    entropyCoef: 0.01,
    updateEpochs: 10,
    minibatch: 512,
    // SPEC 10 says 3e-4; 1e-4 with the risk penalty off won on validation (docs/RESULTS.md).
    lr: 1e-4,
    maxGradNorm: 0.5,
    normalizeAdvantages: true,
  },
  dqn: {
    gamma: 0.99,
    nStep: 3,
    replayCapacity: 1_000_000,
    checkpointReplay: true,
    priorityAlpha: 0.6,
    betaStart: 0.4,
    betaEnd: 1.0,
    betaEpochs: 20,
    priorityEps: 1e-6,
    lr: 1e-4,
    maxGradNorm: 10,
    targetEvery: 1000,
    polyakTau: 0.005,
    batch: 512,
    stepsPerEpoch: 300,
    epsilonStart: 1.0,
    epsilonEnd: 0.05,
    epsilonDecayEpochs: 10,
    atoms: 51,
    // SPEC 8 says -10 .. 10; -3 .. 3 won on validation over two rounds of seeds (docs/RESULTS.md).
    vMin: -3,
    vMax: 3,
    iqnEmbed: 64,
    iqnTau: 64,
    iqnActTau: 32,
    huberKappa: 1,
  },
  train: {
    algo: 'ppo',
    backend: 'auto',
    precision: 'auto',
    epochs: 20,
    seed: 1,
    outDir: 'runs/latest',
    checkpointEvery: 1,
    barsPerYear: 0,
  },
}) as Config;

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`config: ${field}: ${message}`);
    this.name = 'ConfigError';
  }
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** A deep copy of the defaults, safe to mutate. */
export function cloneDefaults(): Config {
  return structuredClone(defaultConfig) as Config;
}

/**
 * Defaults that differ by algorithm, laid over defaultConfig before the user's file and flags
 * (which still win). Each was chosen on validation (docs/RESULTS.md): C51 moves its target net
 * towards the online net after every train step (Polyak, dqn.polyakTau 0.005), the rest of the
 * DQN family copies it every 1,000 steps; C51 discounts by gamma 0.95, the rest by 0.99; C51 takes
 * 600 train steps an epoch, the rest 300.
 */
export const ALGO_DEFAULTS: Readonly<Partial<Record<Algo, DeepPartial<Config>>>> = Object.freeze({
  c51: { dqn: { targetEvery: 0, gamma: 0.95, stepsPerEpoch: 600 } },
});

/** defaultConfig with `algo`'s own defaults (ALGO_DEFAULTS) and train.algo set to it. */
export function defaultsFor(algo: string): Config {
  const base = cloneDefaults();
  const own = ALGO_DEFAULTS[algo as Algo];
  const out = own ? mergeConfig(base, own, 'defaults') : base;
  out.train.algo = algo as Algo;
  return out;
}

/** The algorithm a config file's patch and flags select (flags win), else the default's. */
export function selectedAlgo(patch: unknown, flags: Record<string, string> = {}): string {
  if (flags['train.algo'] !== undefined) return flags['train.algo'];
  const train = (patch as { train?: { algo?: unknown } } | null | undefined)?.train;
  return typeof train?.algo === 'string' ? train.algo : defaultConfig.train.algo;
}

/** Merges `patch` into `base` (returns a new object); unknown sections or fields are errors. */
export function mergeConfig(base: Config, patch: DeepPartial<Config>, origin = 'config'): Config {
  const out = structuredClone(base) as Config;
  for (const [section, fields] of Object.entries(patch ?? {})) {
    if (!Object.hasOwn(out, section))
      throw new ConfigError(section, `unknown section in ${origin} (known: ${Object.keys(out).join(', ')})`);
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) {
      throw new ConfigError(section, `must be an object in ${origin}`);
    }
    const target = out[section as keyof Config] as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(fields as Record<string, unknown>)) {
      if (!Object.hasOwn(target, key))
        throw new ConfigError(`${section}.${key}`, `unknown field in ${origin}`);
      const expected = typeof target[key];
      // JSON.parse reads 1e999 as Infinity, which JSON.stringify would then write as null.
      if (typeof value !== expected || (expected === 'number' && !Number.isFinite(value))) {
        throw new ConfigError(
          `${section}.${key}`,
          `expected a ${expected === 'number' ? 'finite number' : expected}, got ${typeof value === 'number' ? value : JSON.stringify(value)} in ${origin}`,
        );
      }
      target[key] = value;
    }
  }
  return out;
}

/**
 * A decimal number as text (`3`, `-0.5`, `.5`, `1e-4`, `+2`), without the other forms Number()
 * reads (`0x10`, `0b11`, `0o7`, `Infinity`, the empty string as 0); spaces around it are the
 * caller's to trim.
 */
export const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * Applies `--section.field value` pairs (strings from the command line), coercing to the
 * field's type (numbers: DECIMAL, spaces around them ignored). Returns the new config; throws
 * ConfigError naming the flag on bad input.
 */
export function applyFlags(base: Config, flags: Record<string, string>): Config {
  const patch: Record<string, Record<string, unknown>> = {};
  for (const [path, raw] of Object.entries(flags)) {
    const [section, key, ...rest] = path.split('.');
    if (!section || !key || rest.length)
      throw new ConfigError(path, 'flags take the form --section.field value');
    const sec = Object.hasOwn(base, section)
      ? (base[section as keyof Config] as unknown as Record<string, unknown>)
      : undefined;
    if (!sec)
      throw new ConfigError(
        path,
        `unknown section (known: ${Object.keys(base).join(', ')})${didYouMean(fieldsElsewhere(base, section, key))}`,
      );
    if (!Object.hasOwn(sec, key)) {
      const near = nearestName(key, Object.keys(sec));
      const paths = near ? [`${section}.${near}`] : fieldsElsewhere(base, section, key);
      throw new ConfigError(path, `unknown field${didYouMean(paths)}`);
    }
    const kind = typeof sec[key];
    let value: unknown = raw;
    if (kind === 'number') {
      if (!DECIMAL.test(raw.trim())) throw new ConfigError(path, `expected a decimal number, got "${raw}"`);
      value = Number(raw);
      if (!Number.isFinite(value)) throw new ConfigError(path, `expected a finite number, got "${raw}"`);
    } else if (kind === 'boolean') {
      // on / off as the CLI's own switches (--chain on|off) write them.
      const word = raw.trim();
      if (!Object.hasOwn(BOOLEAN_WORDS, word))
        throw new ConfigError(path, `expected true or false (or on, off), got "${raw}"`);
      value = BOOLEAN_WORDS[word as keyof typeof BOOLEAN_WORDS];
    }
    if (!patch[section]) patch[section] = {};
    patch[section][key] = value;
  }
  return mergeConfig(base, patch as DeepPartial<Config>, 'flags');
}

const BOOLEAN_WORDS = Object.freeze({ true: true, false: false, on: true, off: false });

const didYouMean = (paths: string[]) =>
  paths.length ? ` (did you mean ${paths.map((p) => `--${p}`).join(' or ')}?)` : '';

/**
 * Where a flag `--section.key` that names no field may have been meant, as `section.field` paths:
 * a field of any section named `section` + `key` (`--checkpoint.replay` -> `dqn.checkpointReplay`),
 * else a field named `key` in another section (`--train.lr` -> `ppo.lr`, `dqn.lr`). Case-insensitive.
 */
export function fieldsElsewhere(base: Config, section: string, key: string): string[] {
  const find = (name: string, skip?: string) =>
    Object.entries(base).flatMap(([s, fields]) =>
      s === skip
        ? []
        : Object.keys(fields as object)
            .filter((f) => f.toLowerCase() === name)
            .map((f) => `${s}.${f}`),
    );
  const joined = find(`${section}${key}`.toLowerCase());
  return joined.length ? joined : find(key.toLowerCase(), section);
}

/**
 * The candidate closest to `word` by edit distance (case-insensitive), or null when none is
 * within max(1, a third of the word's length) edits: what a "did you mean" suggests.
 */
export function nearestName(word: string, candidates: readonly string[]): string | null {
  const a = word.toLowerCase();
  let best: string | null = null;
  let bestD = Math.max(1, Math.floor(a.length / 3)) + 1;
  for (const c of candidates) {
    const b = c.toLowerCase();
    let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const row = [i];
      for (let j = 1; j <= b.length; j++)
        row[j] = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row;
    }
    if (prev[b.length] < bestD) {
      bestD = prev[b.length];
      best = c;
    }
  }
  return best;
}

/**
 * Upper bounds of the size fields. The kernel-held ones are what every backend's kernels hold, so
 * a config that validates runs on cpu, webgpu and cuda (device memory permitting: a device too
 * small says so when the run starts); the others keep a slip (100000 for 1000) from a run that
 * takes hours or exhausts memory. test/unit/config-robust.test.ts ties each to what it copies.
 */
export const SIZE_LIMITS = Object.freeze({
  /** C51 atoms: dqn_loss (WGSL and CUDA) holds a sample's atoms in workgroup arrays (DQN_MAX_ATOMS). */
  atoms: 64,
  /** IQN quantiles N = N': iqn_loss holds a sample's target quantiles in workgroup arrays (IQN_MAX_TAU). */
  iqnTau: 64,
  /** IQN cosine features: collect_dqn writes them into a trunk-wide activation row of 256 floats. */
  iqnEmbed: 256,
  /** IQN acting taus: collection runs the streams once per tau and step (8x the default). */
  iqnActTau: 256,
  /**
   * DQN-family batch: the IQN learner's activation arena (batch x iqnTau rows) at the largest
   * iqnTau and iqnEmbed stays within 2^31 floats, the kernels' u32 indexing (src/device/dqn.ts).
   */
  batch: 8192,
  /** PPO minibatch and curiosity batch (128x and 64x the defaults). */
  minibatch: 65_536,
  /** rollout.episodes * rollout.steps: collect_dqn's WGSL twin indexes its 114 floats a step in u32. */
  rolloutSteps: 2 ** 25,
  /** Replay rows: the ring lives on the host too (checkpoints), at most 4 GiB of 444-byte rows (src/engine/cpu_dqn.ts). */
  replayCapacity: Math.floor((4 * 2 ** 30) / 444),
  /** Synthetic bars: their [T, 51] f32 features (2 GB at this size) fit one WebGPU storage binding. */
  synthBars: 10_000_000,
});

function check(cond: boolean, field: string, message: string): void {
  if (!cond) throw new ConfigError(field, message);
}

const isInt = (x: number) => Number.isInteger(x);

/** Throws ConfigError naming the first impossible field; returns the config unchanged. */
export function validateConfig(c: Config): Config {
  const LIM = SIZE_LIMITS;
  const d = c.data;
  check(d.trainFrac > 0 && d.trainFrac < 1, 'data.trainFrac', 'must be in (0, 1)');
  check(d.valFrac > 0 && d.valFrac < 1, 'data.valFrac', 'must be in (0, 1)');
  check(
    d.trainFrac + d.valFrac < 1,
    'data.valFrac',
    'trainFrac + valFrac must leave room for a test split (< 1)',
  );
  check(
    isInt(d.maxLookback) && d.maxLookback >= 60,
    'data.maxLookback',
    'must be an integer >= 60 (longest feature window)',
  );
  check(d.defaultSpreadBps >= 0, 'data.defaultSpreadBps', 'must be >= 0');
  check(
    isInt(d.synthBars) && d.synthBars >= 1000 && d.synthBars <= LIM.synthBars,
    'data.synthBars',
    `must be an integer in [1000, ${LIM.synthBars}]`,
  );

  const e = c.env;
  for (const k of [
    'feeBps',
    'rebateBps',
    'passiveOffsetBps',
    'curiosityScale',
    'curiosityMaxReward',
  ] as const) {
    check(e[k] >= 0, `env.${k}`, 'must be >= 0');
  }
  check(e.reservePct >= 0 && e.reservePct < 1, 'env.reservePct', 'must be in [0, 1)');
  check(e.initialCapital > 0, 'env.initialCapital', 'must be > 0');
  check(e.profitTargetBps > 0, 'env.profitTargetBps', 'must be > 0');
  check(e.stopLossBps > 0 && e.stopLossBps < 1e4, 'env.stopLossBps', 'must be in (0, 10000)');
  check(isInt(e.maxHoldingBars) && e.maxHoldingBars >= 1, 'env.maxHoldingBars', 'must be an integer >= 1');
  check(e.pnlScale > 0, 'env.pnlScale', 'must be > 0');
  check(e.barrierRewardScale >= 0 && e.barrierRewardScale < 1, 'env.barrierRewardScale', 'must be in [0, 1)');
  check(e.riskThreshold >= 0 && e.riskThreshold <= 1, 'env.riskThreshold', 'must be in [0, 1]');
  check(e.riskPenaltyScale >= 0, 'env.riskPenaltyScale', 'must be >= 0');
  check(
    isInt(e.diversityWindow) && e.diversityWindow >= 1 && e.diversityWindow <= 256,
    'env.diversityWindow',
    'must be an integer in [1, 256]',
  );
  check(
    isInt(e.diversityMinActions) && e.diversityMinActions >= 1,
    'env.diversityMinActions',
    'must be an integer >= 1',
  );
  check(e.diversityPenalty <= 0, 'env.diversityPenalty', 'must be <= 0 (it is a penalty)');
  check(isInt(e.curiosityEvery) && e.curiosityEvery >= 1, 'env.curiosityEvery', 'must be an integer >= 1');
  check(
    isInt(e.curiosityBatch) && e.curiosityBatch >= 1 && e.curiosityBatch <= LIM.minibatch,
    'env.curiosityBatch',
    `must be an integer in [1, ${LIM.minibatch}]`,
  );
  check(e.curiosityLr > 0, 'env.curiosityLr', 'must be > 0');
  check(e.curiosityWeightDecay >= 0, 'env.curiosityWeightDecay', 'must be >= 0');
  check(isInt(e.episodeBars) && e.episodeBars >= 2, 'env.episodeBars', 'must be an integer >= 2');

  const r = c.rollout;
  check(
    isInt(r.episodes) && r.episodes >= 1,
    'rollout.episodes',
    'must be an integer >= 1 (N = 0 collects nothing)',
  );
  check(isInt(r.steps) && r.steps >= 1, 'rollout.steps', 'must be an integer >= 1');
  check(
    r.episodes * r.steps <= LIM.rolloutSteps,
    'rollout.steps',
    `rollout.episodes * rollout.steps must be at most ${LIM.rolloutSteps} (2^25: the collection kernels index their output in u32)`,
  );

  const p = c.ppo;
  check(p.gamma > 0 && p.gamma <= 1, 'ppo.gamma', 'must be in (0, 1]');
  check(p.lambda >= 0 && p.lambda <= 1, 'ppo.lambda', 'must be in [0, 1]');
  check(p.clip > 0, 'ppo.clip', 'must be > 0');
  check(p.valueCoef >= 0, 'ppo.valueCoef', 'must be >= 0');
  check(p.entropyCoef >= 0, 'ppo.entropyCoef', 'must be >= 0');
  check(isInt(p.updateEpochs) && p.updateEpochs >= 1, 'ppo.updateEpochs', 'must be an integer >= 1');
  check(
    isInt(p.minibatch) && p.minibatch >= 1 && p.minibatch <= LIM.minibatch,
    'ppo.minibatch',
    `must be an integer in [1, ${LIM.minibatch}]`,
  );
  check(
    c.train.algo !== 'ppo' || p.minibatch <= r.episodes * r.steps,
    'ppo.minibatch',
    `must not exceed rollout.episodes * rollout.steps (${p.minibatch} > ${r.episodes} * ${r.steps}): lower --ppo.minibatch or raise the rollout`,
  );
  check(p.lr > 0, 'ppo.lr', 'must be > 0');
  check(p.maxGradNorm > 0, 'ppo.maxGradNorm', 'must be > 0');

  const q = c.dqn;
  check(q.gamma > 0 && q.gamma <= 1, 'dqn.gamma', 'must be in (0, 1]');
  check(isInt(q.nStep) && q.nStep >= 1, 'dqn.nStep', 'must be an integer >= 1');
  // The batch before the replay that must hold it: a batch past its limit is named as itself.
  check(
    isInt(q.batch) && q.batch >= 1 && q.batch <= LIM.batch,
    'dqn.batch',
    `must be an integer in [1, ${LIM.batch}]`,
  );
  check(
    isInt(q.replayCapacity) && q.replayCapacity >= q.batch && q.replayCapacity <= LIM.replayCapacity,
    'dqn.replayCapacity',
    `must be an integer in [dqn.batch, ${LIM.replayCapacity}] (4 GiB of 444-byte rows, held on the host for checkpoints)`,
  );
  check(q.priorityAlpha >= 0, 'dqn.priorityAlpha', 'must be >= 0');
  check(q.betaStart >= 0 && q.betaStart <= 1, 'dqn.betaStart', 'must be in [0, 1]');
  check(q.betaEnd >= 0 && q.betaEnd <= 1, 'dqn.betaEnd', 'must be in [0, 1]');
  check(isInt(q.betaEpochs) && q.betaEpochs >= 1, 'dqn.betaEpochs', 'must be an integer >= 1');
  check(q.priorityEps > 0, 'dqn.priorityEps', 'must be > 0');
  check(q.lr > 0, 'dqn.lr', 'must be > 0');
  check(q.maxGradNorm > 0, 'dqn.maxGradNorm', 'must be > 0');
  check(isInt(q.targetEvery) && q.targetEvery >= 0, 'dqn.targetEvery', 'must be an integer >= 0');
  check(q.polyakTau > 0 && q.polyakTau <= 1, 'dqn.polyakTau', 'must be in (0, 1]');
  check(isInt(q.stepsPerEpoch) && q.stepsPerEpoch >= 1, 'dqn.stepsPerEpoch', 'must be an integer >= 1');
  check(q.epsilonStart >= 0 && q.epsilonStart <= 1, 'dqn.epsilonStart', 'must be in [0, 1]');
  check(
    q.epsilonEnd >= 0 && q.epsilonEnd <= q.epsilonStart,
    'dqn.epsilonEnd',
    'must be in [0, epsilonStart]',
  );
  check(
    isInt(q.epsilonDecayEpochs) && q.epsilonDecayEpochs >= 1,
    'dqn.epsilonDecayEpochs',
    'must be an integer >= 1',
  );
  check(
    isInt(q.atoms) && q.atoms >= 2 && q.atoms <= LIM.atoms,
    'dqn.atoms',
    `must be an integer in [2, ${LIM.atoms}] (dqn_loss holds ${LIM.atoms} atoms a sample)`,
  );
  check(q.vMax > q.vMin, 'dqn.vMax', 'must be > dqn.vMin');
  check(
    isInt(q.iqnEmbed) && q.iqnEmbed >= 1 && q.iqnEmbed <= LIM.iqnEmbed,
    'dqn.iqnEmbed',
    `must be an integer in [1, ${LIM.iqnEmbed}] (collect_dqn writes the cosines into a ${LIM.iqnEmbed}-float trunk row)`,
  );
  check(
    isInt(q.iqnTau) && q.iqnTau >= 1 && q.iqnTau <= LIM.iqnTau,
    'dqn.iqnTau',
    `must be an integer in [1, ${LIM.iqnTau}] (iqn_loss holds ${LIM.iqnTau} quantiles a sample)`,
  );
  check(
    isInt(q.iqnActTau) && q.iqnActTau >= 1 && q.iqnActTau <= LIM.iqnActTau,
    'dqn.iqnActTau',
    `must be an integer in [1, ${LIM.iqnActTau}]`,
  );
  check(q.huberKappa > 0, 'dqn.huberKappa', 'must be > 0');

  const t = c.train;
  check(
    ['ppo', 'dqn', 'c51', 'iqn'].includes(t.algo),
    'train.algo',
    `unknown algorithm "${t.algo}" (use ppo, dqn, c51 or iqn)`,
  );
  check(
    ['auto', 'cpu', 'webgpu', 'cuda'].includes(t.backend),
    'train.backend',
    `unknown backend "${t.backend}" (use auto, cpu, webgpu or cuda)`,
  );
  check(
    t.precision === 'auto' || t.precision === 'exact' || t.precision === 'tf32',
    'train.precision',
    `unknown precision "${t.precision}" (use auto, exact or tf32)`,
  );
  check(
    t.precision !== 'tf32' || t.backend === 'cuda',
    'train.precision',
    `tf32 runs on CUDA tensor cores only, and train.backend is "${t.backend}": use train.precision exact, or --backend cuda`,
  );
  check(isInt(t.epochs) && t.epochs >= 1, 'train.epochs', 'must be an integer >= 1');
  check(
    isInt(t.seed) && t.seed >= 0 && t.seed <= Number.MAX_SAFE_INTEGER,
    'train.seed',
    'must be a non-negative integer',
  );
  check(t.outDir.length > 0, 'train.outDir', 'must not be empty');
  check(
    isInt(t.checkpointEvery) && t.checkpointEvery >= 1,
    'train.checkpointEvery',
    'must be an integer >= 1',
  );
  check(t.barsPerYear >= 0, 'train.barsPerYear', 'must be >= 0');
  return c;
}

/** Defaults <- JSON text (from a --config file) <- flags, validated. */
export function loadConfig(
  json?: { text: string; path: string },
  flags: Record<string, string> = {},
): Config {
  let parsed: unknown;
  if (json) {
    try {
      // A byte-order mark (Windows editors write one) is not JSON.
      parsed = JSON.parse(json.text.replace(/^\uFEFF/, ''));
    } catch (err) {
      throw new ConfigError(json.path, `not valid JSON: ${(err as Error).message}`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ConfigError(json.path, 'must hold a JSON object of sections');
    }
  }
  let c = defaultsFor(selectedAlgo(parsed, flags));
  if (json) c = mergeConfig(c, parsed as DeepPartial<Config>, json.path);
  c = applyFlags(c, flags);
  return validateConfig(c);
}
