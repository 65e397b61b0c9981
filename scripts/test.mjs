#!/usr/bin/env node
/**
 * `npm test`: `vitest run` with the given arguments, and one rerun of the files whose worker
 * process died mid-file.
 *
 * A GPU driver's native code (Dawn, Mesa's lavapipe) can abort a forked test worker; Vitest then
 * reports "Worker exited unexpectedly" and leaves that file's remaining tests pending. When that
 * is the run's only failure (no test failed, no other error), the files with pending tests run
 * once more, alone, and their result decides. The crash stays in the log, and this script names
 * the files it reran. A test that fails, or a file that crashes twice, fails the run.
 *
 * Options written `--name=value` (`--config=...`, `--project=unit`) carry over to the rerun.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { stripVTControlCharacters } from 'node:util';

const vitest = join('node_modules', 'vitest', 'vitest.mjs');
const CRASH = 'Worker exited unexpectedly';

/** Runs vitest with `args` and a JSON report; echoes its output; resolves to its result. */
function run(args) {
  const dir = mkdtempSync(join(tmpdir(), 'foxhunt-test-'));
  const report = join(dir, 'report.json');
  const child = spawn(
    process.execPath,
    [vitest, 'run', ...args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    // Piped to be read, coloured as on a terminal when this script's output is one.
    {
      stdio: ['inherit', 'pipe', 'pipe'],
      env: { ...process.env, ...(process.stdout.isTTY ? { FORCE_COLOR: '1' } : {}) },
    },
  );
  const chunks = [];
  const watch = (out) => (chunk) => {
    out.write(chunk);
    chunks.push(chunk);
  };
  child.stdout.on('data', watch(process.stdout));
  child.stderr.on('data', watch(process.stderr));
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      let results = null;
      try {
        results = JSON.parse(readFileSync(report, 'utf8'));
      } catch {
        // No report (vitest failed before writing one): nothing to rerun.
      }
      rmSync(dir, { recursive: true, force: true });
      const text = stripVTControlCharacters(Buffer.concat(chunks).toString());
      const crashes = text.split(CRASH).length - 1;
      // Each unhandled error has a banner of its own ("⎯ Unhandled Error ⎯", "Unhandled Rejection").
      const errors = (text.match(/Unhandled (Error|Rejection)(?!s)/g) ?? []).length;
      resolve({ code: code ?? (signal ? 1 : 0), crashes, errors, results });
    });
  });
}

/** Files with tests left pending by a dead worker, if that is all that went wrong. */
function crashedFiles({ code, crashes, errors, results }) {
  // Every unhandled error must be a worker's death ("Caused by: Error: Worker exited ...").
  if (code === 0 || crashes === 0 || crashes !== errors || !results) return [];
  if (results.numFailedTests > 0) return [];
  const files = results.testResults
    .filter((f) => f.assertionResults.some((t) => t.status === 'pending'))
    .map((f) => relative(process.cwd(), f.name));
  // Some other error failed the run too (a file that did not load, an unhandled rejection).
  if (results.testResults.some((f) => f.status === 'failed')) return [];
  return files;
}

const args = process.argv.slice(2);
const first = await run(args);
const again = crashedFiles(first);
if (again.length === 0) process.exit(first.code);
console.error(
  `\nscripts/test.mjs: a test worker died mid-file (${CRASH}); rerunning once: ${again.join(', ')}\n`,
);
const second = await run([...args.filter((a) => a.startsWith('--') && a.includes('=')), ...again]);
console.error(
  `\nscripts/test.mjs: the rerun of ${again.join(', ')} ${second.code === 0 ? 'passed' : 'failed'}`,
);
process.exit(second.code);
