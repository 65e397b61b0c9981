/**
 * The trainer, in a Web Worker behind comlink: the same runTraining as `foxhunt train`, on the
 * browser's WebGPU (navigator.gpu) or the CPU reference, with its checkpoints and log in
 * IndexedDB. The page's thread only draws what this sends.
 *
 * Pause holds the run at the next phase boundary (onPhase is awaited); stop throws there, which
 * unwinds runTraining (the engine and backend are destroyed on the way out).
 */
import * as Comlink from 'comlink';
import { BackendUnavailableError, DeviceLostError } from '../src/backend/types.js';
import { adapterName, summarizeAdapter } from '../src/backend/webgpu/gpu.js';
import { type Config, defaultsFor, validateConfig } from '../src/config.js';
import { barsFromBytes } from '../src/data/bytes.js';
import { minBars } from '../src/data/splits.js';
import { trainWarnings } from '../src/data/warnings.js';
import { verdictSentence } from '../src/eval/verdict.js';
import { checkpointCurves, runViewOf } from '../src/report/run_view.js';
import { backtestCurves, epochPoint, type RunView } from '../src/report/view.js';
import { bestDir, lastDir } from '../src/train/checkpoint.js';
import { checkpointPolicy, type DqnCheckpoint } from '../src/train/dqn_checkpoint.js';
import { TrainingDivergedError } from '../src/train/ppo.js';
import type { PpoCheckpoint } from '../src/train/ppo_checkpoint.js';
import { prepareData, resumeConfig, runTraining, type SourcedBars, sameData } from '../src/train/run.js';
import { type EpochRecord, logPath, readLog } from '../src/train/runlog.js';
import { committedDir, joinPath, MemoryStorage, type Storage } from '../src/train/storage.js';
import type { DeviceReport, Progress, Settings, TrainerApi } from './api.js';
import { IndexedDbStorage } from './idb_storage.js';
import { configOf } from './run_config.js';
import { KEEP_RUNS, newRunDir } from './runs.js';
import { sizesFor } from './sizes.js';
import { type NamedBytes, readTar, writeTar } from './tar.js';

class Stopped extends Error {}

let storage: Storage | null = null;
/** This tab's last run: its directory (runs.ts), the epochs it finished and its market (Continue's). */
let run: { dir: string; epochs: number; bars: SourcedBars | undefined } | null = null;
/** IndexedDB where the browser allows it (not in every private mode), else memory. */
async function store(): Promise<Storage> {
  if (!storage) {
    try {
      storage = await IndexedDbStorage.open();
    } catch {
      storage = new MemoryStorage();
    }
  }
  return storage;
}

let bars: SourcedBars | undefined;
let running = false;
let stopRequested = false;
let paused: { promise: Promise<void>; release: () => void } | null = null;
/** The adapter's limits from probe (the backend requests them all); they size the DQN replay. */
let adapterLimits: Record<string, number> = {};

const KEY_LIMITS = [
  'maxBufferSize',
  'maxStorageBufferBindingSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxStorageBuffersPerShaderStage',
] as const;

/**
 * One run at a time in the page's tabs: they share the device, and a new run removes old runs'
 * directories (runs.ts), which must not be a running one's. Holds the origin's Web Lock until
 * release(), or gives null while another tab holds it (no lock where the browser has no Web
 * Locks, e.g. a page served over plain http).
 */
function runLock(): Promise<(() => void) | null> {
  const locks = (navigator as { locks?: LockManager }).locks;
  if (!locks) return Promise.resolve(() => {});
  return new Promise((granted) => {
    locks
      .request('foxhunt-web-run', { ifAvailable: true }, (lock) =>
        lock ? new Promise<void>((release) => granted(release)) : granted(null),
      )
      .catch(() => granted(() => {}));
  });
}

/** The device: the adapter and its limits, or why the page uses the CPU reference; the run it proposes. */
async function probeDevice(): Promise<DeviceReport> {
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  const adapter = gpu
    ? await gpu.requestAdapter({ powerPreference: 'high-performance' }).catch(() => null)
    : null;
  if (!adapter) {
    return {
      backend: 'cpu',
      class: 'cpu',
      name: 'CPU reference (TypeScript, this worker)',
      limits: {},
      note: gpu
        ? 'WebGPU gave no adapter (disabled, blocklisted GPU or no driver): training runs on the CPU reference, small and slow'
        : 'this browser has no WebGPU: training runs on the CPU reference, small and slow',
      sizes: sizesFor('cpu'),
    };
  }
  const summary = summarizeAdapter(adapter);
  const limits: Record<string, number> = {};
  for (const k of KEY_LIMITS) limits[k] = adapter.limits[k];
  adapterLimits = limits;
  const name = [summary.vendor, summary.architecture].filter(Boolean).join(' ') || adapterName(summary);
  return {
    backend: 'webgpu',
    class: summary.software ? 'software' : 'hardware',
    name: summary.software ? `${name} (software adapter: the GPU emulated on the CPU)` : name,
    limits,
    note: summary.software
      ? 'a software adapter runs the WebGPU kernels on the CPU: correct, but no faster than the CPU reference; the run is sized small'
      : null,
    sizes: sizesFor(summary.software ? 'software' : 'hardware', limits.maxBufferSize),
  };
}

