#!/usr/bin/env node
/**
 * Runs a sweep of `foxhunt train` configurations as parallel processes, then summarises their
 * validation logs against the learning criterion of test/e2e/train-learns.test.ts: the greedy
 * policy's total return AND Sharpe above buy-and-hold's and random's, and at least 100 trades.
 *
 *   node scripts/sweep.mjs [--foxhunt CMD] [--jobs J] [--out DIR] [--time-limit S] [--only A,B]
 *                          [--min-trades K] [--json FILE] [--summarize] SWEEP.json
 *
 * SWEEP.json: `{ "description", "flags": {...}, "seeds": [1, 2, 3], "configs": [{ "name", "note",
 * "flags", "seeds" }] }` (or just the array of configs; description and note are for people). A flag object maps a `foxhunt train` option without its dashes
 * ("epochs", "backend", "rollout.episodes", ...) to its value; a config's flags override the
 * sweep's. Run (config, seed) trains with `--seed S --out DIR/<name>/seed<S>`, its output going to
 * DIR/<name>/seed<S>.out. `--time-limit` stops the runs still going after S seconds (SIGTERM) and
 * summarises what their logs hold; so does Ctrl-C. `--summarize` only reads DIR's logs.
 *
 * Self-contained (node built-ins only), so it runs beside the portable bundle:
 *   node scripts/sweep.mjs --foxhunt "node bundle/bin/foxhunt.js" --jobs 15 configs/sweep-cpu.json
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

/** Position runs the policy must make on validation (MIN_TRADES of the learning test). */
export const MIN_TRADES = 100;

const usage = `usage: node scripts/sweep.mjs [--foxhunt CMD] [--jobs J] [--out DIR] [--time-limit S]
                             [--only NAME,...] [--min-trades K] [--json FILE] [--summarize] SWEEP.json

  --foxhunt CMD     the foxhunt command, split on spaces (default "node bin/foxhunt.js"; the portable
                    bundle: "node bundle/bin/foxhunt.js")
  --jobs J          runs at once (default: the CPU count)
  --out DIR         sweep directory (default runs/sweep): DIR/<config>/seed<S>/log.jsonl
  --time-limit S    stop runs still going after S seconds and summarise what they logged
  --only A,B        run only these configs
  --min-trades K    trades the criterion requires (default ${MIN_TRADES})
  --json FILE       also write the summary as JSON
  --summarize       run nothing; summarise the logs already in DIR`;

/** Reads and checks a sweep file's object; returns `[{ name, flags, seeds }]` with flags merged. */
export function parseSweep(spec, where = 'sweep') {
  const top = Array.isArray(spec) ? { configs: spec } : spec;
  if (!top || typeof top !== 'object' || !Array.isArray(top.configs)) {
    throw new Error(`${where}: expected { "configs": [...] } or an array of configs`);
  }
  unknownKeys(top, ['description', 'flags', 'seeds', 'configs'], where);
  const common = checkFlags(top.flags ?? {}, `${where}: flags`);
  const seeds = top.seeds ?? [1, 2, 3];
  const names = new Set();
  return top.configs.map((c, i) => {
    const at = `${where}: configs[${i}]`;
    if (!c || typeof c.name !== 'string' || !/^[\w.-]+$/.test(c.name)) {
      throw new Error(`${at}: needs a "name" of letters, digits, '.', '_' or '-'`);
    }
    unknownKeys(c, ['name', 'note', 'flags', 'seeds'], at);
    if (names.has(c.name)) throw new Error(`${at}: the name "${c.name}" is used twice`);
    names.add(c.name);
    const s = c.seeds ?? seeds;
    if (!Array.isArray(s) || s.length === 0 || !s.every((x) => Number.isInteger(x) && x >= 0)) {
      throw new Error(`${at}: seeds must be a non-empty array of non-negative integers`);
    }
    const flags = { ...common, ...checkFlags(c.flags ?? {}, `${at}.flags`) };
    for (const k of ['seed', 'out']) {
      if (k in flags) throw new Error(`${at}: "${k}" is set by the sweep, not by a config`);
    }
    return { name: c.name, flags, seeds: s };
  });
}

