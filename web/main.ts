/**
 * The page's thread: the form, the buttons and the charts. Training runs in worker.ts; this side
 * only draws what the worker sends (at most once per animation frame), so the page stays
 * responsive while it trains.
 */
import * as Comlink from 'comlink';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { ConfigError } from '../src/config.js';
import { type RunDrawing, renderRun } from '../src/report/draw.js';
import { RUN_CSS } from '../src/report/html.js';
import type { RunView } from '../src/report/view.js';
import { duration } from '../src/train/report.js';
import type { DeviceReport, Progress, Settings, StoredFiles, TrainerApi } from './api.js';
import { configOf, FORM_FIELD } from './run_config.js';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const style = document.createElement('style');
style.textContent = RUN_CSS;
document.head.append(style);

const trainer = Comlink.wrap<TrainerApi>(
  new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' }),
);
const form = $<HTMLFormElement>('settings');
const buttons = {
  start: $<HTMLButtonElement>('start'),
  pause: $<HTMLButtonElement>('pause'),
  resume: $<HTMLButtonElement>('resume'),
  stop: $<HTMLButtonElement>('stop'),
  continue: $<HTMLButtonElement>('continue'),
  checkpoint: $<HTMLButtonElement>('dl-checkpoint'),
  log: $<HTMLButtonElement>('dl-log'),
};
let device: DeviceReport | null = null;
let dataOk = true;
/** Whether the run fields make a config that validateConfig accepts (checkSettings). */
let settingsOk = false;
/** What this tab's run has stored (asked of the worker when a run ends): the Download buttons. */
const NOTHING_STORED: StoredFiles = { checkpoint: false, log: false, continueFrom: null };
let stored: StoredFiles = NOTHING_STORED;
let running = false;
type State = 'ready' | 'running' | 'paused' | 'finished' | 'stopped' | 'failed';
let current: State = 'ready';

function setState(state: State) {
  current = state;
  running = state === 'running' || state === 'paused';
  $('status').textContent = state;
  buttons.start.disabled = running || !device || !dataOk || !settingsOk;
  buttons.pause.disabled = state !== 'running';
  buttons.resume.disabled = state !== 'paused';
  buttons.stop.disabled = !running;
  buttons.continue.disabled = running || !device || stored.continueFrom === null;
  buttons.checkpoint.disabled = running || !stored.checkpoint;
  buttons.log.disabled = running || !stored.log;
}

/** Asks the worker what this tab's run has stored, for the Download buttons; then shows `state`. */
async function refreshStored(state = current) {
  stored = await trainer.stored().catch(() => NOTHING_STORED);
  setState(state);
}

