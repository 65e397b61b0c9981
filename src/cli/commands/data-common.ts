/**
 * Pieces shared by the `foxhunt data ...` commands: config loading, loading bars with the repair
 * flags, and turning data errors into the one-line user errors the CLI prints.
 */
import { readFile } from 'node:fs/promises';
import { type Config, loadConfig } from '../../config.js';
import { DataError } from '../../data/errors.js';
import type { LoadOptions, LoadReport } from '../../data/load.js';
import { loadBarsWithHint } from '../../node/data.js';

export { repairLine } from '../../data/load.js';

import type { Bars } from '../../data/types.js';
import { UserError } from '../main.js';

/** Defaults, or defaults <- the JSON file given with --config. */
export async function configFrom(path: string | undefined): Promise<Config> {
  if (path === undefined) return loadConfig();
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UserError(`--config ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return loadConfig({ text, path });
}

/** loadBars with data errors as UserErrors (one line: file, row, rule, and the --drop-invalid hint). */
export async function loadForCli(
  file: string,
  opts: LoadOptions,
): Promise<{ bars: Bars; report: LoadReport }> {
  try {
    return await loadBarsWithHint(file, opts);
  } catch (err) {
    if (err instanceof DataError) throw new UserError(err.message);
    throw err;
  }
}

/** A duration in ms as text: 500ms, 30s, 1m, 1.5h, 1d. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  const units: [number, string][] = [
    [86_400_000, 'd'],
    [3_600_000, 'h'],
    [60_000, 'm'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) {
    if (Math.abs(ms) >= size) return `${+(ms / size).toFixed(2)}${unit}`;
  }
  return `${+ms.toFixed(3)}ms`;
}
