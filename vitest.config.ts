import { playwright } from '@vitest/browser-playwright';
import { defineConfig } from 'vitest/config';

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

// GPU suites run in forked processes: Dawn has crashed inside worker threads.
export default defineConfig({
  test: {
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
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
        test: { name: 'web', include: ['test/web/**/*.test.ts'], testTimeout: 600_000, hookTimeout: 300_000 },
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
