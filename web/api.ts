/** What the page and the trainer worker (worker.ts) say to each other through comlink. */
import type { Algo } from '../src/config.js';
import type { RunView } from '../src/report/view.js';
import type { ValidationReport } from '../src/train/runlog.js';
import type { DeviceClass, RunSizes } from './sizes.js';
import type { NamedBytes } from './tar.js';

export interface DeviceReport {
  backend: 'webgpu' | 'cpu';
  class: DeviceClass;
  /** e.g. `google swiftshader (software adapter)`, or `CPU reference (TypeScript)`. */
  name: string;
  /** Key adapter limits (empty on the CPU). */
  limits: Record<string, number>;
  /** Why the page uses the CPU, or what a software adapter means; null on a hardware adapter. */
  note: string | null;
  sizes: RunSizes;
}

export interface Settings extends RunSizes {
  algo: Algo;
  backend: 'webgpu' | 'cpu';
  seed: number;
  lr: number;
}

export interface Progress {
  epoch: number;
  epochs: number;
  /** The phase the run is in, or `paused`. */
  phase: string;
  /** Epochs finished in this run. */
  done: number;
  /** Env steps collected per wall-clock second over the finished epochs (update and validation included, pauses not). */
  stepsPerSec: number | null;
  /** The last epoch's collection alone, env steps per second. */
  collectStepsPerSec: number | null;
  /** Time trained so far, pauses excluded. */
  elapsedMs: number;
  etaMs: number | null;
}

export interface Callbacks {
  onInfo(line: string): void;
  onProgress(p: Progress): void;
  onView(view: RunView): void;
}

export interface BacktestResult {
  view: RunView;
  /** The metrics `foxhunt backtest --json` prints for the same checkpoint, bars and split. */
  report: ValidationReport;
  epoch: number;
}

/** What this tab's last run has stored, to download. */
export interface StoredFiles {
  /** best/ or last/ (a run stopped or failed before its first epoch has none). */
  checkpoint: boolean;
  log: boolean;
  /** The epoch of the run's last/ checkpoint, which Continue trains on from; null without one. */
  continueFrom: number | null;
}

export interface TrainerApi {
  probe(): Promise<DeviceReport>;
  /** Parses and validates a dropped file; throws the DataError message (file, row, rule). */
  loadData(name: string, bytes: Uint8Array): Promise<{ source: string; bars: number }>;
  /** Back to the synthetic market. */
  clearData(): void;
  /**
   * A new run of `settings`, or with `continue` this tab's last run from its last/ checkpoint to
   * settings.epochs, with the run's own other settings and market.
   */
  train(settings: Settings, callbacks: Callbacks, mode?: 'new' | 'continue'): Promise<'finished' | 'stopped'>;
  pause(): void;
  resume(): void;
  stop(): void;
  stored(): Promise<StoredFiles>;
  /** best/ as a tar of its files, or the log. */
  download(what: 'checkpoint' | 'log'): Promise<NamedBytes>;
  /** A checkpoint's files (state.json and its .safetensors, or a .tar of them) on the test split. */
  backtest(files: NamedBytes[]): Promise<BacktestResult>;
}
