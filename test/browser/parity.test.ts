/**
 * The WebGPU half of the parity suite inside headless Chromium (Vitest browser mode, see
 * vitest.config.ts): the same cases as test/parity, through `navigator.gpu` and the browser's
 * WGSL compiler (Tint on SwiftShader here). A browser without WebGPU fails this suite; it never
 * skips. With FOXHUNT_PARITY_REPORT=runs/parity-chromium.md (relative to the repository root)
 * and FOXHUNT_COMMIT=<sha> the run also writes its docs/PARITY.md section there.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { commands } from 'vitest/browser';
import { chooseBackend, createBackend } from '../../src/backend/index.js';
import type { Backend } from '../../src/backend/types.js';
import { kernelFileDigests } from '../../src/kernels/sources.js';
import { parityCases } from '../../src/parity/cases.js';
import { type CaseResult, describeFailure, formatMarkdown, runCase } from '../../src/parity/run.js';

describe('parity on webgpu in Chromium', () => {
  let backend: Backend;
  const results: CaseResult[] = [];

  beforeAll(async () => {
    if (!('gpu' in navigator)) {
      throw new Error(
        'navigator.gpu is missing: launch Chromium with --enable-unsafe-webgpu in a secure context',
      );
    }
    backend = await createBackend('webgpu');
  });
  afterAll(async () => {
    const path = inject('parityReport');
    if (path && backend) {
      const passed = results.filter((r) => r.pass).length;
      const report = {
        date: new Date().toISOString(),
        backend: backend.info,
        commit: inject('parityCommit'),
        pass: passed === results.length,
        passed,
        failed: results.length - passed,
        results,
        kernels: await kernelFileDigests(),
      };
      await commands.writeFile(path, formatMarkdown(report));
    }
    backend?.destroy();
  });

  it('runs in a browser through navigator.gpu', () => {
    expect(typeof window).toBe('object');
    expect(backend.kind).toBe('webgpu');
    expect(backend.info.driver).toMatch(/^browser WebGPU/);
  });

  it('routes auto past CUDA (Node only) and a software adapter to the CPU', async () => {
    const choice = await chooseBackend('auto');
    expect(choice.skipped.map((s) => s.kind)).toEqual(['cuda', 'webgpu']);
    expect(choice.skipped[1].reason).toMatch(/software adapter/);
    expect(choice.backend.kind).toBe('cpu');
    choice.backend.destroy();
  });

  it('compiles the WGSL files on disk: the bundler gave it every wgsl/ file, byte for byte', async () => {
    // vitest.config.ts hashed wgsl/ in Node; the page has the files through import.meta.glob.
    expect(await kernelFileDigests()).toEqual(inject('wgslDigests'));
  });

  for (const c of parityCases()) {
    it(c.name, async (ctx) => {
      // A kernel that exists on other backends only (e.g. CUDA thread-block clusters) says so.
      if (c.backends && !c.backends.includes('webgpu'))
        return ctx.skip(`${c.kernel} exists on ${c.backends.join(', ')} only`);
      const missing = c.requires?.(backend);
      if (missing) return ctx.skip(missing);
      const r = await runCase(backend, c);
      results.push(r);
      expect(r.pass, describeFailure(r)).toBe(true);
    });
  }
});