/**
 * Throws, in words, when a file of `n` bars is too short for the page's runs: the splits of
 * `foxhunt train` (makeSplits) at the device's episode length.
 */
function checkLength(file: string, n: number, episodeBars: number) {
  const cfg = defaultsFor('ppo');
  cfg.env.episodeBars = episodeBars;
  const need = minBars(cfg);
  if (n >= need) return;
  const { maxLookback: L, trainFrac } = cfg.data;
  throw new Error(
    `${file}: ${n.toLocaleString('en')} bars, too few to train on: the page's runs need at least ${need.toLocaleString('en')} ` +
      `(${L} bars of feature warm-up, a ${L}-bar gap before each of the validation and test splits, and a training ` +
      `split of ${Math.round(trainFrac * 100)}% of the rest longer than an episode's ${episodeBars} bars)`,
  );
}

let probed: Promise<DeviceReport> | null = null;

/** This tab's last run's committed last/ (null when there is none, or another tab's run removed it). */
async function lastOfRun(st: Storage): Promise<string | null> {
  return run ? committedDir(st, lastDir(run.dir)) : null;
}

/**
 * The config and checkpoint that continue this tab's last run from its last/ to the form's
 * Epochs: the run's own settings (algorithm, sizes, seed, learning rate), as `foxhunt train
 * --resume`, so the continued run is the run it would have been unbroken.
 */
async function continued(
  st: Storage,
  s: Settings,
): Promise<{ cfg: Config; resume: PpoCheckpoint | DqnCheckpoint }> {
  if (!run?.epochs) throw new Error('no run of this tab has finished an epoch: Start trains a new run');
  if (!(await lastOfRun(st)))
    throw new Error(
      `this tab's run is no longer stored (the page keeps its tabs' last ${KEEP_RUNS} runs): Start trains a new run`,
    );
  const had = run.epochs;
  if (!(s.epochs > had))
    throw new Error(
      `this tab's run has finished ${had} epoch${had > 1 ? 's' : ''}: set Epochs above ${had} to continue it`,
    );
  const { cfg, checkpoint } = await resumeConfig(st, run.dir, (base) => {
    base.train.epochs = s.epochs;
    return validateConfig(base);
  });
  return { cfg, resume: checkpoint };
}

