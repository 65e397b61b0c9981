#!/usr/bin/env node
/**
 * The demo page's screenshot (docs/web-run.png): builds web/ with Vite, serves it with `vite
 * preview`, trains a run in Debian's headless Chromium with WebGPU (SwiftShader here) and saves a
 * full-page PNG of the trained run. Prints the page's progress line (steps/s) and the PNG's size.
 *
 *   node scripts/web-screenshot.mjs [--algo c51] [--epochs 3] [--episodes 4] [--steps 32]
 *                                   [--out docs/web-run.png] [--chromium /usr/bin/chromium]
 */
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright';
import { build, preview } from 'vite';

const { values } = parseArgs({
  options: {
    algo: { type: 'string', default: 'c51' },
    epochs: { type: 'string', default: '3' },
    episodes: { type: 'string', default: '4' },
    steps: { type: 'string', default: '32' },
    out: { type: 'string', default: 'docs/web-run.png' },
    chromium: { type: 'string', default: '/usr/bin/chromium' },
  },
});
if (!['ppo', 'dqn', 'c51', 'iqn'].includes(values.algo)) {
  throw new Error(`--algo ${values.algo}: expected ppo, dqn, c51 or iqn`);
}

await build({ configFile: 'vite.config.ts', logLevel: 'warn' });
const server = await preview({
  configFile: 'vite.config.ts',
  preview: { port: 0, host: '127.0.0.1' },
  logLevel: 'warn',
});
const browser = await chromium.launch({
  executablePath: values.chromium,
  args: [
    '--enable-unsafe-webgpu',
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await page.goto(server.resolvedUrls.local[0]);
  await page.waitForFunction(() => !document.getElementById('start').disabled);
  await page.check(`input[name=algo][value=${values.algo}]`);
  for (const name of ['epochs', 'episodes', 'steps']) await page.fill(`input[name=${name}]`, values[name]);
  const t0 = Date.now();
  await page.click('#start');
  await page.waitForFunction(
    () => ['finished', 'failed', 'stopped'].includes(document.getElementById('status').textContent),
    null,
    { timeout: 3_600_000 },
  );
  const status = await page.textContent('#status');
  if (status !== 'finished')
    throw new Error(`the run ended ${status}: ${await page.textContent('#run-error')}`);
  await page.waitForFunction(() =>
    [...document.querySelectorAll('[data-chart]')].every((e) => e.dataset.drawn === 'true'),
  );
  await page.waitForTimeout(500);
  await page.screenshot({ path: values.out, fullPage: true });
  console.log(`${await page.textContent('#device-name')}`);
  console.log(
    `${await page.textContent('.run-subtitle')}, ${values.epochs} epochs in ${((Date.now() - t0) / 1000).toFixed(0)} s`,
  );
  console.log(`${await page.textContent('#rate')}`);
  console.log(`${values.out}: ${Math.round(statSync(values.out).size / 1024)} KB`);
} finally {
  await browser.close();
  await server.close();
}