function unknownKeys(obj, known, at) {
  for (const k of Object.keys(obj)) {
    if (!known.includes(k)) throw new Error(`${at}: unknown key "${k}" (known: ${known.join(', ')})`);
  }
}

function checkFlags(flags, at) {
  if (!flags || typeof flags !== 'object' || Array.isArray(flags)) throw new Error(`${at} must be an object`);
  for (const [k, v] of Object.entries(flags)) {
    if (!/^[A-Za-z]\w*(\.[A-Za-z]\w*)?$/.test(k)) throw new Error(`${at}: "${k}" is not an option name`);
    if (!['string', 'number', 'boolean'].includes(typeof v)) {
      throw new Error(`${at}: "${k}" must be a string, number or boolean`);
    }
  }
  return flags;
}

/** The `foxhunt train` arguments of one run. */
export function trainArgs(config, seed, outDir) {
  const args = ['train', '--seed', String(seed), '--out', runDir(outDir, config.name, seed)];
  for (const [k, v] of Object.entries(config.flags)) args.push(`--${k}`, String(v));
  return args;
}

export const runDir = (outDir, name, seed) => join(outDir, name, `seed${seed}`);

/**
 * The epoch records of a run's log.jsonl (not the summary line that ends a finished run); a torn
 * last line (a run stopped mid-append) is dropped.
 */
export function readRunLog(dir) {
  const path = join(dir, 'log.jsonl');
  if (!existsSync(path)) return [];
  const lines = readFileSync(path, 'utf8').split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      const record = JSON.parse(line);
      if (!record.summary) out.push(record);
    } catch (err) {
      if (i !== lines.length - 1) throw new Error(`${path}: line ${i + 1} is not JSON (${err.message})`);
    }
  });
  return out;
}

/**
 * The criterion on one epoch's validation: return and Sharpe above buy-and-hold's and random's,
 * and at least `minTrades` trades.
 */
export function meetsCriterion(validation, minTrades = MIN_TRADES) {
  const { policy, buyHold, random } = validation;
  return (
    policy.totalReturn > buyHold.totalReturn &&
    policy.totalReturn > random.totalReturn &&
    policy.sharpe > buyHold.sharpe &&
    policy.sharpe > random.sharpe &&
    policy.trades >= minTrades
  );
}

/**
 * Summary of one config: `logs` maps each seed to its records. Per seed and epoch the policy's,
 * buy-and-hold's and random's return/Sharpe/trades and whether the criterion holds; `allSeeds`
 * lists the epochs every seed has logged and met it at; `complete` the last epoch all have.
 */
export function summarizeConfig(name, logs, minTrades = MIN_TRADES) {
  const seeds = Object.keys(logs)
    .map(Number)
    .sort((a, b) => a - b);
  const rows = {};
  for (const seed of seeds) {
    rows[seed] = logs[seed].map((r) => {
      const v = r.validation;
      const pick = (m) => ({ ret: m.totalReturn, sharpe: m.sharpe, trades: m.trades });
      return {
        epoch: r.epoch,
        policy: pick(v.policy),
        buyHold: pick(v.buyHold),
        random: pick(v.random),
        ok: meetsCriterion(v, minTrades),
      };
    });
  }
  const okEpochs = (seed) => new Set(rows[seed].filter((x) => x.ok).map((x) => x.epoch));
  const complete = seeds.length ? Math.min(...seeds.map((s) => rows[s].length && rows[s].at(-1).epoch)) : 0;
  let allSeeds = [];
  if (seeds.length) {
    const sets = seeds.map(okEpochs);
    allSeeds = [...sets[0]].filter((e) => sets.every((s) => s.has(e))).sort((a, b) => a - b);
  }
  const perSeed = Object.fromEntries(seeds.map((s) => [s, [...okEpochs(s)].sort((a, b) => a - b)]));
  return { name, seeds, rows, perSeed, allSeeds, complete };
}

const pct = (x) => `${(x * 100).toFixed(2)}%`;
const num = (x, d = 1) => x.toFixed(d);

