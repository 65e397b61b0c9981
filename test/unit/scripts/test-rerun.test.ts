/**
 * scripts/test.mjs (`npm test`) on a fixture suite (test/fixtures/worker-crash): a file whose
 * worker process aborts mid-file runs once more and its rerun decides; a failing test or a second
 * crash still fails the run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'foxhunt-rerun-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `npm test` on the fixtures; `die`: "once", "always" or "never" (dies.fixture.ts). */
function runFixtures(die: 'once' | 'always' | 'never', fail = false) {
  let marker = '';
  if (die === 'once') {
    marker = join(dir, `die-${fail}`);
    writeFileSync(marker, '');
  } else if (die === 'always') marker = 'always';
  const env = { ...process.env, FIXTURE_DIE: marker, FIXTURE_FAIL: fail ? '1' : '0' };
  const args = ['scripts/test.mjs', '--config=test/fixtures/worker-crash/vitest.config.mjs'];
  const res = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
  return { code: res.status, out: `${res.stdout}${res.stderr}` };
}

describe('npm test (scripts/test.mjs)', () => {
  it('reruns a file whose worker died, once, and passes when the rerun passes', () => {
    const { code, out } = runFixtures('once');
    expect(out).toContain('Worker exited unexpectedly');
    expect(out).toMatch(/rerunning once: \S*dies\.fixture\.ts\n/);
    expect(out).not.toMatch(/rerunning once: .*lives/);
    expect(out).toMatch(/the rerun of \S*dies\.fixture\.ts passed/);
    expect(code).toBe(0);
  }, 60_000);

  it('passes without a rerun when nothing crashes', () => {
    const { code, out } = runFixtures('never');
    expect(out).not.toContain('rerunning');
    expect(code).toBe(0);
  }, 60_000);

  it('fails, without a rerun, when a test fails beside the crash', () => {
    const { code, out } = runFixtures('once', true);
    expect(out).toContain('Worker exited unexpectedly');
    expect(out).not.toContain('rerunning');
    expect(code).not.toBe(0);
  }, 60_000);

  it('fails when the rerun crashes again', () => {
    const { code, out } = runFixtures('always');
    expect(out).toMatch(/rerunning once: \S*dies\.fixture\.ts\n/);
    expect(out).toMatch(/the rerun of \S*dies\.fixture\.ts failed/);
    expect(code).not.toBe(0);
  }, 60_000);
});
