/**
 * The record of the last passing full parity run per GPU backend (docs/parity-kernels.json,
 * written by `foxhunt parity --record`): which kernel files it compiled, by SHA-256. A unit test
 * compares it with the files that ship, so a kernel edited after its parity run fails CI until
 * the run is repeated on a GPU.
 */
import type { ParityReport } from './run.js';

/** The folder of kernel files each GPU backend compiles. */
export const RECORDED_FOLDERS: Readonly<Record<string, string>> = { cuda: 'cuda/', webgpu: 'wgsl/' };

export interface ParityRecordEntry {
  commit: string;
  date: string;
  device: string;
  passed: number;
  /** SHA-256 of each kernel file of the backend's folder that the run compiled. */
  files: Record<string, string>;
}

export type ParityRecord = Record<string, ParityRecordEntry>;

/** The entry a passing full run adds for its backend; null where the run is not one to record. */
export function recordEntry(report: ParityReport): ParityRecordEntry | null {
  const folder = RECORDED_FOLDERS[report.backend.kind];
  if (!folder || !report.pass || report.results.length === 0) return null;
  return {
    commit: report.commit,
    date: report.date,
    device: report.backend.device,
    passed: report.passed,
    files: Object.fromEntries(Object.entries(report.kernels).filter(([f]) => f.startsWith(folder))),
  };
}

/**
 * What differs between the record and the shipped files (`digests`, as kernelFileDigests gives
 * them), one line per backend or file; empty when every GPU backend's record matches.
 */
export function recordMismatches(record: ParityRecord, digests: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [kind, folder] of Object.entries(RECORDED_FOLDERS)) {
    const entry = record[kind];
    if (!entry) {
      out.push(`${kind}: no parity run recorded`);
      continue;
    }
    const shipped = Object.keys(digests).filter((f) => f.startsWith(folder));
    for (const f of shipped) {
      if (!(f in entry.files)) out.push(`${kind}: ${f} is new since the parity run at ${entry.commit}`);
      else if (entry.files[f] !== digests[f])
        out.push(`${kind}: ${f} changed since the parity run at ${entry.commit}`);
    }
    for (const f of Object.keys(entry.files)) {
      if (!(f in digests)) out.push(`${kind}: ${f} was removed since the parity run at ${entry.commit}`);
    }
  }
  return out;
}
