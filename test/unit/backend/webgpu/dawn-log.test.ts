/**
 * Dawn's adapter-probe warnings (native writes to descriptor 2) go to a debug log. Vitest's
 * workers have sockets for stdio, which cannot be reopened, so the swap runs in a child process
 * whose stderr is a file (a terminal or a pipe behave the same), on dawn_log.ts transpiled as is.
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

/** Runs `body` (ESM, with fs, withStderrTo, quietAdapters and warn in scope) with stderr a file. */
function child(body: string): { stderr: string; log: string; status: number | null } {
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
  const err = fs.openSync(`${script}.err`, 'w');
  const res = spawnSync(process.execPath, [script], { stdio: ['ignore', 'pipe', err] });
  fs.closeSync(err);
  const read = (p: string) => (fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : '');
  return { stderr: read(`${script}.err`), log: read(log), status: res.status };
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
