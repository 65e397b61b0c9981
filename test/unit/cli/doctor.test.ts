/**
 * `foxhunt doctor`: every backend is listed, an unavailable one with its one-line reason, an
 * available one with device, driver and limits; `--backend auto`'s pick follows. The CUDA line is
 * checked twice: without a driver, then over the mock driver (cuda/addon/mock), where it must be
 * listed as available and be auto's pick.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { packageRoot } from '../../../src/backend/cuda/native.js';
import {
  type DoctorReport,
  doctorCommand,
  doctorReport,
  formatReport,
} from '../../../src/cli/commands/doctor.js';

const saved = { ...process.env };
afterAll(() => {
  process.env = saved;
});

describe('foxhunt doctor', () => {
  it('reports a missing CUDA driver in one line and the other backends as they are', async () => {
    process.env.FOXHUNT_LIBCUDA = '/nonexistent/libcuda.so.1';
    const r = await doctorReport();
    expect(r.backends.map((b) => b.kind)).toEqual(['cuda', 'webgpu', 'cpu']);
    const cuda = r.backends[0];
    expect(cuda.available).toBe(false);
    expect(cuda.reason).toMatch(/^no CUDA driver \(libcuda\.so\.1 not found\): install the NVIDIA driver/);
    expect(r.backends[2]).toMatchObject({ kind: 'cpu', available: true, device: 'CPU reference' });
    expect(r.auto.kind).not.toBe('cuda');
    expect(r.auto.skipped[0]).toEqual({ kind: 'cuda', reason: cuda.reason });
  });

  it('prints text by default and JSON with --json', async () => {
    process.env.FOXHUNT_LIBCUDA = '/nonexistent/libcuda.so.1';
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await doctorCommand.run([])).toBe(0);
      expect(String(log.mock.calls[0][0])).toMatch(/\ncuda: unavailable\n {2}no CUDA driver/);
      expect(await doctorCommand.run(['--json'])).toBe(0);
      const parsed = JSON.parse(String(log.mock.calls[1][0])) as DoctorReport;
      expect(parsed.backends[0].kind).toBe('cuda');
    } finally {
      log.mockRestore();
    }
  });

  it('formats an available backend with aligned device, driver and limits', () => {
    const text = formatReport({
      node: 'v20.0.0',
      platform: 'linux-x64',
      backends: [
        {
          kind: 'cuda',
          available: true,
          device: 'NVIDIA H200',
          driver: 'CUDA 13.0',
          limits: { computeCapability: '9.0', smCount: 132 },
        },
      ],
      auto: { kind: 'cuda', skipped: [] },
    });
    expect(text).toBe(
      [
        'node v20.0.0 on linux-x64',
        '',
        'cuda: available',
        '  device             NVIDIA H200',
        '  driver             CUDA 13.0',
        '  computeCapability  9.0',
        '  smCount            132',
        '',
        '--backend auto uses cuda',
      ].join('\n'),
    );
  });

  const cc = spawnSync('cc', ['--version']).status === 0;
  it.skipIf(!cc)(
    'lists CUDA as available and auto picks it where a driver answers (mock driver)',
    async () => {
      const lib = join(mkdtempSync(join(tmpdir(), 'foxhunt-doctor-')), 'libmock_cuda.so');
      const res = spawnSync('cc', [
        '-shared',
        '-fPIC',
        '-o',
        lib,
        join(packageRoot(), 'cuda/addon/mock/mock_cuda.c'),
      ]);
      expect(res.status).toBe(0);
      process.env.FOXHUNT_LIBCUDA = lib;
      process.env.FOXHUNT_NVRTC = lib;
      const r = await doctorReport();
      expect(r.backends[0]).toMatchObject({
        kind: 'cuda',
        available: true,
        device: 'foxhunt mock GPU',
        driver: 'CUDA 13.0',
      });
      expect(r.backends[0].limits).toMatchObject({ computeCapability: '9.0', compiler: 'nvrtc 13.0' });
      expect(r.auto).toEqual({ kind: 'cuda', skipped: [] });
    },
  );
});
