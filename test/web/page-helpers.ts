/**
 * What test/web/page.test.ts asks of a page of the demo: the site served and the browsers launched
 * (servePage), a fresh page, a tiny run trained, its main thread's slow tasks in a trace, the log
 * Download gives, a dropped file, and its charts' state.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright';
import { build, type PreviewServer, preview } from 'vite';
import { afterAll, beforeAll, expect } from 'vitest';
import { saveBars } from '../../src/data/load.js';
import { generateSynthetic } from '../../src/data/synthetic.js';

/**
 * The page's main-thread tasks over 20 ms of wall clock in a Chromium trace (category `toplevel`,
 * its ThreadControllerImpl::RunTask events), each with the CPU time the thread spent in it. The
 * Long Tasks API's 50 ms is not the trace's: a 68 ms long task has shown up as a shorter RunTask,
 * so the trace is read from 20 ms to hold a task for every long task the page saw.
 */
export function slowMainThreadTasks(trace: Buffer): { wallMs: number; cpuMs: number }[] {
  type Event = { name: string; ph: string; pid: number; tid: number; dur?: number; tdur?: number };
  const events: Event[] = JSON.parse(trace.toString('utf8')).traceEvents;
  const main = new Set(
    events
      .filter((e) => e.ph === 'M' && e.name === 'thread_name')
      .filter((e) => (e as Event & { args: { name: string } }).args.name === 'CrRendererMain')
      .map((e) => `${e.pid}/${e.tid}`),
  );
  const tasks = events.filter(
    (e) => e.ph === 'X' && e.name === 'ThreadControllerImpl::RunTask' && main.has(`${e.pid}/${e.tid}`),
  );
  expect(tasks.length).toBeGreaterThan(100);
  // Every slow task must carry its thread time (a short one may not: one in a loaded run did not).
  const slow = tasks.filter((e) => e.dur! > 20_000);
  expect(slow.filter((e) => e.tdur === undefined)).toEqual([]);
  return slow.map((e) => ({ wallMs: Math.round(e.dur! / 1000), cpuMs: Math.round(e.tdur! / 1000) }));
}

/** The epoch lines of the log that Download log saves (the summary line left out). */
export async function logLines(page: Page): Promise<{ epoch: number }[]> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#dl-log')]);
  return readFileSync((await download.path())!, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.summary === undefined);
}

/** A drop event on the drop zone carrying the file, as a user's drag and drop delivers it. */
export async function dropFile(page: Page, name: string, bytes: Uint8Array) {
  const transfer = await page.evaluateHandle(
    ([n, b64]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], n));
      return dt;
    },
    [name, Buffer.from(bytes).toString('base64')],
  );
  await page.dispatchEvent('#drop', 'drop', { dataTransfer: transfer });
}

/** Waits until every chart has drawn its canvas (charts are created one per task). */
export const chartsDrawn = (page: Page) =>
  page.waitForFunction(() =>
    [...document.querySelectorAll<HTMLElement>('[data-chart]')].every((e) => e.dataset.drawn === 'true'),
  );

/** Distinct colours drawn in each chart's canvas (1 = blank). */
export const canvasColours = (page: Page) =>
  page.$$eval('[data-chart] canvas', (canvases) =>
    (canvases as HTMLCanvasElement[]).map((c) => {
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set<number>();
      for (let i = 0; i < d.length; i += 4 * 7)
        seen.add((d[i] << 24) | (d[i + 1] << 16) | (d[i + 2] << 8) | d[i + 3]);
      return seen.size;
    }),
  );

export const points = (page: Page, chart: string) =>
  page.$eval(`[data-chart=${chart}]`, (e) => Number((e as HTMLElement).dataset.points));

/** Trains `epochs` epochs of a tiny run; returns the main-thread tasks over 50 ms seen meanwhile. */
export async function train(page: Page, epochs: number, algo = 'ppo'): Promise<number[]> {
  await page.check(`input[name=algo][value=${algo}]`);
  await page.fill('input[name=epochs]', String(epochs));
  await page.fill('input[name=episodes]', '2');
  await page.fill('input[name=steps]', '16');
  await page.evaluate(() => {
    const w = window as unknown as { longTasks: number[] };
    w.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) w.longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
  await page.click('#start');
  await page.waitForFunction(
    () => ['finished', 'failed', 'stopped'].includes(document.getElementById('status')!.textContent!),
    null,
    { timeout: 600_000 },
  );
  expect(await page.textContent('#run-error')).toBe('');
  expect(await page.textContent('#status')).toBe('finished');
  expect(await page.textContent('#phase')).toBe('all epochs done');
  return page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);
}

export const ARTIFACTS = 'runs/web';
const args = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
export const tmp = mkdtempSync(join(tmpdir(), 'foxhunt-web-'));
let server: PreviewServer;
let url: string;
/** Chromium with WebGPU (SwiftShader) and without an adapter, launched by servePage. */
export const browsers = {} as { gpu: Browser; cpu: Browser };

/** Builds the site, serves it and launches the browsers before the file's tests; undoes it after. */
export function servePage(): void {
  beforeAll(async () => {
    await build({ configFile: 'vite.config.ts', logLevel: 'warn' });
    server = await preview({
      configFile: 'vite.config.ts',
      preview: { port: 0, host: '127.0.0.1' },
      logLevel: 'warn',
    });
    url = server.resolvedUrls!.local[0];
    const launch = (extra: string[]) =>
      chromium.launch({ executablePath: '/usr/bin/chromium', args: [...args, ...extra] });
    // Without --enable-unsafe-webgpu, Debian's Chromium gives navigator.gpu but no adapter here.
    [browsers.gpu, browsers.cpu] = await Promise.all([launch(['--enable-unsafe-webgpu']), launch([])]);
    mkdirSync(ARTIFACTS, { recursive: true });
  });
  afterAll(async () => {
    await Promise.all([browsers.gpu?.close(), browsers.cpu?.close()]);
    await server?.close();
    rmSync(tmp, { recursive: true, force: true });
  });
}

/** A fresh page of `browser` on the site, its console errors collected, the device probed. */
export async function open(browser: Browser | BrowserContext): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().includes('favicon')) errors.push(m.text());
  });
  await page.goto(url);
  await page.waitForFunction(() => !(document.getElementById('start') as HTMLButtonElement).disabled);
  await chartsDrawn(page);
  return { page, errors };
}

/** The bytes of a CSV of `bars` synthetic bars, written by saveBars. */
export async function synthCsv(name: string, bars: number): Promise<Uint8Array> {
  const file = join(tmp, name);
  await saveBars(file, generateSynthetic({ bars, seed: 3 }));
  return readFileSync(file);
}
