/**
 * Runs the parity cases on one backend and summarises the run: per case pass/fail, the largest
 * errors, and on failure the first mismatches; `formatMarkdown` gives the block docs/PARITY.md
 * records. Browser-safe (the CLI and Vitest wrap it).
 */
import type { Backend, BackendInfo } from '../backend/types.js';
import { kernelFileDigests } from '../kernels/sources.js';
import { type ParityCase, parityCases } from './cases.js';
import { type Comparison, compareOutputs, describeMismatch, describeTolerance } from './compare.js';

export interface CaseResult {
  name: string;
  kernel: string;
  tolerance: string;
  pass: boolean;
  /** Comparison per output, by output name. */
  outputs: Record<string, Comparison>;
  /** Set when the case threw instead of producing outputs. */
  error?: string;
  /** Host wall time of the case (uploads, dispatch, readback): a sanity figure, not a benchmark. */
  ms: number;
}

export interface ParityReport {
  date: string;
  backend: BackendInfo;
  commit: string;
  pass: boolean;
  passed: number;
  failed: number;
  results: CaseResult[];
  /** SHA-256 of each shipped kernel file (`wgsl/<name>`, `cuda/<name>`) when the run started. */
  kernels: Record<string, string>;
}

const now = () => globalThis.performance.now();

export async function runCase(backend: Backend, c: ParityCase): Promise<CaseResult> {
  const t0 = now();
  const base = { name: c.name, kernel: c.kernel, tolerance: describeTolerance(c.tolerance) };
  try {
    const actual = await c.actual(backend);
    const expected = c.expected();
    const outputs: Record<string, Comparison> = {};
    for (const [name, want] of Object.entries(expected)) {
      const got = actual[name];
      outputs[name] = got
        ? compareOutputs(want, got, c.tolerance)
        : { ...compareOutputs(want, want, c.tolerance), pass: false, note: `no output named ${name}` };
    }
    const pass = Object.values(outputs).every((o) => o.pass);
    return { ...base, pass, outputs, ms: now() - t0 };
  } catch (err) {
    return {
      ...base,
      pass: false,
      outputs: {},
      error: err instanceof Error ? err.message : String(err),
      ms: now() - t0,
    };
  }
}

/** Why a case failed, with the first mismatches and the largest errors of each output. */
export function describeFailure(r: CaseResult): string {
  if (r.error) return `${r.name}: threw: ${r.error}`;
  return Object.entries(r.outputs)
    .filter(([, c]) => !c.pass)
    .map(([name, c]) => describeMismatch(`${r.name} [${name}]`, c, r.tolerance))
    .join('\n');
}

export interface RunOptions {
  /** Only cases whose name contains this text. */
  filter?: string;
  /** Recorded in the report (git commit of the build). */
  commit?: string;
  /** Called after each case, e.g. to print progress. */
  onResult?: (r: CaseResult) => void;
  /** Called for each case the backend cannot run (ParityCase.requires), with the reason. */
  onSkip?: (name: string, reason: string) => void;
}

/** A case's `requires` reason on this backend, reported through opts.onSkip; null if it runs. */
function skipReason(c: ParityCase, backend: Backend, opts: RunOptions): string | null {
  const reason = c.requires?.(backend) ?? null;
  if (reason) opts.onSkip?.(c.name, reason);
  return reason;
}

export async function runParity(backend: Backend, opts: RunOptions = {}): Promise<ParityReport> {
  const cases = parityCases().filter(
    (c) =>
      (!opts.filter || c.name.includes(opts.filter)) &&
      (!c.backends || c.backends.includes(backend.kind)) &&
      !skipReason(c, backend, opts),
  );
  const kernels = await kernelFileDigests();
  const results: CaseResult[] = [];
  for (const c of cases) {
    const r = await runCase(backend, c);
    results.push(r);
    opts.onResult?.(r);
  }
  const passed = results.filter((r) => r.pass).length;
  return {
    date: new Date().toISOString(),
    backend: backend.info,
    commit: opts.commit ?? 'unknown',
    pass: passed === results.length,
    passed,
    failed: results.length - passed,
    results,
    kernels,
  };
}

const fmtErr = (x: number) => (x === 0 ? '0' : x.toExponential(2));

function maxErrors(r: CaseResult): { abs: number; rel: number } {
  const cs = Object.values(r.outputs);
  return { abs: Math.max(0, ...cs.map((c) => c.maxAbsErr)), rel: Math.max(0, ...cs.map((c) => c.maxRelErr)) };
}

/** A Markdown section for docs/PARITY.md. */
export function formatMarkdown(report: ParityReport): string {
  const b = report.backend;
  const lines = [
    `### ${report.date.slice(0, 10)} — ${b.kind} on ${b.device}`,
    '',
    `- commit: \`${report.commit}\`; driver: ${b.driver}; timing: ${b.limits.timing ?? 'n/a'}`,
    `- result: **${report.pass ? 'PASS' : 'FAIL'}** (${report.passed} passed, ${report.failed} failed)`,
    `- kernel files: ${Object.keys(report.kernels).length} (SHA-256 each in the JSON report)`,
    '',
    '| case | tolerance | result | max abs err | max rel err | ms |',
    '| --- | --- | --- | --- | --- | --- |',
    ...report.results.map((r) => {
      const e = maxErrors(r);
      const result = r.pass ? 'pass' : r.error ? `error: ${r.error.replaceAll('|', '/')}` : 'FAIL';
      return `| ${r.name} | ${r.tolerance} | ${result} | ${fmtErr(e.abs)} | ${fmtErr(e.rel)} | ${r.ms.toFixed(0)} |`;
    }),
    '',
  ];
  return lines.join('\n');
}