function showError(id: string, message: string | null) {
  const el = $(id);
  el.hidden = message === null;
  el.textContent = message ?? '';
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Draws the latest view once per frame, however fast the worker sends them. `reset` forgets the
 * drawing, for when something else replaced root's contents: the next view draws afresh.
 */
function drawer(root: HTMLElement) {
  let drawing: RunDrawing | null = null;
  let pending: RunView | null = null;
  const draw = (view: RunView) => {
    if (pending === null)
      requestAnimationFrame(() => {
        if (drawing) drawing.update(pending!);
        else drawing = renderRun(root, pending!, uPlot);
        pending = null;
      });
    pending = view;
  };
  draw.reset = () => {
    drawing?.destroy();
    drawing = null;
  };
  return draw;
}
const drawRun = drawer($('run'));
// The charts exist, empty, before a run starts: creating them is the page's heaviest drawing.
const emptyView: RunView = {
  title: 'no run yet',
  subtitle: '',
  epochs: [],
  curves: null,
  tables: [],
  verdict: [],
};
drawRun(emptyView);
const drawBacktest = drawer($('backtest'));

/** The run's last progress (null before its first phase). */
let last: Progress | null = null;

function showProgress(p: Progress) {
  last = p;
  $('epoch').textContent = String(p.done);
  $('epochs').textContent = String(p.epochs);
  $('phase').textContent = p.phase === 'paused' ? 'paused' : `epoch ${p.epoch}: ${p.phase}`;
  $('rate').textContent =
    p.stepsPerSec === null
      ? 'steps/s after the first epoch'
      : `${Math.round(p.stepsPerSec).toLocaleString('en')} env steps/s (collection alone ${Math.round(p.collectStepsPerSec ?? 0).toLocaleString('en')})`;
  $('eta').textContent = p.etaMs === null ? '-' : duration(p.etaMs);
  $<HTMLProgressElement>('progress-bar').value = p.done / p.epochs;
}

/** Where a run ended, in place of the phase it was in. */
function showEnd(outcome: 'finished' | 'stopped' | 'failed', epochs: number, mode: 'new' | 'continue') {
  const done = last?.done ?? 0;
  $('phase').textContent =
    outcome === 'finished'
      ? 'all epochs done'
      : last === null
        ? `${outcome} before ${mode === 'new' ? 'its first epoch' : 'continuing'}`
        : `${outcome} in epoch ${done + 1} (${done} of ${epochs} finished)`;
  $('eta').textContent = '-';
}

async function probe() {
  device = await trainer.probe();
  $('device-name').textContent = `${device.backend === 'webgpu' ? 'WebGPU' : 'CPU'}: ${device.name}`;
  if (device.note) {
    $('device-note').hidden = false;
    $('device-note').textContent = device.note;
  }
  $('device-limits').replaceChildren(
    ...Object.entries(device.limits).flatMap(([k, v]) => {
      const dt = document.createElement('dt');
      dt.textContent = k;
      const dd = document.createElement('dd');
      dd.textContent = v.toLocaleString('en');
      return [dt, dd];
    }),
  );
  document.body.dataset.backend = device.backend;
  proposeSizes();
  checkSettings();
  setState('ready');
}

const algo = () => (form.elements.namedItem('algo') as RadioNodeList).value as Settings['algo'];
/** Proposes the device's run sizes (the user may change them). */
function proposeSizes() {
  if (!device) return;
  for (const [k, v] of Object.entries(device.sizes)) {
    const input = form.elements.namedItem(k) as HTMLInputElement | null;
    if (input) input.value = String(v);
  }
}

const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement;

function settings(): Settings {
  // An empty (or unparsable) field is NaN, which every rule of the config refuses.
  const value = (name: string) => (field(name).value.trim() === '' ? Number.NaN : Number(field(name).value));
  const sizes = device!.sizes;
  const episodes = value('episodes');
  const steps = value('steps');
  return {
    ...sizes,
    algo: algo(),
    backend: device!.backend,
    epochs: value('epochs'),
    episodes,
    steps,
    minibatch: Math.min(sizes.minibatch, episodes * steps),
    lr: value('lr'),
    seed: value('seed'),
  };
}

/**
 * Checks the run fields by the config's own rules (configOf: validateConfig, as at Start): the
 * first field at fault shows the config's message beside it, and Start stays disabled until it
 * is fixed. A rule of no field of the form shows below them.
 */
function checkSettings() {
  if (!device) return;
  let fault: { name: string | null; message: string } | null = null;
  try {
    configOf(settings(), device.limits);
  } catch (err) {
    const name = err instanceof ConfigError ? (FORM_FIELD[err.field] ?? null) : null;
    fault = { name, message: errorText(err) };
  }
  for (const name of new Set(Object.values(FORM_FIELD))) {
    const bad = fault?.name === name;
    field(name).setAttribute('aria-invalid', String(bad));
    showError(`${name}-error`, bad ? fault!.message : null);
  }
  showError('settings-error', fault && fault.name === null ? fault.message : null);
  settingsOk = fault === null;
  setState(current);
}
form.addEventListener('input', checkSettings);
form.addEventListener('change', checkSettings);

/**
 * Start (`new`): a run of the form's settings, which replaces this tab's last one in storage (once
 * it holds the run lock). Continue: this tab's last run, from its last checkpoint to the form's
 * Epochs, with its own other settings and market; its charts stay until the run sends them again.
 */
async function runTrainer(mode: 'new' | 'continue') {
  showError('run-error', null);
  $('info').textContent = '';
  const from = stored.continueFrom ?? 0;
  if (mode === 'new') stored = NOTHING_STORED;
  setState('running');
  const s = settings();
  // The last run's progress is not this one's.
  last = null;
  $('epoch').textContent = String(mode === 'new' ? 0 : from);
  $('epochs').textContent = String(s.epochs);
  $('phase').textContent = mode === 'new' ? 'starting' : 'continuing';
  $('rate').textContent = '-';
  $('eta').textContent = '-';
  $<HTMLProgressElement>('progress-bar').value = mode === 'new' ? 0 : from / s.epochs;
  if (mode === 'new')
    drawRun({ ...emptyView, title: 'foxhunt in this tab', subtitle: 'no epoch finished yet' });
  let outcome: 'finished' | 'stopped' | 'failed';
  try {
    outcome = await trainer.train(
      s,
      Comlink.proxy({
        onInfo: (line: string) => void ($('info').textContent += `${line}\n`),
        onProgress: showProgress,
        onView: drawRun,
      }),
      mode,
    );
  } catch (err) {
    showError('run-error', errorText(err));
    outcome = 'failed';
  }
  showEnd(outcome, s.epochs, mode);
  // A run stopped or failed after some epochs keeps their checkpoints; one before its first has
  // none. Asked before the state changes, so that the buttons change with it.
  await refreshStored(outcome);
}
form.addEventListener('submit', (ev) => {
  ev.preventDefault();
  if (!running && settingsOk) runTrainer('new');
});
buttons.continue.addEventListener('click', () => {
  if (!running) runTrainer('continue');
});
buttons.pause.addEventListener('click', () => {
  trainer.pause();
  setState('paused');
});
buttons.resume.addEventListener('click', () => {
  trainer.resume();
  setState('running');
});
buttons.stop.addEventListener('click', () => {
  trainer.stop();
  // The worker stops at its next phase boundary: nothing to pause, resume or stop meanwhile.
  buttons.pause.disabled = buttons.resume.disabled = buttons.stop.disabled = true;
});

async function save(what: 'checkpoint' | 'log') {
  showError('run-error', null);
  // Another tab's run may have removed this tab's since: say so on the page.
  const got = await trainer.download(what).catch((err) => {
    showError('run-error', errorText(err));
    refreshStored();
    return null;
  });
  if (!got) return;
  const { name, bytes } = got;
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>]));
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
buttons.checkpoint.addEventListener('click', () => save('checkpoint'));
buttons.log.addEventListener('click', () => save('log'));