const api: TrainerApi = {
  /** Asked once: a file's check waits for the device's run sizes. */
  probe(): Promise<DeviceReport> {
    probed ??= probeDevice();
    return probed;
  },

  async loadData(name, bytes) {
    const { bars: b } = await barsFromBytes(name, bytes);
    checkLength(name, b.n, (await api.probe()).sizes.episodeBars);
    bars = { bars: b, source: name };
    return { source: name, bars: b.n };
  },

  clearData() {
    bars = undefined;
  },

  async train(s, cb, mode = 'new') {
    if (running) throw new Error('a run is already in progress');
    running = true;
    // Before the first await: a Stop or Pause the page sends right after Start is for this run.
    stopRequested = false;
    paused = null;
    const release = await runLock();
    if (!release) {
      running = false;
      throw new Error(
        'another tab of this page is training (one run at a time: the tabs share the device and the storage): stop it or wait for it to end',
      );
    }
    // The market of this run: a file dropped (or cleared) while it trains is for the next run.
    // Continue trains on the market of the run it continues.
    const runBars = mode === 'continue' ? run?.bars : bars;
    /** Epochs this run finished (each wrote its checkpoint: checkpointEvery 1). */
    let finished = 0;
    try {
      const st = await store();
      const { cfg, resume } =
        mode === 'continue' ? await continued(st, s) : { cfg: configOf(s, adapterLimits), resume: null };
      const out = resume ? run!.dir : await newRunDir(st, run?.dir ?? null);
      const thisRun = { dir: out, epochs: resume?.state.epoch ?? 0, bars: runBars };
      run = thisRun;
      finished = thisRun.epochs;
      cfg.train.outDir = out;
      const data = await prepareData(cfg, runBars);
      // data check's warnings, as foxhunt train prints them (bars wider than the barriers, ...).
      if (runBars)
        for (const w of trainWarnings(runBars.bars, cfg)) cb.onInfo(`warning: ${runBars.source}: ${w}`);
      // A continued run's chart starts with the epochs it had.
      const records: EpochRecord[] = resume ? (await readLog(st, out)).slice(0, resume.state.epoch) : [];
      /** Epochs finished before this call (a continued run's), not in the rate or the ETA. */
      const before = records.length;
      const stepsPerEpoch = cfg.rollout.episodes * cfg.rollout.steps;
      const start = performance.now();
      // Time spent paused: not training, so neither in the rate nor in the ETA.
      let pausedMs = 0;
      const progress = (epoch: number, phase: string, last?: EpochRecord): Progress => {
        const elapsedMs = performance.now() - start - pausedMs;
        const done = records.length;
        const now = done - before;
        return {
          epoch,
          epochs: s.epochs,
          phase,
          done,
          stepsPerSec: now ? (now * stepsPerEpoch) / (elapsedMs / 1000) : null,
          collectStepsPerSec: last
            ? last.throughput.envStepsPerSec
            : (records.at(-1)?.throughput.envStepsPerSec ?? null),
          elapsedMs,
          etaMs: now ? (elapsedMs / now) * (s.epochs - done) : null,
        };
      };
      const view = (extra: Partial<RunView>): RunView => ({
        title: 'foxhunt in this tab',
        subtitle: `${cfg.train.algo.toUpperCase()} on ${cfg.train.backend === 'webgpu' ? 'WebGPU' : 'the CPU reference'}, ${runBars?.source ?? 'synthetic market'} (${data.market.n} bars), ${cfg.rollout.episodes} episodes x ${cfg.rollout.steps} steps per rollout`,
        epochs: records.map(epochPoint),
        curves: null,
        tables: [],
        verdict: [],
        ...extra,
      });
      // The page's callbacks travel over their own port, so train()'s result can overtake a call
      // not awaited: an epoch's progress would then land after the run's end and overwrite it.
      await runTraining({
        cfg,
        storage: st,
        bars: runBars,
        force: resume === null,
        resume,
        backendOptions: { gpu: (navigator as Navigator & { gpu?: GPU }).gpu },
        onInfo: (line) => cb.onInfo(line),
        onPhase: async (epoch, phase) => {
          // The CPU collection runs without yielding (train steps and backtests yield, src/ticker.ts,
          // but this hook alone acts on them): take the page's Pause or Stop messages now, or they
          // wait for the checkpoint's IndexedDB writes, an epoch later.
          await new Promise((r) => setTimeout(r, 0));
          if (paused) {
            await cb.onProgress(progress(epoch, 'paused'));
            const pausedAt = performance.now();
            await paused.promise;
            pausedMs += performance.now() - pausedAt;
          }
          if (stopRequested) throw new Stopped();
          await cb.onProgress(progress(epoch, phase));
        },
        onEpoch: async (record) => {
          records.push(record);
          thisRun.epochs = finished = records.length;
          const curves = await checkpointCurves(st, lastDir(out), data, 'last/');
          await cb.onView(
            view({
              curves,
              tables: [{ caption: `validation split, epoch ${record.epoch}`, report: record.validation }],
            }),
          );
          await cb.onProgress(progress(record.epoch, 'epoch done', record));
        },
      });
      const final = await runViewOf(st, out, runBars);
      await cb.onView({ ...final, title: 'foxhunt in this tab', subtitle: view({}).subtitle });
      return 'finished';
    } catch (err) {
      if (err instanceof Stopped) return 'stopped';
      // The CPU reference allocates the rollout in this tab: a huge N x L fails with a bare RangeError.
      if (err instanceof RangeError && /typed array length|allocation failed/i.test(err.message))
        throw new Error(
          `${s.episodes} episodes x ${s.steps} steps per rollout do not fit in this tab's memory (${err.message}): lower episodes N or steps L`,
        );
      const kept = finished
        ? `This run's checkpoints of its ${finished} finished epoch${finished > 1 ? 's' : ''} are kept: Download checkpoint saves them.`
        : 'No epoch had finished, so there is no checkpoint to keep.';
      // The GPU went away (a driver reset or crash, or the browser took the device back): say what
      // is kept and what to do; the backend's own words go to the trainer messages.
      if (err instanceof DeviceLostError) {
        cb.onInfo(err.message);
        // Continue, not after a divergence: the run's own learning rate would diverge again.
        const more = finished ? ` Continue trains on from epoch ${finished}.` : '';
        throw new Error(
          `the GPU stopped working in epoch ${finished + 1} (its driver was reset, or the browser took the GPU back). ` +
            `${kept}${more} Start trains a new run${finished ? ' in their place' : ''}; if it fails as well, reload the page.`,
        );
      }
      // In the page's words: its learning-rate field, not the CLI's --resume and config fields.
      if (err instanceof TrainingDivergedError) {
        cb.onInfo(err.message);
        throw new Error(
          `${err.symptom}: the training diverged. ${kept} ` +
            (err.optimisation ? 'Start a new run with a lower learning rate.' : `${err.reason}.`),
        );
      }
      // The adapter the page found at load is gone (say, after a GPU crash).
      if (err instanceof BackendUnavailableError && s.backend === 'webgpu')
        throw new Error(`${err.message}: reload the page to look for the GPU again`);
      throw err;
    } finally {
      running = false;
      release();
    }
  },

  pause() {
    if (!running || paused || stopRequested) return;
    let release = () => {};
    const promise = new Promise<void>((r) => (release = r));
    paused = { promise, release };
  },

  resume() {
    const p = paused;
    paused = null;
    p?.release();
  },

  stop() {
    stopRequested = true;
    api.resume();
  },

  async stored() {
    if (!run) return { checkpoint: false, log: false, continueFrom: null };
    const st = await store();
    const last = await lastOfRun(st);
    return {
      continueFrom: last ? run.epochs : null,
      checkpoint: last !== null || (await committedDir(st, bestDir(run.dir))) !== null,
      log: await st.exists(logPath(run.dir)),
    };
  },

  async download(what) {
    const st = await store();
    // A run that finished an epoch wrote both; another tab's runs may have removed them since.
    const missing = () =>
      new Error(
        run?.epochs
          ? `this tab's run is no longer stored (the page keeps its tabs' last ${KEEP_RUNS} runs): train again`
          : `no ${what} yet: train first`,
      );
    if (what === 'log') {
      const bytes = run && (await st.read(logPath(run.dir)));
      if (!bytes) throw missing();
      return Comlink.transfer({ name: 'log.jsonl', bytes }, [bytes.buffer]);
    }
    const dir =
      run && ((await committedDir(st, bestDir(run.dir))) ?? (await committedDir(st, lastDir(run.dir))));
    if (!dir) throw missing();
    const files: NamedBytes[] = [];
    for (const name of await st.list(dir)) files.push({ name, bytes: (await st.read(joinPath(dir, name)))! });
    const bytes = writeTar(files);
    return Comlink.transfer({ name: 'foxhunt-best.tar', bytes }, [bytes.buffer]);
  },

  async backtest(files) {
    const mem = new MemoryStorage();
    const flat = files.flatMap((f) => (f.name.endsWith('.tar') ? readTar(f.bytes) : [f]));
    if (!flat.some((f) => f.name === 'state.json'))
      throw new Error(
        `no state.json among ${files.map((f) => f.name).join(', ')}: choose a checkpoint's state.json with its .safetensors files, or the .tar that Download checkpoint gives`,
      );
    for (const f of flat) await mem.write(joinPath('checkpoint', f.name), f.bytes);
    const { state, policy } = await checkpointPolicy(mem, 'checkpoint');
    const cfg = state.config;
    const synthetic = state.data.source === 'synthetic';
    if (!synthetic && !bars) {
      throw new Error(`the checkpoint trained on ${state.data.source}: drop that file on the page first`);
    }
    const data = await prepareData(cfg, synthetic ? undefined : bars);
    const now = data.fingerprint;
    if (!sameData(state.data, now))
      throw new Error(
        `the checkpoint trained on ${state.data.source} (${state.data.bars.toLocaleString('en')} bars), and the page's ` +
          `${now.source} (${now.bars.toLocaleString('en')} bars) holds other bars: drop ${state.data.source} on the page first`,
      );
    const { curves, report } = backtestCurves(
      data.market,
      data.splits.test,
      'test',
      cfg.env,
      policy,
      cfg.train.seed,
      data.barsPerYear,
      `loaded checkpoint, epoch ${state.epoch}`,
    );
    const who = `the loaded ${state.algo.toUpperCase()} checkpoint (epoch ${state.epoch}, ${state.backend} backend)`;
    return {
      epoch: state.epoch,
      report,
      view: {
        title: 'backtest of a loaded checkpoint',
        subtitle: `${state.data.source} (${data.market.n} bars), test split: bars [${data.splits.test.start}, ${data.splits.test.end})`,
        epochs: [],
        curves,
        tables: [{ caption: `test split, checkpoint epoch ${state.epoch}`, report }],
        verdict: [verdictSentence(who, 'test', report)],
      },
    };
  },
};

Comlink.expose(api);
