/** Writes `<outDir>/report.html` (src/report/) for a run on the local file system. */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { reportHtml } from '../report/html.js';
import { runViewOf } from '../report/run_view.js';
import { bestDir, lastDir } from '../train/checkpoint.js';
import { RunError, type SourcedBars } from '../train/run.js';
import { readLog } from '../train/runlog.js';
import { committedDir } from '../train/storage.js';
import { loadSourcedBars, sourceFile } from './data.js';
import { NodeStorage } from './storage.js';

const require = createRequire(import.meta.url);

/** uPlot's script and stylesheet as text, to inline. */
async function uplotSources(): Promise<{ js: string; css: string }> {
  const [js, css] = await Promise.all(
    ['uplot/dist/uPlot.iife.min.js', 'uplot/dist/uPlot.min.css'].map((p) =>
      readFile(require.resolve(p), 'utf8'),
    ),
  );
  return { js, css };
}

/**
 * Renders the run in `outDir` into `outDir/report.html` and returns its path. `data`: the bars
 * the run trained on (`--data`: checked against its checkpoint); default: the file its checkpoint
 * names, read with the repairs it names, when it still exists. `onWarning` hears why curves are
 * left out.
 */
export async function writeReport(
  outDir: string,
  data?: SourcedBars,
  onWarning?: (line: string) => void,
): Promise<string> {
  const storage = new NodeStorage();
  const dir =
    (await committedDir(storage, bestDir(outDir))) ?? (await committedDir(storage, lastDir(outDir)));
  // Nothing to draw: refuse rather than write a blank page (and create a directory that was a typo).
  if (dir === null && (await readLog(storage, outDir)).length === 0)
    throw new RunError(
      `${outDir}: no run here (no best/, last/ or logged epoch); give the --out directory of a foxhunt train run`,
    );
  const found = async (source: string) => {
    const { file, opts } = sourceFile(source);
    return (await storage.exists(file)) ? loadSourcedBars(file, opts) : undefined;
  };
  const view = await runViewOf(storage, outDir, data ?? found, onWarning);
  const path = join(outDir, 'report.html');
  await storage.write(path, reportHtml(view, await uplotSources()));
  return path;
}