async function loadData(file: File) {
  showError('data-error', null);
  $('data-status').textContent = `reading ${file.name}...`;
  dataOk = false;
  setState(current);
  try {
    const { source, bars } = await trainer.loadData(file.name, new Uint8Array(await file.arrayBuffer()));
    $('data-status').textContent = `${source}: ${bars.toLocaleString('en')} bars, valid`;
    dataOk = true;
  } catch (err) {
    $('data-status').textContent = `${file.name}: not usable, nothing will train on it`;
    showError('data-error', errorText(err));
  }
  // After a file that is not usable too: the way back to the synthetic market (and to Start).
  $('data-clear').hidden = false;
  setState(current);
}
$('data-clear').addEventListener('click', () => {
  trainer.clearData();
  dataOk = true;
  showError('data-error', null);
  $('data-status').textContent = 'synthetic market';
  $('data-clear').hidden = true;
  $<HTMLInputElement>('data-file').value = '';
  setState(current);
});
$<HTMLInputElement>('data-file').addEventListener('change', (ev) => {
  const input = ev.target as HTMLInputElement;
  const file = input.files?.[0];
  // A file chosen again while it is the input's value fires no change: cleared, it reloads
  // (edited, or after another file was dropped).
  input.value = '';
  if (file) loadData(file);
});
const drop = $('drop');
drop.addEventListener('dragover', (ev) => {
  ev.preventDefault();
  drop.classList.add('over');
});
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', (ev) => {
  ev.preventDefault();
  drop.classList.remove('over');
  const file = ev.dataTransfer?.files[0];
  if (file) loadData(file);
});
// A file dropped beside the drop zone would make the browser open it in place of the page (and its run).
for (const type of ['dragover', 'drop']) window.addEventListener(type, (ev) => ev.preventDefault());

$<HTMLInputElement>('ckpt-file').addEventListener('change', async (ev) => {
  const input = ev.target as HTMLInputElement;
  const files = [...(input.files ?? [])];
  // As for the data file: the same checkpoint chosen again backtests again.
  input.value = '';
  // Cancelling the file dialog (Chromium) empties the selection: keep the last backtest.
  if (!files.length) return;
  const box = $('backtest');
  try {
    const named = await Promise.all(
      files.map(async (f) => ({ name: f.name, bytes: new Uint8Array(await f.arrayBuffer()) })),
    );
    const result = await trainer.backtest(named);
    box.dataset.report = JSON.stringify(result.report);
    drawBacktest(result.view);
  } catch (err) {
    delete box.dataset.report;
    drawBacktest.reset();
    box.replaceChildren(
      Object.assign(document.createElement('p'), { className: 'error', textContent: errorText(err) }),
    );
  }
});

probe().catch((err) => {
  $('device-name').textContent = 'no trainer';
  showError('run-error', errorText(err));
});
