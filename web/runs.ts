/**
 * Where the page's runs keep their checkpoints and log: one directory per run under RUNS_DIR, so
 * each tab's Download reads its own run's, whichever tab trained since. Storage stays bounded: a
 * new run removes its tab's previous one (that tab's Download now gives the new one) and all but
 * the newest KEEP_RUNS - 1 others (other tabs', or those of tabs closed or reloaded).
 */
import { joinPath, type Storage } from '../src/train/storage.js';

export const RUNS_DIR = 'web-runs';
/** Runs kept in storage, the new one included. */
export const KEEP_RUNS = 3;
/** The one directory every run shared before RUNS_DIR. */
const OLD_DIR = 'web-run';

/** A new run's directory (not created), after removing what `previous` and KEEP_RUNS say. */
export async function newRunDir(
  storage: Storage,
  previous: string | null,
  now = Date.now(),
): Promise<string> {
  await storage.remove(OLD_DIR);
  if (previous) await storage.remove(previous);
  // Named by start time (13 digits until the year 2286): the names sort oldest first.
  const runs = await storage.list(RUNS_DIR);
  for (const name of runs.slice(0, Math.max(0, runs.length - (KEEP_RUNS - 1))))
    await storage.remove(joinPath(RUNS_DIR, name));
  const id = Math.random().toString(36).slice(2, 8);
  return joinPath(RUNS_DIR, `${String(now).padStart(13, '0')}-${id}`);
}
