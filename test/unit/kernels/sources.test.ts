/**
 * src/kernels/sources.ts reads the kernels from wgsl/ and cuda/ (nothing generated into src/), and
 * src/parity/record.ts ties them to the last passing parity run per GPU backend: the files that
 * ship must be the ones docs/parity-kernels.json recorded (`foxhunt parity --backend cuda|webgpu
 * --record docs/parity-kernels.json` on a GPU rewrites it).
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cudaSources, kernelFileDigests, wgslSources } from '../../../src/kernels/sources.js';
import { type ParityRecord, recordEntry, recordMismatches } from '../../../src/parity/record.js';
import type { ParityReport } from '../../../src/parity/run.js';

const RECORD = 'docs/parity-kernels.json';

describe('kernel sources read from wgsl/ and cuda/', () => {
  it('has every wgsl/ and cuda/ kernel file, and hashes each as read from disk', async () => {
    const onDisk = (dir: string, exts: string[]) =>
      readdirSync(dir)
        .filter((f) => exts.some((e) => f.endsWith(e)))
        .map((f) => `${dir}/${f}`);
    const files = [...onDisk('wgsl', ['.wgsl']), ...onDisk('cuda', ['.cu', '.cuh'])];
    const digests = await kernelFileDigests();
    expect(Object.keys(digests).sort()).toEqual(files.sort());
    for (const f of files) {
      expect(digests[f], f).toBe(createHash('sha256').update(readFileSync(f, 'utf8')).digest('hex'));
    }
    expect(Object.keys(wgslSources).length).toBe(onDisk('wgsl', ['.wgsl']).length);
    expect(cudaSources['philox.cuh']).toBe(readFileSync('cuda/philox.cuh', 'utf8'));
  });

  it('resolves //!include lines, each file once per source', () => {
    const src = wgslSources.philox_stream;
    expect(src).not.toMatch(/^\s*\/\/!include/m);
    expect(src).toContain('// ---- begin philox.wgsl ----');
    expect(src.split('fn philox4x32(').length).toBe(2);
  });
});

describe('the recorded parity runs', () => {
  it('compiled the kernel files that ship (else: rerun parity on a GPU with --record)', async () => {
    const record: ParityRecord = JSON.parse(readFileSync(RECORD, 'utf8'));
    const problems = recordMismatches(record, await kernelFileDigests());
    expect(
      problems,
      `${RECORD} does not match the shipped kernels; on a GPU host run\n  foxhunt parity --backend cuda --record ${RECORD}\n  foxhunt parity --backend webgpu --record ${RECORD}`,
    ).toEqual([]);
  });

  it('names a changed, new or removed file and a backend with no run', () => {
    const files = { 'cuda/a.cu': '1', 'wgsl/a.wgsl': '2', 'wgsl/b.wgsl': '3' };
    const entry = (f: Record<string, string>) => ({
      commit: 'c0',
      date: '',
      device: '',
      passed: 1,
      files: f,
    });
    const record: ParityRecord = {
      cuda: entry({ 'cuda/a.cu': '1' }),
      webgpu: entry({ 'wgsl/a.wgsl': '2', 'wgsl/b.wgsl': '3' }),
    };
    expect(recordMismatches(record, files)).toEqual([]);
    expect(recordMismatches(record, { ...files, 'wgsl/b.wgsl': 'x' })).toEqual([
      'webgpu: wgsl/b.wgsl changed since the parity run at c0',
    ]);
    expect(recordMismatches(record, { ...files, 'cuda/b.cuh': '4' })).toEqual([
      'cuda: cuda/b.cuh is new since the parity run at c0',
    ]);
    const { 'cuda/a.cu': _, ...noCuda } = files;
    expect(recordMismatches(record, noCuda)).toEqual([
      'cuda: cuda/a.cu was removed since the parity run at c0',
    ]);
    expect(recordMismatches({ cuda: record.cuda }, files)).toEqual(['webgpu: no parity run recorded']);
  });

  it('records only a passing run on a GPU backend, with its own folder’s files', () => {
    const report = {
      date: 'd',
      backend: { kind: 'cuda', device: 'H200', driver: '', limits: {} },
      commit: 'c1',
      pass: true,
      passed: 2,
      failed: 0,
      results: [{}, {}],
      kernels: { 'cuda/a.cu': '1', 'wgsl/a.wgsl': '2' },
    } as unknown as ParityReport;
    expect(recordEntry(report)).toEqual({
      commit: 'c1',
      date: 'd',
      device: 'H200',
      passed: 2,
      files: { 'cuda/a.cu': '1' },
    });
    expect(recordEntry({ ...report, pass: false })).toBeNull();
    expect(recordEntry({ ...report, backend: { ...report.backend, kind: 'cpu' } })).toBeNull();
  });
});