/** The summary of one config as text lines. */
export function formatConfig(summary, flags = null) {
  const out = [`== ${summary.name}${flags ? `  ${flagString(flags)}` : ''}`];
  if (!summary.seeds.length) return [...out, '   no run has logged an epoch'];
  for (const seed of summary.seeds) {
    const rows = summary.rows[seed];
    const first = rows[0];
    if (!first) {
      out.push(`   seed ${seed}: no epoch logged`);
      continue;
    }
    out.push(
      `   seed ${seed}: buy-and-hold ${pct(first.buyHold.ret)} / ${num(first.buyHold.sharpe)}, ` +
        `random ${pct(first.random.ret)} / ${num(first.random.sharpe)}`,
    );
  }
  const head = (s) => `seed ${s}: return / Sharpe, trades`;
  const width = Math.max(26, ...summary.seeds.map((s) => head(s).length));
  out.push(`   epoch | ${summary.seeds.map((s) => head(s).padEnd(width)).join(' | ')}`.trimEnd());
  const epochs = [...new Set(summary.seeds.flatMap((s) => summary.rows[s].map((r) => r.epoch)))].sort(
    (a, b) => a - b,
  );
  for (const epoch of epochs) {
    const cells = summary.seeds.map((s) => {
      const r = summary.rows[s].find((x) => x.epoch === epoch);
      if (!r) return ''.padEnd(width);
      const cell = `${pct(r.policy.ret).padStart(7)} / ${num(r.policy.sharpe).padStart(6)}, ${String(r.policy.trades).padStart(4)}`;
      return `${cell} ${r.ok ? 'yes' : 'no '}`.padEnd(width);
    });
    out.push(`   ${String(epoch).padStart(5)} | ${cells.join(' | ')}`.trimEnd());
  }
  for (const seed of summary.seeds) {
    const e = summary.perSeed[seed];
    out.push(`   seed ${seed} meets the criterion at epochs: ${e.length ? e.join(', ') : 'none'}`);
  }
  out.push(
    `   all ${summary.seeds.length} seeds meet it at epochs: ${summary.allSeeds.length ? summary.allSeeds.join(', ') : 'none'}` +
      ` (epochs 1-${summary.complete} logged by every seed)`,
  );
  return out;
}

const flagString = (flags) =>
  Object.entries(flags)
    .map(([k, v]) => `--${k} ${v}`)
    .join(' ');

/** Reads the sweep directory's logs for `configs` and returns [summary, ...]. */
export function summarizeSweep(configs, outDir, minTrades = MIN_TRADES) {
  return configs.map((c) => {
    const logs = {};
    for (const seed of c.seeds) {
      const records = readRunLog(runDir(outDir, c.name, seed));
      if (records.length) logs[seed] = records;
    }
    return summarizeConfig(c.name, logs, minTrades);
  });
}

/** Runs every (config, seed) with at most `jobs` at once; resolves when all ended or were stopped. */
function runAll(runs, { foxhunt, jobs, outDir, timeLimit, log }) {
  const [cmd, ...pre] = foxhunt.split(/\s+/).filter(Boolean);
  const queue = [...runs];
  const live = new Map();
  const results = [];
  const t0 = Date.now();
  let stopping = false;
  return new Promise((done) => {
    const stop = (why) => {
      if (stopping) return;
      stopping = true;
      log(`${why}: stopping ${live.size} run(s), ${queue.length} not started`);
      queue.length = 0;
      for (const child of live.keys()) child.kill('SIGTERM');
      if (live.size === 0) finish();
    };
    const timer =
      timeLimit > 0 ? setTimeout(() => stop(`time limit of ${timeLimit} s`), timeLimit * 1000) : null;
    const onSignal = () => stop('interrupted');
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    const finish = () => {
      if (timer) clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      done(results);
    };
    const next = () => {
      while (!stopping && live.size < jobs && queue.length) {
        const { config, seed } = queue.shift();
        const dir = join(outDir, config.name);
        mkdirSync(dir, { recursive: true });
        const fd = openSync(join(dir, `seed${seed}.out`), 'w');
        const args = [...pre, ...trainArgs(config, seed, outDir)];
        const child = spawn(cmd, args, { stdio: ['ignore', fd, fd] });
        closeSync(fd);
        const started = Date.now();
        live.set(child, { config, seed, started });
        log(`start ${config.name} seed ${seed}: ${cmd} ${args.join(' ')}`);
        const end = (code, signal) => {
          if (!live.has(child)) return;
          live.delete(child);
          const secs = (Date.now() - started) / 1000;
          const epochs = readRunLog(runDir(outDir, config.name, seed)).length;
          const how = code === 0 ? 'done' : signal ? `stopped (${signal})` : `failed (exit ${code})`;
          results.push({ name: config.name, seed, code, signal, seconds: secs, epochs });
          log(
            `${how} ${config.name} seed ${seed}: ${epochs} epoch(s) in ${secs.toFixed(0)} s` +
              ` [${((Date.now() - t0) / 1000).toFixed(0)} s]`,
          );
          if (live.size === 0 && (stopping || queue.length === 0)) finish();
          else next();
        };
        child.on('error', (err) => {
          log(`cannot start ${cmd}: ${err.message}`);
          end(127, null);
        });
        child.on('exit', end);
      }
    };
    if (queue.length === 0) finish();
    else next();
  });
}

