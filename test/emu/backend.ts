/**
 * A Backend whose `run` executes each dispatch's CUDA twin (`cuda/<name>.cu` with the CUDA
 * backend's generated preamble) on the CPU fiber emulator of test/emu/collect_emu.cuh,
 * compiled with g++. Everything else is the CPU backend (buffers are host memory). The parity
 * cases then check the very CUDA source on a machine without a GPU: slowly, but exactly as
 * written (no fused multiply-adds: `-ffp-contract=off`, so results sit closer to the references
 * than on a GPU).
 *
 * By default it reports itself as the CPU with a CUDA device's workgroup limits (the plans the unit
 * tests pick for it); `{ as: 'cuda' }` reports an sm_90 CUDA device instead (16 SMs, 227 KiB of
 * opt-in shared memory), so the code above the backend makes the CUDA backend's own choices: its
 * collection tiles, the cluster kernel, TF32 tensor cores, the learner's delta chain.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, writeFileSync, writevSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CpuBackend } from '../../src/backend/cpu/index.js';
import { cudaPreamble } from '../../src/backend/cuda/preamble.js';
import type { BackendInfo, BackendKind, Dispatch, KernelSpec, ScalarType } from '../../src/backend/types.js';
import { packUniforms, uniformBytes, validateDispatch } from '../../src/backend/uniforms.js';
import { emuCompile } from './build.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

/** Why the emulator cannot run here, or null when g++ is available. */
export function emuUnavailable(): string | null {
  const r = spawnSync('g++', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? null : 'g++ is not installed (apt-get install g++)';
}

/** Static shared memory a CUDA block may declare. */
const STATIC_SHARED_BYTES = 48 * 1024;

const C_TYPE: Record<ScalarType, string> = { f32: 'float', u32: 'unsigned int', i32: 'int' };

/** The harness: reads the launch (buffers, uniforms, grid), runs the kernel, writes every buffer back. */
function harness(spec: KernelSpec, source: string): string {
  const args = spec.bindings.map(
    (b, i) =>
      `reinterpret_cast<${b.access === 'read' ? 'const ' : ''}${C_TYPE[b.type]}*>(g_bufs[${i}].data())`,
  );
  if (spec.uniforms.length > 0) args.push('g_u');
  const [clusterX, clusterY, clusterZ] = spec.cluster ?? [1, 1, 1];
  if (clusterY !== 1 || clusterZ !== 1)
    throw new Error(`${spec.name}: the emulator clusters blocks along x only`);
  // A launch without sharedBytes has the 48 KiB a block's static shared memory may hold (the
  // collection kernels' static plans live in the emulator's one shared region, as dynamic ones do).
  const sharedBytes = spec.sharedBytes ?? STATIC_SHARED_BYTES;
  return `#include "learn_emu.cuh"
#include <cstdio>
#include <vector>
#include "${source}"

static std::vector<std::vector<unsigned char>> g_bufs(${spec.bindings.length});
static Uniforms g_u;
static void entry(void*) { ${spec.name}(${args.join(', ')}); }

static bool read_block(FILE* in, std::vector<unsigned char>& out) {
  unsigned len = 0;
  if (std::fread(&len, 4, 1, in) != 1) return false;
  out.assign(len + 16, 0);
  return std::fread(out.data(), 1, len, in) == len;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  FILE* in = std::fopen(argv[1], "rb");
  std::vector<unsigned char> u;
  unsigned grid[3];
  bool ok = in != nullptr;
  for (auto& b : g_bufs) ok = ok && read_block(in, b);
  ok = ok && read_block(in, u) && u.size() - 16 == sizeof(Uniforms) && std::fread(grid, 4, 3, in) == 3;
  if (!ok) return 3;
  std::fclose(in);
  std::memcpy(&g_u, u.data(), sizeof(Uniforms));
  emu::launch({grid[0], grid[1], grid[2]}, {WG_X, WG_Y, WG_Z}, ${sharedBytes}, entry, nullptr, ${clusterX});
  FILE* out = std::fopen(argv[2], "wb");
  for (auto& b : g_bufs) std::fwrite(b.data(), 1, b.size() - 16, out);
  std::fclose(out);
  return 0;
}
`;
}

interface HostBuffer {
  bytes: ArrayBuffer;
  size: number;
}

export class CudaEmuBackend extends CpuBackend {
  /** The CUDA backend's workgroup shape choices (kSplitFor reads these limits). */
  override readonly info: BackendInfo;

  constructor(options: { as?: Extract<BackendKind, 'cpu' | 'cuda'> } = {}) {
    super();
    const kind = options.as ?? 'cpu';
    this.info = {
      kind,
      device: `CUDA twins on the CPU fiber emulator${kind === 'cuda' ? ' (as sm_90)' : ''}`,
      driver: 'g++',
      limits: {
        timing: 'wall-clock',
        maxComputeInvocationsPerWorkgroup: 1024,
        maxComputeWorkgroupStorageSize: STATIC_SHARED_BYTES,
        // dwSplitBudgetFor reads it: a small GPU, so the test networks' backward launches split dW.
        smCount: 16,
        ...(kind === 'cuda'
          ? { computeCapability: '9.0', maxThreadsPerBlock: 1024, maxSharedPerBlockOptin: 227 * 1024 }
          : {}),
      },
    };
    // The CPU backend's kind is a literal type; the code above the backend reads it at run time.
    Object.defineProperty(this, 'kind', { value: kind });
  }
  private readonly dir = mkdtempSync(join(tmpdir(), 'foxhunt-learn-emu-'));
  /** Built binaries by kernel build, shared by the instances of a test file. */
  private static readonly binaries = new Map<string, string>();
  /** Dispatches executed through the emulator so far. */
  launches = 0;

  private binary(spec: KernelSpec): string {
    const key = `${spec.name}|${spec.workgroupSize}|${JSON.stringify(spec.constants ?? {})}|${spec.sharedBytes ?? 0}|${spec.cluster ?? ''}`;
    const known = CudaEmuBackend.binaries.get(key);
    if (known) return known;
    const tag = `${spec.name}_${CudaEmuBackend.binaries.size}`;
    const source = cudaPreamble(spec) + readFileSync(join(root, 'cuda', `${spec.name}.cu`), 'utf8');
    const gen = join(this.dir, `${tag}.cu`);
    writeFileSync(gen, source);
    const cpp = join(this.dir, `${tag}.cpp`);
    writeFileSync(cpp, harness(spec, gen));
    // The harness names its source by path: the key has it with a placeholder, and the source.
    const bin = emuCompile(['-w', cpp], ['-w'], [harness(spec, '<source>'), source], true);
    CudaEmuBackend.binaries.set(key, bin);
    return bin;
  }

  override run(dispatches: Dispatch[]): void {
    for (const d of dispatches) validateDispatch(d);
    for (const d of dispatches) {
      if (d.groups.some((g) => g === 0)) continue;
      const bin = this.binary(d.kernel);
      const bufs = d.buffers as unknown as HostBuffer[];
      const parts: Uint8Array[] = [];
      const block = (bytes: Uint8Array) => {
        parts.push(new Uint8Array(Uint32Array.of(bytes.byteLength).buffer), bytes);
      };
      for (const b of bufs) block(new Uint8Array(b.bytes, 0, b.size));
      const u = new Uint8Array(uniformBytes(d.kernel));
      packUniforms(d, new DataView(u.buffer));
      block(u);
      parts.push(new Uint8Array(Uint32Array.from(d.groups).buffer));
      const inPath = join(this.dir, 'in.bin');
      const outPath = join(this.dir, 'out.bin');
      // Straight from and into the buffers (some launches bind tens of MB).
      const fd = openSync(inPath, 'w');
      try {
        writevSync(fd, parts);
      } finally {
        closeSync(fd);
      }
      execFileSync(bin, [inPath, outPath], { stdio: ['ignore', 'pipe', 'pipe'] });
      const out = openSync(outPath, 'r');
      try {
        for (const b of bufs) {
          const view = new Uint8Array(b.bytes, 0, b.size);
          for (let at = 0; at < b.size; ) {
            const n = readSync(out, view, at, b.size - at, null);
            if (n === 0) throw new Error(`${d.kernel.name}: the emulator wrote back too few bytes`);
            at += n;
          }
        }
      } finally {
        closeSync(out);
      }
      this.launches++;
    }
  }
}
