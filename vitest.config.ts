import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// Debian's Chromium (scripts/setup-system.sh); WebGPU runs on its SwiftShader Vulkan.
const chromium = playwright({
  launchOptions: {
    executablePath: '/usr/bin/chromium',
    args: [
      '--enable-unsafe-webgpu',
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  },
});

// What the browser suite must find in its bundled WGSL: every wgsl/ file, hashed as read here.
const wgslDir = new URL('./wgsl/', import.meta.url);
const wgslDigests = Object.fromEntries(
  readdirSync(wgslDir)
    .filter((f) => f.endsWith('.wgsl'))
    .map((f) => [
      `wgsl/${f}`,
      createHash('sha256')
        .update(readFileSync(new URL(f, wgslDir), 'utf8'))
        .digest('hex'),
    ]),
);

// The unit files that run CUDA twins on the g++ fiber emulator (test/emu/): a file that builds
// emulator binaries belongs here, so `npm run test:unit` stays the fast tier. The parity cases run
// on the emulator too (test/parity/kernels.test.ts, FOXHUNT_BACKENDS=emu).
const CUDA_EMU = [
  'kernels/collect-dqn-cluster-cuda',
  'kernels/collect-cuda',
  'kernels/collect-nets-cuda',
  'kernels/mlp-backward-jobs',
  'kernels/mlp-delta-chain',
  'kernels/mlp-cuda',
  'device/learn-forward-split-cuda',
  'device/learn-tf32-cuda',
].map((name) => `test/unit/${name}.test.ts`);

// The longest files (minutes each on the 2-core CI machine, docs/TESTING.md), longest first: they
// start at once and overlap the many short files. Vitest's own order runs the projects by name and
// a fresh clone's files by size, which left the C51 learning test and the page's suite to the end.
const LONGEST = [
  'test/e2e/c51-learns.test.ts',
  'test/parity/kernels.test.ts',
  'test/unit/engine/device-dqn.test.ts',
  'test/web/page.test.ts',
  'test/unit/device/validate-dqn.test.ts',
  'test/unit/kernels/collect-dqn-cluster-cuda.test.ts',
  'test/unit/kernels/mlp-delta-chain.test.ts',
  'test/e2e/train-learns.test.ts',
];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = LONGEST.findIndex((p) => f.moduleId.endsWith(p));
      return i < 0 ? LONGEST.length : i;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

// GPU suites run in forked processes: Dawn has crashed inside worker threads. Two files at a time
// (Vitest's default is cores - 1, one on the 2-core CI machine), the page's suite among them: its
// bound on the page's main thread is on CPU time, which a busy machine inflates far less than wall
// time (test/web/page.test.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongestFirst },
    testTimeout: 120_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], exclude: CUDA_EMU },
      },
      // Each emulator case runs a CUDA kernel's every thread on the CPU: up to a few minutes.
      { extends: true, test: { name: 'cuda-emu', include: CUDA_EMU, testTimeout: 300_000 } },
      // Software rasterisers (lavapipe, SwiftShader) compile and run the collection kernels slowly:
      // one case can take minutes on a loaded 2-core machine.
      {
        extends: true,
        test: { name: 'parity', include: ['test/parity/**/*.test.ts'], testTimeout: 900_000 },
      },
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'] } },
      // The demo page: Vite builds web/, playwright drives Debian's Chromium against `vite preview`.
      {
        extends: true,
        test: {
          name: 'web',
          include: ['test/web/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 300_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 900_000,
          provide: {
            parityReport: process.env.FOXHUNT_PARITY_REPORT ?? '',
            parityCommit: process.env.FOXHUNT_COMMIT ?? 'unknown',
            wgslDigests,
          },
          browser: {
            enabled: true,
            headless: true,
            provider: chromium,
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
});
