/**
 * `foxhunt data features FILE --out FILE.csv`: the 51 features per bar (docs/FEATURES.md) as CSV,
 * one row per bar (warm-up rows are zeros), for inspection in other tools.
 */

import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { computeFeatures, FEATURE_COUNT, FEATURE_NAMES } from '../../features/features.js';
import { parseFlags } from '../args.js';
import { featureText } from '../feature_text.js';
import { type Command, UserError } from '../main.js';
import { configFrom, loadForCli, repairLine } from './data-common.js';

const usage = `usage: foxhunt data features FILE --out FILE.csv [--fill-gaps] [--drop-invalid] [--config FILE]

Computes the 51 causal features of every bar of FILE and writes them as CSV: a header
"timestamp,<51 feature names>", then one row per bar (ISO-8601 UTC time, features to 7
significant digits). The first data.maxLookback rows are the warm-up: zeros.

  --out FILE      the CSV to write
  --fill-gaps     insert flat zero-volume bars for missing bars first
  --drop-invalid  drop rows that break a rule instead of failing
  --config FILE   JSON config (data.maxLookback)`;

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      out: { type: 'string' },
      'fill-gaps': { type: 'boolean' },
      'drop-invalid': { type: 'boolean' },
      config: { type: 'string' },
    },
    usage,
  );
  if (positionals.length !== 1) throw new UserError(`give exactly one FILE\n${usage}`);
  const outPath = values.out as string | undefined;
  if (!outPath) throw new UserError(`--out is required\n${usage}`);
  const cfg = await configFrom(values.config as string | undefined);
  const opts = { fillGaps: values['fill-gaps'] === true, dropInvalid: values['drop-invalid'] === true };
  const { bars, report } = await loadForCli(positionals[0], opts);
  const features = computeFeatures(bars, cfg.data.maxLookback);

  const out = createWriteStream(outPath);
  const failed = new Promise<never>((_, reject) => out.on('error', reject));
  try {
    const write = async (s: string) => {
      if (!out.write(s)) await Promise.race([once(out, 'drain'), failed]);
    };
    await write(`timestamp,${FEATURE_NAMES.join(',')}\n`);
    const block = 4096;
    const cells: string[] = new Array(FEATURE_COUNT);
    for (let t0 = 0; t0 < bars.n; t0 += block) {
      const lines: string[] = [];
      for (let t = t0; t < Math.min(bars.n, t0 + block); t++) {
        for (let j = 0; j < FEATURE_COUNT; j++) cells[j] = featureText(features[t * FEATURE_COUNT + j]);
        lines.push(`${new Date(bars.timestamp[t]).toISOString()},${cells.join(',')}\n`);
      }
      await write(lines.join(''));
    }
    out.end();
    await Promise.race([once(out, 'finish'), failed]);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new UserError(`cannot write ${outPath}: ${code}`);
    throw err;
  }
  const repaired = repairLine(report, opts);
  console.log(
    `wrote ${FEATURE_COUNT} features x ${bars.n} bars to ${outPath}${repaired ? ` (${repaired})` : ''}`,
  );
  return 0;
}

export const dataFeaturesCommand: Command = {
  name: 'data features',
  summary: 'write the 51 causal features of a market file to CSV',
  usage,
  run,
};
