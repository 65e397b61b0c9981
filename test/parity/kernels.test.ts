/**
 * The parity suite (src/parity/cases.ts) on every backend this machine has, each case against
 * plain TS. FOXHUNT_BACKENDS=cpu,webgpu,cuda,emu picks backends (default: all four). A backend that
 * is not available is skipped with its reason, except where FOXHUNT_REQUIRE_WEBGPU=1 (CI) or
 * FOXHUNT_REQUIRE_CUDA=1 makes its absence a failure.
 *
 * `emu` is the CUDA backend's twins on the g++ fiber emulator (test/emu/backend.ts): every case the
 * CUDA backend runs (the same `backends` filter), each dispatch executing `cuda/<name>.cu` on the
 * CPU, so a machine without a GPU checks the very CUDA sources against the references.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackend } from '../../src/backend/index.js';
import { type Backend, BackendUnavailableError } from '../../src/backend/types.js';
import { parityCases } from '../../src/parity/cases.js';
import { describeFailure, runCase } from '../../src/parity/run.js';
import { CudaEmuBackend, emuUnavailable } from '../emu/backend.js';

const KINDS = ['cpu', 'webgpu', 'cuda', 'emu'] as const;
const wanted = (process.env.FOXHUNT_BACKENDS ?? KINDS.join(','))
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
for (const w of wanted) {
  if (!(KINDS as readonly string[]).includes(w)) throw new Error(`FOXHUNT_BACKENDS: unknown backend ${w}`);
}
const required = new Set(
  [
    process.env.FOXHUNT_REQUIRE_WEBGPU === '1' && 'webgpu',
    process.env.FOXHUNT_REQUIRE_CUDA === '1' && 'cuda',
  ].filter(Boolean),
);

for (const kind of KINDS.filter((k) => wanted.includes(k))) {
  describe(`parity on ${kind}`, () => {
    let backend: Backend | undefined;
    let unavailable = '';

    beforeAll(async () => {
      if (kind === 'emu') {
        const why = emuUnavailable();
        if (why) unavailable = `the CUDA emulator cannot run here: ${why}`;
        else backend = new CudaEmuBackend({ as: 'cuda' });
        return;
      }
      try {
        backend = await createBackend(kind);
      } catch (err) {
        if (!(err instanceof BackendUnavailableError) || required.has(kind)) throw err;
        unavailable = `${err.message} (set FOXHUNT_REQUIRE_${kind.toUpperCase()}=1 to fail instead)`;
      }
    });
    afterAll(() => backend?.destroy());

    // The emulator runs the CUDA twins: the cases the CUDA backend runs.
    const twin = kind === 'emu' ? 'cuda' : kind;
    for (const c of parityCases()) {
      it(c.name, async (ctx) => {
        if (!backend) return ctx.skip(unavailable);
        if (c.backends && !c.backends.includes(twin))
          return ctx.skip(`${c.kernel} exists on ${c.backends.join(', ')} only`);
        const missing = c.requires?.(backend);
        if (missing) return ctx.skip(missing);
        const launchesBefore = backend instanceof CudaEmuBackend ? backend.launches : 0;
        const r = await runCase(backend, c);
        expect(r.pass, describeFailure(r)).toBe(true);
        // On the emulator the case must have run CUDA code, not only the CPU backend's copies.
        if (backend instanceof CudaEmuBackend) expect(backend.launches).toBeGreaterThan(launchesBefore);
      });
    }
  });
}
