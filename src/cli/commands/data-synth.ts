/** `foxhunt data synth`: writes the seeded synthetic market (src/data/synthetic.ts) to CSV or Parquet. */
import { DataError } from '../../data/errors.js';
import { formatOf, saveBars } from '../../data/load.js';
import { generateSynthetic } from '../../data/synthetic.js';
import { intFlag, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';

const usage = `usage: foxhunt data synth --bars N --seed S --out FILE.csv|FILE.parquet

Writes N one-minute bars of the built-in regime-switching market (the same bars for the same
seed) with a spread column in bps.

  --bars N     number of bars (default 60000)
  --seed S     generator seed, a non-negative integer (default 1)
  --out FILE   .csv or .parquet`;

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    { bars: { type: 'string' }, seed: { type: 'string' }, out: { type: 'string' } },
    usage,
  );
  if (positionals.length) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  const out = values.out as string | undefined;
  if (!out) throw new UserError(`--out is required\n${usage}`);
  const bars = intFlag(values.bars as string | undefined, 'bars', 60_000, 1);
  const seed = intFlag(values.seed as string | undefined, 'seed', 1, 0);
  try {
    formatOf(out);
    await saveBars(out, generateSynthetic({ bars, seed }));
  } catch (err) {
    if (err instanceof DataError) throw new UserError(err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new UserError(`cannot write ${out}: ${code}`);
    throw err;
  }
  console.log(`wrote ${bars} synthetic bars (seed ${seed}) to ${out}`);
  return 0;
}

export const dataSynthCommand: Command = {
  name: 'data synth',
  summary: 'write the seeded synthetic market to CSV or Parquet',
  usage,
  run,
};
