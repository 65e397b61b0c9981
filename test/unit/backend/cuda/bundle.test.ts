/**
 * The portable runtime (scripts/bundle.mjs): built into a folder outside the repo, it stays under
 * the 64 MiB transfer limit of the GPU hosts and runs the CLI with nothing but node: the commands
 * load, the CUDA addon loads from the bundle (so the cuda line is about the driver, not a missing
 * build) and WebGPU finds its Dawn binary.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../../../src/backend/cuda/native.js';

const root = packageRoot();
const work = mkdtempSync(join(tmpdir(), 'foxhunt-bundle-'));
const out = join(work, 'bundle');

function sizeOf(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce(
    (s, e) => s + (e.isDirectory() ? sizeOf(join(dir, e.name)) : statSync(join(dir, e.name)).size),
    0,
  );
}

describe('npm run bundle', () => {
  it('stages a runtime under 64 MiB that runs the CLI from outside the repo', () => {
    const build = spawnSync(process.execPath, [join(root, 'scripts/bundle.mjs'), '--out', out], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(build.status, build.stderr).toBe(0);
    expect(build.stdout).toMatch(/bundle: wrote .*: \d+ files, [\d.]+ MiB \(limit 64\.0 MiB\)/);
    expect(sizeOf(out)).toBeLessThan(64 * 2 ** 20);
    expect(existsSync(join(out, 'build/Release/foxhunt_cuda.node'))).toBe(true);
    // The commit it was staged from, for reports written where there is no git checkout.
    const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      encoding: 'utf8',
    }).stdout.trim();
    expect(JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')).gitCommit).toMatch(
      new RegExp(`^${head}(-dirty)?$`),
    );
    // Only this platform's Dawn binary.
    expect(readdirSync(join(out, 'node_modules/webgpu/dist'))).toEqual([
      `${process.platform}-${process.arch}`,
    ]);

    const env = { PATH: process.env.PATH ?? '', HOME: work, FOXHUNT_LIBCUDA: '/nonexistent/libcuda.so.1' };
    const help = spawnSync(process.execPath, [join(out, 'bin/foxhunt.js'), '--help'], {
      cwd: work,
      env,
      encoding: 'utf8',
    });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^ {2}doctor {2}/m);

    const doctor = spawnSync(process.execPath, [join(out, 'bin/foxhunt.js'), 'doctor', '--json'], {
      cwd: work,
      env,
      encoding: 'utf8',
    });
    expect(doctor.status, doctor.stderr).toBe(0);
    const report = JSON.parse(doctor.stdout);
    const byKind = Object.fromEntries(report.backends.map((b: { kind: string }) => [b.kind, b]));
    expect(byKind.cuda.reason).toMatch(/^no CUDA driver \(libcuda\.so\.1 not found\)/);
    expect(byKind.webgpu.available, byKind.webgpu.reason).toBe(true);
    expect(byKind.cpu.available).toBe(true);

    // A kernel compiles from the bundle's own wgsl/ (src/kernels/sources.ts reads it at run time).
    const parity = spawnSync(
      process.execPath,
      [join(out, 'bin/foxhunt.js'), 'parity', '--backend', 'webgpu', '--case', 'philox_stream n=4099'],
      { cwd: work, env, encoding: 'utf8' },
    );
    expect(parity.status, parity.stderr).toBe(0);
    expect(parity.stdout).toMatch(/^pass {2}philox_stream n=4099/m);
    expect(existsSync(join(out, 'cuda/philox.cuh'))).toBe(true);
  });
});
