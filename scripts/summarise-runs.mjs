#!/usr/bin/env node
// Summarises training runs for docs/RESULTS.md: node scripts/summarise-runs.mjs DIR, where DIR holds
// <arm>-s<seed>/log.jsonl (scripts/gpu-runs.sh). Per arm: epochs whose greedy policy beat
// buy-and-hold and random in return and Sharpe on validation (the choice rule), then per seed the
// best/ epoch and its validation and test rows as the run's summary line recorded them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node scripts/summarise-runs.mjs DIR');
  process.exit(2);
}
const beats = (s) =>
  ['buyHold', 'random'].every(
    (b) => s.policy.totalReturn > s[b].totalReturn && s.policy.sharpe > s[b].sharpe,
  );
const row = (s) =>
  ['policy', 'buyHold', 'random']
    .map((k) => `${(100 * s[k].totalReturn).toFixed(2)}% / ${s[k].sharpe.toFixed(2)}`)
    .join('  ') + (beats(s) ? '  beats both' : '  no');
const arms = new Map();
for (const name of readdirSync(dir).sort()) {
  const log = join(dir, name, 'log.jsonl');
  const m = /^(.*)-s(\d+)$/.exec(name);
  if (!m || !existsSync(log)) continue;
  const lines = readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return []; // a line cut off by a killed run
      }
    });
  const epochs = lines.filter((d) => !d.summary && d.validation);
  const summary = lines.find((d) => d.summary);
  const list = arms.get(m[1]) ?? [];
  list.push({ seed: m[2], epochs, summary });
  arms.set(m[1], list);
}
for (const [arm, runs] of arms) {
  const n = runs.reduce((a, r) => a + r.epochs.length, 0);
  const k = runs.reduce((a, r) => a + r.epochs.filter((e) => beats(e.validation)).length, 0);
  const per = runs.map((r) => r.epochs.filter((e) => beats(e.validation)).length).join(' ');
  console.log(`${arm}: ${k} of ${n} epochs beat both baselines on validation (per seed: ${per})`);
  for (const r of runs) {
    const b = r.summary?.best;
    if (!b) {
      console.log(`  seed ${r.seed}: ${r.epochs.length} epochs, no summary (the run did not end)`);
      continue;
    }
    console.log(
      `  seed ${r.seed}: best/ epoch ${b.epoch} of ${r.epochs.length}  (policy  buy-and-hold  random)`,
    );
    if (b.validation) console.log(`    validation  ${row(b.validation)}`);
    const test = b.test ?? r.summary.test;
    if (test) console.log(`    test        ${row(test)}`);
  }
}
