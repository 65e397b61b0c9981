import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { currentCommit } from '../../../src/parity/commit.js';
import type { ParityReport } from '../../../src/parity/run.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  return { out, err };
}

describe('foxhunt parity', () => {
  afterEach(() => vi.restoreAllMocks());

  it('runs the selected cases on the named backend and writes JSON and Markdown reports', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-parity-'));
    const { out, err } = capture();
    const json = join(dir, 'r.json');
    const md = join(dir, 'r.md');
    const code = await main([
      'parity',
      '--backend',
      'cpu',
      '--case',
      'exclusive_scan',
      '--json',
      json,
      '--markdown',
      md,
      '--commit',
      'deadbee',
    ]);
    expect(code).toBe(0);
    expect(err).toEqual(['backend cpu: CPU reference']);
    expect(out.filter((l) => l.startsWith('pass  exclusive_scan')).length).toBe(7);
    expect(out.at(-1)).toBe('7 passed, 0 failed on cpu (CPU reference)');
    const report = JSON.parse(readFileSync(json, 'utf8')) as ParityReport;
    expect(report).toMatchObject({ commit: 'deadbee', pass: true, passed: 7, failed: 0 });
    expect(report.backend.kind).toBe('cpu');
    expect(readFileSync(md, 'utf8')).toContain('**PASS** (7 passed, 0 failed)');
  });

  it('says in one line what is wrong with its flags', async () => {
    const { err } = capture();
    expect(await main(['parity', '--backend', 'tpu'])).toBe(1);
    expect(err).toEqual(['foxhunt parity: --backend must be one of auto, cpu, webgpu, cuda, got "tpu"']);
    err.length = 0;
    expect(await main(['parity', '--backend', 'cpu', '--case', 'no such case'])).toBe(1);
    expect(err.at(-1)).toBe('foxhunt parity: no parity case matches --case "no such case"');
  });

  it('names the commit: $FOXHUNT_COMMIT, else the one a bundle was staged from, else git', () => {
    const bundle = mkdtempSync(join(tmpdir(), 'foxhunt-commit-'));
    writeFileSync(
      join(bundle, 'package.json'),
      JSON.stringify({ name: 'foxhunt', gitCommit: 'abc1234-dirty' }),
    );
    expect(currentCommit({ FOXHUNT_COMMIT: 'fedcba9' }, bundle)).toBe('fedcba9');
    expect(currentCommit({}, bundle)).toBe('abc1234-dirty');
    // The repo's own package.json has no gitCommit: git's HEAD.
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim();
    expect(currentCommit({})).toBe(head);
  });
});
