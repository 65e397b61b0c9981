/**
 * `foxhunt parity`: runs the kernel parity suite (src/parity/cases.ts) on one backend against
 * the TS reference, one line per case, and optionally writes the report as JSON and as the
 * Markdown section docs/PARITY.md records. Needs only node and the built package (no npm, no
 * Vitest), so it runs on a GPU host from the portable bundle.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { describeChoice } from '../../backend/index.js';
import { currentCommit } from '../../parity/commit.js';
import { type ParityRecord, recordEntry } from '../../parity/record.js';
import { describeFailure, formatMarkdown, runParity } from '../../parity/run.js';
import { chooseBackendFlag, parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';

const usage = `usage: foxhunt parity [--backend auto|cpu|webgpu|cuda] [options]

Runs every kernel parity case on one backend against the plain TS reference: exact equality for
integer outputs, atol + rtol * |expected| for floats. Prints one line per case; exits 1 if any
case fails.

  --backend NAME     auto (default: CUDA, then hardware WebGPU, then CPU), cpu, webgpu or cuda
  --case TEXT        only the cases whose name contains TEXT
  --json FILE        write the full report (date, device, limits, per-case errors) as JSON
  --markdown FILE    write the report as a Markdown section for docs/PARITY.md
  --record FILE      after a passing run of every case on cuda or webgpu, store the kernel files'
                     SHA-256 for this backend in FILE (docs/parity-kernels.json: a unit test
                     checks that the shipped kernels are the ones recorded there)
  --commit SHA       commit recorded in the report (default: $FOXHUNT_COMMIT, else the commit a bundle
                     was staged from, else git, else unknown)`;

const BACKENDS = ['auto', 'cpu', 'webgpu', 'cuda'];

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    {
      backend: { type: 'string', default: 'auto' },
      case: { type: 'string' },
      json: { type: 'string' },
      markdown: { type: 'string' },
      record: { type: 'string' },
      commit: { type: 'string' },
    },
    usage,
  );
  if (positionals.length > 0) throw new UserError(`unexpected argument "${positionals[0]}"\n${usage}`);
  const request = values.backend as string;
  if (!BACKENDS.includes(request)) {
    throw new UserError(`--backend must be one of ${BACKENDS.join(', ')}, got "${request}"`);
  }
  const choice = await chooseBackendFlag(request);
  for (const line of describeChoice(choice)) console.error(line);
  const { backend } = choice;
  try {
    const report = await runParity(backend, {
      filter: values.case as string | undefined,
      commit: (values.commit as string | undefined) ?? currentCommit(),
      onSkip: (name, reason) => console.log(`skip  ${name}  (${reason})`),
      onResult: (r) => {
        const errs = Object.values(r.outputs).map((c) => c.maxAbsErr);
        const max = Math.max(0, ...errs);
        const err = errs.length ? `max abs err ${max === 0 ? '0' : max.toExponential(2)}, ` : '';
        console.log(`${r.pass ? 'pass' : 'FAIL'}  ${r.name}  (${err}${r.ms.toFixed(0)} ms)`);
        if (!r.pass) console.log(describeFailure(r).replace(/^/gm, '      '));
      },
    });
    if (report.results.length === 0) throw new UserError(`no parity case matches --case "${values.case}"`);
    if (values.json) await writeFile(values.json as string, `${JSON.stringify(report, null, 2)}\n`);
    if (values.markdown) await writeFile(values.markdown as string, formatMarkdown(report));
    if (values.record) {
      const path = values.record as string;
      const entry = values.case ? null : recordEntry(report);
      if (entry) {
        const record: ParityRecord = JSON.parse(await readFile(path, 'utf8').catch(() => '{}'));
        record[backend.kind] = entry;
        await writeFile(path, `${JSON.stringify(record, null, 2)}\n`);
        console.error(
          `recorded ${Object.keys(entry.files).length} kernel files for ${backend.kind} in ${path}`,
        );
      } else {
        console.error(`not recorded in ${path}: only a passing run of every case on cuda or webgpu is`);
      }
    }
    console.log(
      `${report.passed} passed, ${report.failed} failed on ${backend.kind} (${backend.info.device})`,
    );
    return report.pass ? 0 : 1;
  } finally {
    backend.destroy();
  }
}

export const parityCommand: Command = {
  name: 'parity',
  summary: 'check every kernel on a backend against the TS reference',
  usage,
  run,
};
