/**
 * `foxhunt sim`: replays a fixed action sequence through the reference simulator from a chosen
 * bar and writes one CSV row per step (docs/ENV.md, "The sim trace"). The episode is the
 * simulator's own: it ends at the first `done` (barrier or collapse) or when the actions run
 * out; the curiosity bonus comes from a curiosity model freshly initialised with the run seed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { formatF32, replayActions, TRACE_COLUMNS } from '../../env/trace.js';
import { buildMarket } from '../../features/market.js';
import { initParams } from '../../nets/forward.js';
import { curiosityLayout, NetId, NUM_ACTIONS } from '../../nets/layout.js';
import { intFlag, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { configFrom, loadForCli } from './data-common.js';

const usage = `usage: foxhunt sim --data FILE --start BAR --actions FILE.txt --out TRACE.csv [options]

Replays one action per line of FILE.txt (integers 0..44) from bar BAR of the data through the
reference simulator and writes one CSV row per step. Stops at the first done (a barrier or a
collapse of the account) or when the actions run out.

  --data FILE        market bars (.csv or .parquet)
  --start BAR        the first decision bar (0-based; at least data.maxLookback, the warm-up)
  --actions FILE     one action per line; blank lines are skipped
  --out FILE         the trace CSV to write
  --config FILE      JSON config (env costs, barriers, reward; data.maxLookback)
  --seed N           seed of the curiosity model's initialisation (default: train.seed)
  --no-curiosity     curiosity bonus 0`;

/** Integers 0..44, one per line; blank lines skipped; anything else names the file and line. */
export function parseActions(text: string, file: string): number[] {
  const actions: number[] = [];
  text.split(/\r?\n/).forEach((raw, k) => {
    const line = raw.trim();
    if (line === '') return;
    const a = Number(line);
    if (!/^\d+$/.test(line) || a >= NUM_ACTIONS) {
      throw new UserError(`${file}:${k + 1}: "${line}" is not an action (one integer 0..44 per line)`);
    }
    actions.push(a);
  });
  if (actions.length === 0) throw new UserError(`${file}: no actions (one integer 0..44 per line)`);
  return actions;
}

async function run(args: string[]): Promise<number> {
  const { values } = parseFlags(
    args,
    {
      data: { type: 'string' },
      start: { type: 'string' },
      actions: { type: 'string' },
      out: { type: 'string' },
      config: { type: 'string' },
      seed: { type: 'string' },
      'no-curiosity': { type: 'boolean' },
    },
    usage,
  );
  for (const name of ['data', 'start', 'actions', 'out'] as const) {
    if (values[name] === undefined) throw new UserError(`--${name} is required\n${usage}`);
  }
  const config = await configFrom(values.config as string | undefined);
  if (values.seed !== undefined) config.train.seed = intFlag(values.seed as string, 'seed', 0);
  const start = intFlag(values.start as string, 'start', 0);
  const actionsPath = values.actions as string;
  const actions = parseActions(await readText(actionsPath, '--actions'), actionsPath);

  const market = buildMarket((await loadForCli(values.data as string, {})).bars, config);
  const curiosity = values['no-curiosity']
    ? null
    : {
        layout: curiosityLayout(),
        params: initParams(curiosityLayout(), NetId.Curiosity, config.train.seed),
      };
  const maxLookback = config.data.maxLookback;
  if (start < maxLookback || start > market.n - 2) {
    throw new UserError(
      `--start ${start} is outside the usable bars ${maxLookback}..${market.n - 2} ` +
        `(the first data.maxLookback = ${maxLookback} bars are feature warm-up; a step needs the next bar)`,
    );
  }
  const result = replayActions(market, config, start, actions, curiosity);
  const outPath = values.out as string;
  await writeFile(outPath, `${[TRACE_COLUMNS.join(','), ...result.rows].join('\n')}\n`);
  const last = result.last;
  const ending = last.done ? 'done' : 'actions ran out';
  console.log(
    `sim: ${result.rows.length} steps from bar ${start} (${ending}): value ${formatF32(last.value)}, ` +
      `fees ${result.costs.toPrecision(6)} -> ${outPath}`,
  );
  if (result.unplayed > 0) {
    console.error(
      `sim: the data ends at bar ${market.n - 1}; the last ${result.unplayed} actions were not replayed`,
    );
  }
  return 0;
}

async function readText(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UserError(`${flag} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

export const simCommand: Command = {
  name: 'sim',
  summary: 'replay a fixed action sequence through the reference simulator into a CSV trace',
  usage,
  run,
};
