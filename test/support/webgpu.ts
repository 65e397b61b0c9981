/**
 * The WebGPU backend a describe block shares: created before its tests, destroyed after them.
 * `webgpu(ctx)` gives it, or skips the test with the reason when no adapter exists; with
 * FOXHUNT_REQUIRE_WEBGPU=1 (set by .ci/run) a missing adapter fails instead.
 */
import { afterAll, beforeAll } from 'vitest';
import { createBackend } from '../../src/backend/index.js';
import { type Backend, BackendUnavailableError } from '../../src/backend/types.js';

export function useWebgpu(): (ctx: { skip: (note: string) => void }) => Backend {
  let backend: Backend | undefined;
  let why = '';
  beforeAll(async () => {
    try {
      backend = await createBackend('webgpu');
    } catch (err) {
      if (!(err instanceof BackendUnavailableError) || process.env.FOXHUNT_REQUIRE_WEBGPU === '1') throw err;
      why = err.message;
    }
  }, 60_000);
  afterAll(() => backend?.destroy());
  return (ctx) => {
    if (!backend) {
      ctx.skip(`WebGPU unavailable: ${why} (set FOXHUNT_REQUIRE_WEBGPU=1 to fail instead)`);
      throw new Error('unreachable: ctx.skip throws');
    }
    return backend;
  };
}