async function main(argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      foxhunt: { type: 'string', default: 'node bin/foxhunt.js' },
      jobs: { type: 'string' },
      out: { type: 'string', default: 'runs/sweep' },
      'time-limit': { type: 'string', default: '0' },
      only: { type: 'string' },
      'min-trades': { type: 'string', default: String(MIN_TRADES) },
      json: { type: 'string' },
      summarize: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1) throw new Error(`expected one sweep file\n${usage}`);
  const file = positionals[0];
  let configs = parseSweep(JSON.parse(readFileSync(file, 'utf8')), file);
  if (values.only) {
    const only = new Set(values.only.split(','));
    for (const n of only) if (!configs.some((c) => c.name === n)) throw new Error(`--only: no config "${n}"`);
    configs = configs.filter((c) => only.has(c.name));
  }
  const posInt = (s, what, min) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < min) throw new Error(`${what} must be an integer >= ${min}, got "${s}"`);
    return n;
  };
  const jobs = values.jobs === undefined ? availableParallelism() : posInt(values.jobs, '--jobs', 1);
  const timeLimit = posInt(values['time-limit'], '--time-limit', 0);
  const minTrades = posInt(values['min-trades'], '--min-trades', 0);
  const outDir = resolve(values.out);
  const log = (line) => console.error(`sweep: ${line}`);

  let results = [];
  if (!values.summarize) {
    const runs = configs.flatMap((config) => config.seeds.map((seed) => ({ config, seed })));
    log(`${runs.length} run(s) of ${configs.length} config(s), ${jobs} at once, in ${outDir}`);
    results = await runAll(runs, { foxhunt: values.foxhunt, jobs, outDir, timeLimit, log });
  }
  const summaries = summarizeSweep(configs, outDir, minTrades);
  for (const [i, s] of summaries.entries()) {
    console.log(formatConfig(s, configs[i].flags).join('\n'));
    console.log('');
  }
  console.log(`criterion: return and Sharpe above buy-and-hold and random, >= ${minTrades} trades`);
  for (const s of summaries) {
    const counts = s.seeds.map((seed) => `${s.perSeed[seed].length}`).join('/');
    console.log(
      `${s.name.padEnd(24)} all seeds at epochs: ${(s.allSeeds.join(', ') || 'none').padEnd(20)}` +
        ` epochs met per seed: ${counts || '-'}  (1-${s.complete} logged by every seed)`,
    );
  }
  const failed = results.filter((r) => r.code !== 0 && !r.signal);
  for (const r of failed)
    console.log(`run ${r.name} seed ${r.seed} failed: see ${join(outDir, r.name)}/seed${r.seed}.out`);
  if (values.json) {
    writeFileSync(
      values.json,
      `${JSON.stringify({ minTrades, runs: results, configs: summaries }, null, 1)}\n`,
    );
  }
  return failed.length ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`sweep: ${err.message}`);
      process.exit(2);
    },
  );
}
