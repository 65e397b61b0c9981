/**
 * The demo page end to end: Vite builds web/ into a static site, `vite preview` serves it, and
 * Debian's headless Chromium (playwright) drives it. WebGPU runs on Chromium's SwiftShader (a
 * software adapter), so the runs are tiny: 2 episodes x 16 steps. The screenshot of the trained
 * run is kept in runs/web/ (CI's artifact).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import type { Page } from 'playwright';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { defaultsFor, validateConfig } from '../../src/config.js';
import { loadBars, saveBars } from '../../src/data/load.js';
import { generateSynthetic } from '../../src/data/synthetic.js';
import { readTar } from '../../web/tar.js';
import {
  ARTIFACTS,
  browsers,
  canvasColours,
  chartsDrawn,
  dropFile,
  logLines,
  open,
  points,
  servePage,
  slowMainThreadTasks,
  synthCsv,
  tmp,
  train,
} from './page-helpers.js';
import { pngColours } from './png.js';

servePage();

describe('the demo page in headless Chromium', () => {
  it('trains 2 epochs with WebGPU and draws the run, the main thread responsive', async () => {
    const { page, errors } = await open(browsers.gpu);
    expect(await page.textContent('#device-name')).toMatch(/^WebGPU: .*swiftshader.*software adapter/i);
    await browsers.gpu.startTracing(page, { categories: ['toplevel'] });
    const longTasks = await train(page, 2);
    const slow = slowMainThreadTasks(await browsers.gpu.stopTracing());
    expect(await page.textContent('#epoch')).toBe('2');
    await chartsDrawn(page);
    expect(await page.textContent('#rate')).toMatch(/[\d,]+ env steps\/s/);
    expect(await points(page, 'equity')).toBeGreaterThan(100);
    expect(await points(page, 'reward')).toBe(2);
    for (const n of await canvasColours(page)) expect(n).toBeGreaterThan(2);
    const verdicts = await page.$$eval('.verdict', (v) => v.map((e) => e.textContent));
    expect(verdicts).toHaveLength(2);
    expect(verdicts[1]).toMatch(/^best\/ \(epoch [12] of 2\) (beat|did NOT beat) .* on the test split/);
    // The main thread's tasks from Start to the end (the pipelines' compilation included). On
    // SwiftShader each WebGPU submission runs on threads of the GPU process that take every core
    // (the first update ~10 s), so a task of the page's may wait for a core: traces saw 60-140 ms
    // tasks of 1-9 ms CPU time. The page's own work per task is what it controls: the bound is on
    // the CPU time the main thread spent in each task; wall clock is kept in runs/web/.
    writeFileSync(join(ARTIFACTS, 'webgpu-long-tasks.json'), JSON.stringify({ longTasks, slow }));
    expect(slow.length).toBeGreaterThanOrEqual(longTasks.length);
    for (const task of slow) expect(task.cpuMs).toBeLessThan(50);
    const shot = await page.screenshot({ fullPage: true });
    writeFileSync(join(ARTIFACTS, 'webgpu-run.png'), shot);
    expect(pngColours(shot)).toBeGreaterThan(8);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('falls back to the CPU reference without a WebGPU adapter, with a note, and trains 1 epoch', async () => {
    const { page, errors } = await open(browsers.cpu);
    expect(await page.textContent('#device-name')).toMatch(/^CPU: CPU reference/);
    expect(await page.isVisible('#device-note')).toBe(true);
    expect(await page.textContent('#device-note')).toMatch(/no adapter.*CPU reference/);
    // As in the WebGPU run: the bound is on the CPU time of each main-thread task (traced), which
    // other work on the machine inflates far less than wall clock (kept in runs/web/). Alone no task
    // here passes 20 ms of wall time; one full suite on the 2-core machine saw a task of 108 ms CPU.
    await browsers.cpu.startTracing(page, { categories: ['toplevel'] });
    const longTasks = await train(page, 1);
    const slow = slowMainThreadTasks(await browsers.cpu.stopTracing());
    expect(await page.textContent('#epoch')).toBe('1');
    writeFileSync(join(ARTIFACTS, 'cpu-long-tasks.json'), JSON.stringify({ longTasks, slow }));
    expect(slow.length).toBeGreaterThanOrEqual(longTasks.length);
    for (const task of slow) expect(task.cpuMs).toBeLessThan(50);
    expect(await page.textContent('#info')).toMatch(/^backend cpu/m);
    expect(await points(page, 'equity')).toBeGreaterThan(100);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('pauses at a phase boundary, resumes, stops, and continues the stopped run to its end', async () => {
    const { page, errors } = await open(browsers.cpu);
    await page.fill('input[name=epochs]', '5');
    await page.fill('input[name=episodes]', '2');
    await page.fill('input[name=steps]', '16');
    const rate = async () =>
      Number((await page.textContent('#rate'))!.match(/^([\d,]+) env steps\/s/)![1].replace(/,/g, ''));
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('epoch')!.textContent !== '0');
    await page.click('#pause');
    // The worker takes the pause at its next phase boundary (a CPU phase runs to its end first).
    await page.waitForFunction(() => document.getElementById('phase')!.textContent === 'paused');
    const atPause = Number(await page.textContent('#epoch'));
    const rateAtPause = await rate();
    await page.waitForTimeout(3000);
    expect(await page.textContent('#phase')).toBe('paused');
    expect(Number(await page.textContent('#epoch'))).toBe(atPause);
    await page.click('#resume');
    await page.waitForFunction((n) => Number(document.getElementById('epoch')!.textContent) > n, atPause);
    // The rate counts the time trained, not the pause: an epoch of 2 x 16 steps takes well under
    // a second here, so 3 s counted would cut the rate to a fraction of what it was.
    expect(await rate()).toBeGreaterThan(rateAtPause / 2);
    await page.click('#stop');
    await page.waitForFunction(() => document.getElementById('status')!.textContent === 'stopped');
    const done = Number(await page.textContent('#epoch'));
    expect(done).toBeLessThan(5);
    expect(await page.textContent('#phase')).toBe(`stopped in epoch ${done + 1} (${done} of 5 finished)`);
    expect(await page.isEnabled('#start')).toBe(true);
    // Continue trains the stopped run on from its last checkpoint to Epochs, its epochs before
    // the stop kept in the chart and the log (their lines as they were: a new run would differ,
    // if only in its timings).
    const before = await logLines(page);
    expect(before.map((l) => l.epoch)).toEqual(Array.from({ length: done }, (_, i) => i + 1));
    expect(await page.isEnabled('#continue')).toBe(true);
    await page.click('#continue');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await page.textContent('#run-error')).toBe('');
    expect([await page.textContent('#status'), await page.textContent('#phase')]).toEqual([
      'finished',
      'all epochs done',
    ]);
    expect(await page.textContent('#epoch')).toBe('5');
    expect(await points(page, 'reward')).toBe(5);
    const after = await logLines(page);
    expect(after.map((l) => l.epoch)).toEqual([1, 2, 3, 4, 5]);
    expect(after.slice(0, done)).toEqual(before);
    // A run that has all its epochs continues only to more of them.
    await page.click('#continue');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await page.textContent('#run-error')).toBe(
      "this tab's run has finished 5 epochs: set Epochs above 5 to continue it",
    );
    expect(await page.textContent('#phase')).toBe('failed before continuing');
    // Started again (a longer first epoch), the page shows none of the stopped run's progress,
    // charts or tables.
    await page.fill('input[name=episodes]', '32');
    await page.fill('input[name=steps]', '64');
    const shown = await page.evaluate(() => {
      document.getElementById('start')!.click();
      return ['epoch', 'phase'].map((id) => document.getElementById(id)!.textContent);
    });
    expect(shown).toEqual(['0', 'starting']);
    await page.waitForFunction(
      () => document.querySelector('[data-chart=reward]')!.getAttribute('data-points') === '0',
      null,
      { timeout: 5000 },
    );
    expect(await page.$$('.run-tables table')).toHaveLength(0);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("stops at the next phase boundary, even inside the CPU run's first epoch", async () => {
    const { page, errors } = await open(browsers.cpu);
    await page.fill('input[name=epochs]', '2');
    await page.fill('input[name=episodes]', '32');
    await page.fill('input[name=steps]', '64');
    await page.click('#start');
    // The collection of 32 x 64 steps takes seconds on the CPU reference: Stop lands inside it and
    // takes effect at the update's boundary, before the epoch's checkpoint.
    await page.waitForFunction(() => document.getElementById('phase')!.textContent === 'epoch 1: collect');
    // Until the worker takes it, Stop leaves nothing to press: no Pause of a run that is stopping.
    const enabled = await page.evaluate(() => {
      document.getElementById('stop')!.click();
      return ['pause', 'resume', 'stop'].filter(
        (id) => !(document.getElementById(id) as HTMLButtonElement).disabled,
      );
    });
    expect(enabled).toEqual([]);
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await page.textContent('#status')).toBe('stopped');
    expect(await page.textContent('#epoch')).toBe('0');
    // Where it stopped, not the phase it was in.
    expect(await page.textContent('#phase')).toBe('stopped in epoch 1 (0 of 2 finished)');
    expect(await page.textContent('#eta')).toBe('-');
    // No epoch finished: no checkpoint and no log line to download (the buttons change with the status).
    expect(await page.isDisabled('#dl-checkpoint')).toBe(true);
    expect(await page.isDisabled('#dl-log')).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('keeps a run going when a file is dropped mid-run: the file is for the next run', async () => {
    const { page, errors } = await open(browsers.cpu);
    await page.fill('input[name=epochs]', '2');
    await page.fill('input[name=episodes]', '2');
    await page.fill('input[name=steps]', '16');
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('phase')!.textContent!.startsWith('epoch 1'));
    await dropFile(page, 'next.csv', await synthCsv('next.csv', 1000));
    await page.waitForFunction(() => document.getElementById('data-status')!.textContent!.endsWith('valid'));
    expect(await page.textContent('#status')).toBe('running');
    expect(await page.isEnabled('#stop')).toBe(true);
    expect(await page.isDisabled('#start')).toBe(true);
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await page.textContent('#run-error')).toBe('');
    expect(await page.textContent('#status')).toBe('finished');
    expect(await page.textContent('#run')).toContain('synthetic market');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('disables Download while the run has no checkpoint, and enables it once one is written', async () => {
    const { page, errors } = await open(browsers.cpu);
    expect(await page.isDisabled('#dl-checkpoint')).toBe(true);
    // A first epoch of seconds (32 x 64 steps on the CPU reference), so that Stop lands inside it
    // however loaded the machine is (2 x 16 steps could finish the epoch before Stop arrived).
    await page.fill('input[name=episodes]', '32');
    await page.fill('input[name=steps]', '64');
    await page.click('#start');
    await page.click('#stop');
    await page.waitForFunction(() => document.getElementById('status')!.textContent === 'stopped');
    expect(await page.textContent('#epoch')).toBe('0');
    expect(await page.isEnabled('#start')).toBe(true);
    expect(await page.isDisabled('#dl-checkpoint')).toBe(true);
    expect(await page.isDisabled('#dl-log')).toBe(true);
    await train(page, 1);
    expect(await page.isEnabled('#dl-checkpoint')).toBe(true);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
    const tar = readTar(new Uint8Array(readFileSync((await download.path())!)));
    const state = JSON.parse(new TextDecoder().decode(tar.find((f) => f.name === 'state.json')!.bytes)).state;
    expect(state.epoch).toBe(1);
    expect(await page.isEnabled('#dl-log')).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("refuses run fields the config refuses as they are entered, with the config's message beside the field", async () => {
    const { page, errors } = await open(browsers.cpu);
    // The message validateConfig (src/config.ts) gives for each value, as `foxhunt train` prints it.
    const configSays = (algo: 'ppo' | 'dqn', edit: (c: ReturnType<typeof defaultsFor>) => void) => {
      const c = defaultsFor(algo);
      edit(c);
      try {
        validateConfig(c);
      } catch (err) {
        return (err as Error).message;
      }
      throw new Error('the config accepted it');
    };
    const shown = () =>
      page.$$eval('#hyper .field-error:not([hidden]), #settings-error:not([hidden])', (els) =>
        els.map((e) => [e.id, e.textContent]),
      );
    const invalid = () =>
      page.$$eval('#hyper input[aria-invalid=true]', (els) => els.map((e) => (e as HTMLInputElement).name));
    expect(await shown()).toEqual([]);
    await page.fill('input[name=lr]', '0');
    expect(await shown()).toEqual([['lr-error', configSays('ppo', (c) => (c.ppo.lr = 0))]]);
    expect(await page.textContent('#lr-error')).toBe('config: ppo.lr: must be > 0');
    expect(await invalid()).toEqual(['lr']);
    expect(await page.isDisabled('#start')).toBe(true);
    // The same field of a DQN run is dqn.lr.
    await page.check('input[name=algo][value=dqn]');
    expect(await shown()).toEqual([['lr-error', configSays('dqn', (c) => (c.dqn.lr = 0))]]);
    await page.check('input[name=algo][value=ppo]');
    await page.fill('input[name=lr]', '0.001');
    expect(await shown()).toEqual([]);
    expect(await invalid()).toEqual([]);
    expect(await page.isEnabled('#start')).toBe(true);
    // A rollout the kernels cannot index: the config's rule for the product, beside steps.
    await page.fill('input[name=episodes]', '65536');
    await page.fill('input[name=steps]', '4096');
    expect(await shown()).toEqual([
      [
        'steps-error',
        configSays('ppo', (c) => {
          c.rollout.episodes = 65536;
          c.rollout.steps = 4096;
        }),
      ],
    ]);
    expect(await page.isDisabled('#start')).toBe(true);
    await page.fill('input[name=steps]', '16');
    // An empty field and a fractional epoch count.
    await page.fill('input[name=episodes]', '');
    expect(await shown()).toEqual([
      ['episodes-error', configSays('ppo', (c) => (c.rollout.episodes = Number.NaN))],
    ]);
    await page.fill('input[name=episodes]', '2');
    await page.fill('input[name=epochs]', '1.5');
    expect(await shown()).toEqual([['epochs-error', configSays('ppo', (c) => (c.train.epochs = 1.5))]]);
    expect(await page.isDisabled('#start')).toBe(true);
    // Enter in a field submits the form: nothing starts while a field is refused.
    await page.press('input[name=epochs]', 'Enter');
    await page.waitForTimeout(300);
    expect(await page.textContent('#status')).toBe('ready');
    expect(await page.textContent('#phase')).toBe('idle');
    await page.fill('input[name=epochs]', '1');
    expect(await shown()).toEqual([]);
    expect(await page.isEnabled('#start')).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("says in the page's words that a run diverged, and keeps its checkpoints downloadable", async () => {
    const { page, errors } = await open(browsers.cpu);
    // The config takes any positive learning rate; 1e6 makes PPO's loss NaN in epoch 2.
    await page.fill('input[name=epochs]', '2');
    await page.fill('input[name=episodes]', '2');
    await page.fill('input[name=steps]', '16');
    await page.fill('input[name=lr]', '1e6');
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await page.textContent('#status')).toBe('failed');
    // Not the CLI's words (--resume, ppo.lr, the storage path): the page's field and button.
    expect(await page.textContent('#run-error')).toMatch(
      /^epoch 2: the PPO loss \w+ is NaN: the training diverged\. This run's checkpoints of its 1 finished epoch are kept: Download checkpoint saves them\. Start a new run with a lower learning rate\.$/,
    );
    expect(await page.isEnabled('#dl-checkpoint')).toBe(true);
    expect(await page.isEnabled('#dl-log')).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('keeps the page when a file is dropped beside the drop zone', async () => {
    const { page } = await open(browsers.cpu);
    // The browser opens a file dropped where no handler takes it, in place of the page.
    const prevented = await page.evaluate(() =>
      ['dragover', 'drop'].map((type) => {
        const ev = new DragEvent(type, { bubbles: true, cancelable: true });
        document.querySelector('header')!.dispatchEvent(ev);
        return ev.defaultPrevented;
      }),
    );
    expect(prevented).toEqual([true, true]);
    await page.close();
  });

  it('trains in one tab at a time: a second tab of the page says why it does not start', async () => {
    // The tabs of one browser profile share the IndexedDB directory of the run.
    const ctx = await browsers.cpu.newContext();
    const [a, b] = [await open(ctx), await open(ctx)];
    for (const { page } of [a, b]) {
      await page.fill('input[name=epochs]', '4');
      await page.fill('input[name=episodes]', '2');
      await page.fill('input[name=steps]', '16');
    }
    await a.page.click('#start');
    // A is the background tab now: poll it on a timer (no animation frames there).
    await a.page.waitForFunction(
      () => document.getElementById('phase')!.textContent!.startsWith('epoch'),
      null,
      {
        polling: 100,
      },
    );
    await b.page.click('#start');
    await b.page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running');
    expect(await b.page.textContent('#status')).toBe('failed');
    expect(await b.page.textContent('#run-error')).toMatch(/^another tab of this page is training/);
    await a.page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running', null, {
      polling: 100,
    });
    expect(await a.page.textContent('#status')).toBe('finished');
    expect(await a.page.textContent('#run-error')).toBe('');
    expect([...a.errors, ...b.errors]).toEqual([]);
    await ctx.close();
  });

  it("gives each tab's Download its own run's checkpoint, and keeps one run per tab in storage", async () => {
    const ctx = await browsers.cpu.newContext();
    const [a, b] = [await open(ctx), await open(ctx)];
    const trainSeed = async (page: Page, seed: number) => {
      await page.bringToFront();
      await page.fill('input[name=seed]', String(seed));
      await train(page, 1);
    };
    // The seed in the state.json of the tab's downloaded best/.
    const downloadedSeed = async (page: Page) => {
      await page.bringToFront();
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
      const tar = readFileSync((await download.path())!);
      const state = readTar(new Uint8Array(tar)).find((f) => f.name === 'state.json')!;
      return JSON.parse(new TextDecoder().decode(state.bytes)).state.config.train.seed;
    };
    // The run directories in the origin's IndexedDB.
    const runDirs = (page: Page) =>
      page.evaluate(
        () =>
          new Promise<string[]>((resolve, reject) => {
            const open = indexedDB.open('foxhunt');
            open.onerror = () => reject(open.error);
            open.onsuccess = () => {
              const keys = open.result.transaction('files').objectStore('files').getAllKeys();
              keys.onerror = () => reject(keys.error);
              keys.onsuccess = () =>
                resolve([
                  ...new Set((keys.result as string[]).map((k) => k.split('/').slice(0, 2).join('/'))),
                ]);
            };
          }),
      );
    await trainSeed(a.page, 11);
    await trainSeed(b.page, 12);
    expect(await downloadedSeed(a.page)).toBe(11);
    expect(await downloadedSeed(b.page)).toBe(12);
    // B trains again: its earlier run is gone from storage, A's stays A's.
    await trainSeed(b.page, 13);
    expect(await downloadedSeed(a.page)).toBe(11);
    expect(await downloadedSeed(b.page)).toBe(13);
    const dirs = await runDirs(a.page);
    expect(dirs).toHaveLength(2);
    for (const d of dirs) expect(d).toMatch(/^web-runs\//);
    // Removed by other tabs' runs (the page keeps the last few), A's run is gone: A says so.
    await a.page.evaluate(
      (dir) =>
        new Promise<void>((resolve, reject) => {
          const open = indexedDB.open('foxhunt');
          open.onsuccess = () => {
            const t = open.result.transaction('files', 'readwrite');
            t.objectStore('files').delete(IDBKeyRange.bound(`${dir}/`, `${dir}0`, false, true));
            t.oncomplete = () => resolve();
            t.onerror = () => reject(t.error);
          };
        }),
      dirs.sort()[0],
    );
    await a.page.click('#dl-checkpoint');
    await a.page.waitForSelector('#run-error:not([hidden])');
    expect(await a.page.textContent('#run-error')).toBe(
      "this tab's run is no longer stored (the page keeps its tabs' last 3 runs): train again",
    );
    expect([...a.errors, ...b.errors]).toEqual([]);
    await ctx.close();
  });

  it('refuses a file too short to train on when it is dropped, saying why, and trains on one just long enough', async () => {
    const { page, errors } = await open(browsers.cpu);
    // The CPU reference's run: episodes of 250 bars, so 3 x 120 warm-up and gap bars and a
    // training split (70%) of 251 bars: 719 bars (minBars).
    await dropFile(page, 'short.csv', await synthCsv('short.csv', 718));
    await page.waitForFunction(
      () => !document.getElementById('data-status')!.textContent!.startsWith('reading'),
    );
    expect(await page.textContent('#data-error')).toBe(
      "short.csv: 718 bars, too few to train on: the page's runs need at least 719 (120 bars of feature warm-up, " +
        'a 120-bar gap before each of the validation and test splits, and a training split of 70% of the rest ' +
        "longer than an episode's 250 bars)",
    );
    expect(await page.textContent('#data-status')).toBe('short.csv: not usable, nothing will train on it');
    expect(await page.isDisabled('#start')).toBe(true);
    await dropFile(page, 'enough.csv', await synthCsv('enough.csv', 719));
    await page.waitForFunction(() => document.getElementById('data-status')!.textContent!.endsWith('valid'));
    expect(await page.isHidden('#data-error')).toBe(true);
    await train(page, 1);
    expect(await page.textContent('.run-subtitle')).toMatch(/enough\.csv \(719 bars\)/);
    // data check's warnings, as foxhunt train prints them.
    expect(await page.textContent('#info')).toMatch(
      /^warning: enough\.csv: the val and test splits are shorter than one episode \(env\.episodeBars 250\)/m,
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('backtests a checkpoint trained on a file only on that file, saying which to drop', async () => {
    const { page, errors } = await open(browsers.cpu);
    await dropFile(page, 'a.csv', await synthCsv('a.csv', 800));
    await page.waitForFunction(
      () => document.getElementById('data-status')!.textContent === 'a.csv: 800 bars, valid',
    );
    await train(page, 1);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
    const tar = join(tmp, 'a.tar');
    await download.saveAs(tar);
    const backtest = async () => {
      await page.evaluate(() => document.getElementById('backtest')!.replaceChildren());
      await page.setInputFiles('#ckpt-file', tar);
      await page.waitForSelector('#backtest .error, #backtest .verdict', { timeout: 10_000 });
      return page.$eval('#backtest .error', (e) => e.textContent).catch(() => null);
    };
    // Other bars on the page: the page's words (not the CLI's --data).
    await dropFile(page, 'b.csv', await synthCsv('b.csv', 900));
    await page.waitForFunction(
      () => document.getElementById('data-status')!.textContent === 'b.csv: 900 bars, valid',
    );
    expect(await backtest()).toBe(
      "the checkpoint trained on a.csv (800 bars), and the page's b.csv (900 bars) holds other bars: drop a.csv on the page first",
    );
    await page.click('#data-clear');
    expect(await backtest()).toBe('the checkpoint trained on a.csv: drop that file on the page first');
    await dropFile(page, 'a.csv', await synthCsv('a.csv', 800));
    await page.waitForFunction(
      () => document.getElementById('data-status')!.textContent === 'a.csv: 800 bars, valid',
    );
    expect(await backtest()).toBeNull();
    expect(await page.getAttribute('#backtest', 'data-report')).not.toBeNull();
    expect(errors).toEqual([]);
    await page.close();
  });

  it('reloads a data file chosen again in the file picker', async () => {
    const { page, errors } = await open(browsers.cpu);
    const file = join(tmp, 'again.csv');
    writeFileSync(file, await synthCsv('again.csv', 1000));
    const status = (text: string) =>
      page.waitForFunction((t) => document.getElementById('data-status')!.textContent === t, text, {
        timeout: 10_000,
      });
    await page.setInputFiles('#data-file', file);
    await status('again.csv: 1,000 bars, valid');
    await dropFile(page, 'other.csv', await synthCsv('other.csv', 800));
    await status('other.csv: 800 bars, valid');
    // The picker's value was again.csv: choosing it again fired no change event, and other.csv stayed.
    await page.setInputFiles('#data-file', file);
    await status('again.csv: 1,000 bars, valid');
    // Edited and chosen again, it is read again.
    writeFileSync(file, await synthCsv('again.csv', 900));
    await page.setInputFiles('#data-file', file);
    await status('again.csv: 900 bars, valid');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows the row-and-rule error of data check for a malformed CSV and trains nothing', async () => {
    const csv =
      'timestamp,open,high,low,close,volume\n' +
      '2024-01-01T00:00:00Z,100,101,99,100.5,10\n' +
      '2024-01-01T00:01:00Z,100.5,99,98,100,10\n';
    const file = join(tmp, 'bad.csv');
    writeFileSync(file, csv);
    const cli = await loadBars(file).then(
      () => '',
      (e: Error) => e.message,
    );
    expect(cli).toMatch(/data row 2 \(line 3\): high/);
    const { page } = await open(browsers.cpu);
    await dropFile(page, 'bad.csv', new TextEncoder().encode(csv));
    await page.waitForSelector('#data-error:not([hidden])');
    expect(await page.textContent('#data-error')).toBe(cli.replace(file, 'bad.csv'));
    expect(await page.isDisabled('#start')).toBe(true);
    expect(await page.textContent('#epoch')).toBe('0');
    expect(await page.textContent('#status')).toBe('ready');
    // The way back to the synthetic market is offered, though no good file came before.
    expect(await page.isVisible('#data-clear')).toBe(true);
    await page.click('#data-clear');
    expect(await page.textContent('#data-status')).toBe('synthetic market');
    expect(await page.isHidden('#data-error')).toBe(true);
    expect(await page.isEnabled('#start')).toBe(true);
    await page.close();
  });

  it('trains and validates on a dropped Parquet file, and shows the rule a malformed one breaks', async () => {
    const good = join(tmp, 'bars.parquet');
    await saveBars(good, generateSynthetic({ bars: 3000, seed: 5 }));
    const bad = join(tmp, 'dup.parquet');
    const t0 = Date.UTC(2024, 0, 1);
    parquetWriteFile({
      filename: bad,
      columnData: [
        { name: 'timestamp', data: [t0, t0 + 60_000, t0 + 60_000], type: 'TIMESTAMP' },
        ...['open', 'high', 'low', 'close', 'volume'].map((name) => ({
          name,
          data: name === 'low' ? [0.5, 0.5, 0.5] : name === 'high' ? [2, 2, 2] : [1, 1, 1],
          type: 'DOUBLE' as const,
        })),
      ],
    });
    const cli = await loadBars(bad).then(
      () => '',
      (e: Error) => e.message,
    );
    expect(cli).toMatch(/data row 3: duplicate timestamp/);
    const { page, errors } = await open(browsers.cpu);
    await dropFile(page, 'dup.parquet', readFileSync(bad));
    await page.waitForSelector('#data-error:not([hidden])');
    expect(await page.textContent('#data-error')).toBe(cli.replace(bad, 'dup.parquet'));
    expect(await page.isDisabled('#start')).toBe(true);

    await dropFile(page, 'bars.parquet', readFileSync(good));
    await page.waitForFunction(() => document.getElementById('data-status')!.textContent!.endsWith('valid'));
    expect(await page.textContent('#data-status')).toBe('bars.parquet: 3,000 bars, valid');
    expect(await page.isHidden('#data-error')).toBe(true);
    await train(page, 1);
    expect(await page.textContent('#epoch')).toBe('1');
    expect(await page.textContent('.run-subtitle')).toMatch(/bars\.parquet \(3000 bars\)/);
    // Validated on the file's validation split (15% of 3,000 bars): the equity curve has its bars.
    expect(await points(page, 'equity')).toBeGreaterThan(300);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("trains 1 epoch of C51 on WebGPU with the device engine; its checkpoint is the CLI's format", async () => {
    const { page, errors } = await open(browsers.gpu);
    await page.check('input[name=algo][value=c51]');
    await train(page, 1, 'c51');
    expect(await page.textContent('#epoch')).toBe('1');
    expect(await page.textContent('.run-subtitle')).toMatch(/^C51 on WebGPU/);
    // The backend the run chose (runTraining's describeChoice line), not the form's wish.
    expect(await page.textContent('#info')).toMatch(/^backend webgpu: .*swiftshader/im);
    expect(
      await page.$$eval('[data-chart=losses] .u-legend th', (t) => t.map((e) => e.textContent)),
    ).toContain('mean |TD error|');
    expect(await points(page, 'losses')).toBe(1);
    expect(await points(page, 'equity')).toBeGreaterThan(100);
    const verdicts = await page.$$eval('.verdict', (v) => v.map((e) => e.textContent));
    expect(verdicts[1]).toMatch(/^best\/ \(epoch 1 of 1\) (beat|did NOT beat) .* on the test split/);
    const rate = (await page.textContent('#rate'))!;
    expect(rate).toMatch(/[\d,]+ env steps\/s/);
    writeFileSync(join(ARTIFACTS, 'c51-webgpu-rate.txt'), `${rate}\n`);

    // The downloaded best/ unpacks into a checkpoint `foxhunt backtest` reads; the page backtests
    // the same .tar to the same metrics.
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
    const tar = join(tmp, 'c51-webgpu.tar');
    await download.saveAs(tar);
    const dir = join(tmp, 'c51-webgpu');
    mkdirSync(dir);
    for (const f of readTar(new Uint8Array(readFileSync(tar)))) writeFileSync(join(dir, f.name), f.bytes);
    const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).state;
    expect([state.algo, state.backend, state.epoch]).toEqual(['c51', 'webgpu', 1]);
    expect(readdirSync(dir).sort()).toEqual([
      'curiosity.safetensors',
      'env.safetensors',
      'online.safetensors',
      'optimizer.safetensors',
      'replay.safetensors',
      'state.json',
      'target.safetensors',
    ]);
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await main(['backtest', '--checkpoint', dir, '--json'])).toBe(0);
      const cli = JSON.parse(String(log.mock.calls[0][0]));
      await page.setInputFiles('#ckpt-file', tar);
      await page.waitForSelector('#backtest[data-report]');
      const shown = JSON.parse((await page.getAttribute('#backtest', 'data-report'))!);
      expect(shown).toEqual({ policy: cli.policy, buyHold: cli.buyHold, random: cli.random });
    } finally {
      log.mockRestore();
    }
    expect(await page.textContent('#backtest .verdict')).toMatch(
      /loaded C51 checkpoint \(epoch 1, webgpu backend\)/,
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('says what to do when the GPU is lost mid-run, keeps the checkpoints written, and trains again', async () => {
    const { page, errors } = await open(browsers.gpu);
    await page.fill('input[name=epochs]', '2');
    await page.fill('input[name=episodes]', '2');
    await page.fill('input[name=steps]', '16');
    // The test's hook, in the trainer's worker only (the page has none): the device the run
    // requests is kept, to be destroyed as a driver reset or a GPU crash loses it (the device's
    // `lost` promise resolves, and its pending work fails).
    const [worker] = page.workers();
    await worker.evaluate(() => {
      const request = GPUAdapter.prototype.requestDevice;
      GPUAdapter.prototype.requestDevice = async function (this: GPUAdapter, desc?: GPUDeviceDescriptor) {
        const device = await request.call(this, desc);
        (self as unknown as { runDevice: GPUDevice }).runDevice = device;
        return device;
      };
    });
    await page.click('#start');
    await page.waitForFunction(
      () => document.getElementById('phase')!.textContent!.startsWith('epoch 2:'),
      null,
      {
        timeout: 300_000,
      },
    );
    await worker.evaluate(() => (self as unknown as { runDevice: GPUDevice }).runDevice.destroy());
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running', null, {
      timeout: 60_000,
    });
    expect(await page.textContent('#status')).toBe('failed');
    expect(await page.textContent('#phase')).toBe('failed in epoch 2 (1 of 2 finished)');
    expect(await page.textContent('#run-error')).toBe(
      'the GPU stopped working in epoch 2 (its driver was reset, or the browser took the GPU back). ' +
        "This run's checkpoints of its 1 finished epoch are kept: Download checkpoint saves them. Continue trains on from epoch 1. " +
        'Start trains a new run in their place; if it fails as well, reload the page.',
    );
    // The backend's own words, for a bug report.
    expect(await page.textContent('#info')).toMatch(/^WebGPU device lost \(destroyed\)/m);
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
    const tar = readTar(new Uint8Array(readFileSync((await download.path())!)));
    const state = JSON.parse(new TextDecoder().decode(tar.find((f) => f.name === 'state.json')!.bytes)).state;
    expect([state.epoch, state.backend]).toEqual([1, 'webgpu']);
    const lost = await logLines(page);
    expect(lost.map((l) => l.epoch)).toEqual([1]);
    // The page stays usable: Continue gets a new device and trains the run on from epoch 1 to
    // its end (the kernels compile again on the new device: ~30 s on SwiftShader).
    await page.click('#continue');
    await page.waitForFunction(() => document.getElementById('status')!.textContent !== 'running', null, {
      timeout: 300_000,
    });
    expect(await page.textContent('#run-error')).toBe('');
    expect(await page.textContent('#status')).toBe('finished');
    expect(await page.textContent('#info')).toMatch(/^backend webgpu: .*swiftshader/im);
    const [again] = await Promise.all([page.waitForEvent('download'), page.click('#dl-checkpoint')]);
    const files = readTar(new Uint8Array(readFileSync((await again.path())!)));
    const best = JSON.parse(
      new TextDecoder().decode(files.find((f) => f.name === 'state.json')!.bytes),
    ).state;
    expect(best.backend).toBe('webgpu');
    expect(await points(page, 'reward')).toBe(2);
    const whole = await logLines(page);
    expect(whole.map((l) => l.epoch)).toEqual([1, 2]);
    expect(whole[0]).toEqual(lost[0]);
    // With the adapter gone too (WebGPU disabled after repeated GPU crashes), Start says to reload.
    await worker.evaluate(() => {
      GPU.prototype.requestAdapter = async () => null;
    });
    await page.click('#start');
    await page.waitForFunction(() => document.getElementById('status')!.textContent === 'failed');
    expect(await page.textContent('#run-error')).toMatch(
      /^backend webgpu unavailable: .*: reload the page to look for the GPU again$/,
    );
    expect(errors).toEqual([]);
    await page.close();
  });

  it('trains 1 epoch of DQN on WebGPU with the device engine', async () => {
    const { page, errors } = await open(browsers.gpu);
    await page.check('input[name=algo][value=dqn]');
    await train(page, 1, 'dqn');
    expect(await page.textContent('#epoch')).toBe('1');
    expect(await page.textContent('.run-subtitle')).toMatch(/^DQN on WebGPU/);
    expect(await page.textContent('#info')).toMatch(/^backend webgpu: .*swiftshader/im);
    expect(await points(page, 'equity')).toBeGreaterThan(100);
    expect(await page.$$eval('.verdict', (v) => v.length)).toBe(2);
    expect(errors).toEqual([]);
    await page.close();
  });

  it('trains 1 epoch of IQN on WebGPU with the device engine', async () => {
    const { page, errors } = await open(browsers.gpu);
    await page.check('input[name=algo][value=iqn]');
    await train(page, 1, 'iqn');
    expect(await page.textContent('#epoch')).toBe('1');
    expect(await page.textContent('.run-subtitle')).toMatch(/^IQN on WebGPU/);
    expect(await page.textContent('#info')).toMatch(/^backend webgpu: .*swiftshader/im);
    expect(await points(page, 'equity')).toBeGreaterThan(100);
    expect(await page.$$eval('.verdict', (v) => v.length)).toBe(2);
    expect(errors).toEqual([]);
    await page.close();
  });

  describe('a CLI run', () => {
    const out = join(tmp, 'cli-run');
    let log: ReturnType<typeof vi.spyOn>;
    beforeAll(async () => {
      const config = join(tmp, 'tiny.json');
      writeFileSync(
        config,
        JSON.stringify({
          train: { backend: 'cpu', epochs: 2 },
          data: { synthBars: 4000 },
          env: { episodeBars: 250, curiosityBatch: 64 },
          rollout: { episodes: 2, steps: 32 },
          ppo: { minibatch: 32, updateEpochs: 1 },
        }),
      );
      log = vi.spyOn(console, 'log').mockImplementation(() => {});
      vi.spyOn(console, 'error').mockImplementation(() => {});
      expect(await main(['train', '--config', config, '--out', out])).toBe(0);
    });
    afterAll(() => vi.restoreAllMocks());

    it("loads the CLI's checkpoint in the page and backtests it to the same metrics as foxhunt backtest", async () => {
      log.mockClear();
      expect(await main(['backtest', '--checkpoint', out, '--json'])).toBe(0);
      const cli = JSON.parse(String(log.mock.calls[0][0]));
      const best = join(out, 'best');
      const { page, errors } = await open(browsers.cpu);
      await page.setInputFiles(
        '#ckpt-file',
        readdirSync(best).map((f) => join(best, f)),
      );
      await page.waitForSelector('#backtest[data-report]');
      const shown = JSON.parse((await page.getAttribute('#backtest', 'data-report'))!);
      expect(shown).toEqual({ policy: cli.policy, buyHold: cli.buyHold, random: cli.random });
      expect(await page.textContent('#backtest .verdict')).toMatch(/on the test split/);
      // The same files chosen again (say, once the data file a checkpoint needs is dropped) backtest again.
      await page.evaluate(() => document.getElementById('backtest')!.removeAttribute('data-report'));
      await page.setInputFiles(
        '#ckpt-file',
        readdirSync(best).map((f) => join(best, f)),
      );
      await page.waitForSelector('#backtest[data-report]', { timeout: 10_000 });
      // Cancelling the file dialog empties the selection: the backtest stays, no error replaces it.
      await page.setInputFiles('#ckpt-file', []);
      await page.waitForTimeout(500);
      expect(await page.getAttribute('#backtest', 'data-report')).not.toBeNull();
      expect(await page.$('#backtest .error')).toBeNull();
      expect(errors).toEqual([]);
      await page.close();
    });

    it('says what a chosen checkpoint lacks, and shows the next good one', async () => {
      const best = join(out, 'best');
      const { page, errors } = await open(browsers.cpu);
      const choose = (files: string[]) =>
        page.setInputFiles(
          '#ckpt-file',
          files.map((f) => join(best, f)),
        );
      const error = (start: string) =>
        page.waitForFunction(
          (t) => document.querySelector('#backtest .error')?.textContent?.startsWith(t),
          start,
          { timeout: 10_000 },
        );
      await choose(readdirSync(best));
      await page.waitForSelector('#backtest .verdict');
      await choose(['actor.safetensors', 'critic.safetensors']);
      await error('no state.json');
      expect(await page.textContent('#backtest .error')).toBe(
        "no state.json among actor.safetensors, critic.safetensors: choose a checkpoint's state.json with its " +
          '.safetensors files, or the .tar that Download checkpoint gives',
      );
      await choose(['state.json']);
      await error('checkpoint/');
      expect(await page.textContent('#backtest .error')).toBe(
        'checkpoint/actor.safetensors: missing, but state.json lists it; the checkpoint is incomplete',
      );
      // A good choice after a bad one shows its backtest in place of the error.
      await choose(readdirSync(best));
      await page.waitForSelector('#backtest[data-report]');
      await page.waitForSelector('#backtest .verdict', { timeout: 10_000 });
      expect(await page.$('#backtest .error')).toBeNull();
      expect(errors).toEqual([]);
      await page.close();
    });

    it('writes report.html, which opens offline with its charts drawn and no console error', async () => {
      // train wrote it; `foxhunt report` rebuilds it.
      const report = join(out, 'report.html');
      expect(statSync(report).size).toBeGreaterThan(50_000);
      rmSync(report);
      expect(await main(['report', out])).toBe(0);
      const html = readFileSync(report, 'utf8');
      expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/);
      const { page, errors } = await (async () => {
        const p = await browsers.cpu.newPage({ viewport: { width: 1280, height: 1000 } });
        const e: string[] = [];
        p.on('pageerror', (x) => e.push(x.message));
        p.on('console', (m) => m.type() === 'error' && e.push(m.text()));
        await p.route(/^https?:/, (r) => r.abort());
        await p.goto(`file://${join(out, 'report.html')}`);
        await chartsDrawn(p);
        return { page: p, errors: e };
      })();
      const charts = await page.$$eval('[data-chart]', (els) =>
        els.map((e) => [(e as HTMLElement).dataset.chart, Number((e as HTMLElement).dataset.points)]),
      );
      expect(charts.map(([c]) => c)).toEqual(['reward', 'losses', 'equity', 'drawdown', 'actions']);
      for (const [, n] of charts) expect(n).toBeGreaterThan(0);
      for (const n of await canvasColours(page)) expect(n).toBeGreaterThan(2);
      expect(await page.$$eval('.verdict', (v) => v.length)).toBe(2);
      expect(errors).toEqual([]);
      await page.close();
    });
  });
});
