/**
 * Dawn's adapter-probe warnings (native writes to descriptor 2) go to a debug log. Vitest's
 * workers have sockets for stdio, which cannot be reopened, so the swap runs in a child process
 * whose stderr is a pipe (a terminal behaves the same; a regular file is left alone), on
 * dawn_log.ts transpiled as is.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { withStderrTo } from '../../../../src/backend/webgpu/dawn_log.js';

const root = fs.mkdtempSync(join(tmpdir(), 'foxhunt-dawnlog-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const source = fs.readFileSync(
  new URL('../../../../src/backend/webgpu/dawn_log.ts', import.meta.url),
  'utf8',
);
fs.writeFileSync(
  join(root, 'dawn_log.mjs'),
  ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText,
);

/**
 * Runs `body` (ESM, with fs, withStderrTo, quietAdapters and warn in scope) with stderr a pipe, or
 * (`shared`) with stdout and stderr one file opened once, as `> run.log 2>&1` makes them.
 */
function child(body: string, shared = false): { stderr: string; log: string; status: number | null } {
  const script = join(root, `child-${Math.random().toString(36).slice(2)}.mjs`);
  const log = `${script}.log`;
  fs.writeFileSync(
    script,
    `import * as fs from 'node:fs';
import { withStderrTo, quietAdapters } from './dawn_log.mjs';
const log = ${JSON.stringify(log)};
const warn = (text) => fs.writeSync(2, text + '\\n'); // what a native library does
${body}`,
  );
  const read = (p: string) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : '');
  if (!shared) {
    // A pipe(2) from the shell: Node's own 'pipe' stdio is a socket, which /proc cannot reopen.
    const res = spawnSync(
      'bash',
      ['-c', '"$0" "$1" 2>&1 >/dev/null | cat; exit $PIPESTATUS', process.execPath, script],
      { encoding: 'utf8' },
    );
    return { stderr: res.stdout, log: read(log), status: res.status };
  }
  const out = fs.openSync(`${script}.out`, 'w');
  const res = spawnSync(process.execPath, [script], { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  return { stderr: read(`${script}.out`), log: read(log), status: res.status };
}

describe('Dawn probe warnings go to a debug log', () => {
  it.runIf(process.platform === 'linux')(
    'moves descriptor 2 to the log for one call and puts it back',
    () => {
      const r = child(`
warn('before');
const got = withStderrTo(fs, log, () => { warn('Warning: maxDynamicUniformBuffersPerPipelineLayout reduced'); return 42; });
warn('after ' + got);
try { withStderrTo(fs, log, () => { throw new Error('boom'); }); } catch (e) { warn('caught ' + e.message); }
console.error('console still works');`);
      expect(r.status).toBe(0);
      expect(r.stderr).toBe('before\nafter 42\ncaught boom\nconsole still works\n');
      expect(r.log).toBe('Warning: maxDynamicUniformBuffersPerPipelineLayout reduced\n');
    },
  );

  it.runIf(process.platform === 'linux')(
    'loses no line when stdout and stderr share one file (> run.log 2>&1)',
    () => {
      // Reopening stderr there made a second open file: stdout, writing at its own offset,
      // overwrote every stderr line written after the swap (a run's progress lines).
      const r = child(
        `
console.log('out 1');
warn('before');
withStderrTo(fs, log, () => warn('Warning: probe'));
warn('after');
console.error('epoch 1/1');
console.log('out 2');`,
        true,
      );
      expect(r.status).toBe(0);
      // The probe's warning stays in the file: no swap where stderr is a regular file.
      expect(r.stderr).toBe('out 1\nbefore\nWarning: probe\nafter\nepoch 1/1\nout 2\n');
      expect(r.log).toBe('');
    },
  );

  it.runIf(process.platform === 'linux')("wraps only the GPU's requestAdapter", () => {
    const r = child(`
const fake = {
  requestAdapter(o) { warn('Warning: probing ' + o.powerPreference); return Promise.resolve('adapter'); },
  getPreferredCanvasFormat() { warn('not a probe'); return 'rgba8unorm'; },
};
const gpu = quietAdapters(fake, fs, log);
const a = await gpu.requestAdapter({ powerPreference: 'high-performance' });
warn(a + ' ' + gpu.getPreferredCanvasFormat());`);
    expect(r.status).toBe(0);
    expect(r.log).toBe('Warning: probing high-performance\n');
    expect(r.stderr).toBe('not a probe\nadapter rgba8unorm\n');
  });

  it('runs the call unchanged where the original stderr cannot be reopened', () => {
    const noProc = {
      ...fs,
      openSync: () => {
        throw new Error('ENXIO');
      },
    } as unknown as typeof fs;
    expect(withStderrTo(noProc, join(root, 'x.log'), () => 'ran')).toBe('ran');
  });
});
