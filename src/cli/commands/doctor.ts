/**
 * `foxhunt doctor`: what this machine can run. Opens each backend by name (cuda, webgpu, cpu) and
 * prints its device, driver, limits and features, or the one-line reason it is unavailable, then
 * which backend `--backend auto` would take and why it skipped the others.
 */
import { chooseBackend, createBackend } from '../../backend/index.js';
import { type BackendInfo, type BackendKind, BackendUnavailableError } from '../../backend/types.js';
import { parseFlags } from '../args.js';
import type { Command } from '../main.js';

const usage = `usage: foxhunt doctor [--json]

Lists the cuda, webgpu and cpu backends with device, driver, limits and features,
or the reason one is unavailable, and the backend --backend auto picks.

  --json   one JSON object instead of text`;

export interface BackendReport {
  kind: BackendKind;
  available: boolean;
  /** When unavailable: what is missing and what to do. */
  reason?: string;
  device?: string;
  driver?: string;
  limits?: Record<string, string | number>;
}

export interface DoctorReport {
  node: string;
  platform: string;
  backends: BackendReport[];
  auto: { kind: BackendKind; skipped: { kind: BackendKind; reason: string }[] };
}

async function probe(kind: BackendKind): Promise<BackendReport> {
  try {
    const backend = await createBackend(kind);
    const info: BackendInfo = backend.info;
    backend.destroy();
    return { kind, available: true, device: info.device, driver: info.driver, limits: info.limits };
  } catch (err) {
    if (!(err instanceof BackendUnavailableError)) throw err;
    return { kind, available: false, reason: err.message.replace(/^backend \w+ unavailable: /, '') };
  }
}

export async function doctorReport(): Promise<DoctorReport> {
  const backends: BackendReport[] = [];
  // One at a time: each backend owns its device while it is open.
  for (const kind of ['cuda', 'webgpu', 'cpu'] as const) backends.push(await probe(kind));
  const choice = await chooseBackend('auto');
  const auto = { kind: choice.backend.kind, skipped: choice.skipped };
  choice.backend.destroy();
  return { node: process.version, platform: `${process.platform}-${process.arch}`, backends, auto };
}

export function formatReport(r: DoctorReport): string {
  const lines = [`node ${r.node} on ${r.platform}`];
  for (const b of r.backends) {
    if (!b.available) {
      lines.push('', `${b.kind}: unavailable`, `  ${b.reason}`);
      continue;
    }
    const rows: [string, string | number][] = [
      ['device', b.device ?? ''],
      ['driver', b.driver ?? ''],
      ...Object.entries(b.limits ?? {}),
    ];
    const width = Math.max(...rows.map(([k]) => k.length));
    lines.push('', `${b.kind}: available`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`));
  }
  const why = r.auto.skipped.map((s) => `${s.kind} skipped: ${s.reason}`);
  lines.push('', `--backend auto uses ${r.auto.kind}`, ...why.map((w) => `  ${w}`));
  return lines.join('\n');
}

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'list the backends (cuda, webgpu, cpu) this machine can run, with devices and limits',
  usage,
  async run(args) {
    const { values } = parseFlags(args, { json: { type: 'boolean' } }, usage);
    const report = await doctorReport();
    console.log(values.json ? JSON.stringify(report, null, 2) : formatReport(report));
    return 0;
  },
};
