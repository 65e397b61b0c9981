/**
 * The CUDA declarations of a kernel, generated from its KernelSpec and put before
 * `cuda/<name>.cu` (the twin of webgpu/preamble.ts), so a kernel's layout is written once:
 * - `#define WG_X/WG_Y/WG_Z` (the block shape) and one `#define` per spec constant;
 * - `struct Uniforms` with the spec's fields in order, 4 bytes each (passed by value);
 * - `KERNEL_ARGS`: the parameter list, one `__restrict__` pointer per binding in spec order
 *   (`const` for read-only ones) then `const Uniforms u` when there are uniforms. A kernel is
 *   declared `extern "C" __global__ void <name>(KERNEL_ARGS)` and uses the binding names.
 * The preamble is part of the compiled text, hence of the compile cache key.
 */
import type { KernelSpec, ScalarType } from '../types.js';

const C_TYPE: Record<ScalarType, string> = { f32: 'float', u32: 'unsigned int', i32: 'int' };

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

function cNumber(spec: KernelSpec, name: string, value: number): string {
  if (!IDENT.test(name)) throw new Error(`kernel ${spec.name}: bad constant name "${name}"`);
  if (!Number.isFinite(value))
    throw new Error(`kernel ${spec.name}: constant ${name} must be finite, got ${value}`);
  if (Number.isInteger(value)) return value < 0 ? `(${value})` : String(value);
  return `(${value}f)`;
}

export function cudaPreamble(spec: KernelSpec): string {
  const [x, y, z] = spec.workgroupSize;
  const lines = [
    `// ---- generated from the KernelSpec of ${spec.name} ----`,
    `#define WG_X ${x}`,
    `#define WG_Y ${y}`,
    `#define WG_Z ${z}`,
  ];
  for (const [name, value] of Object.entries(spec.constants ?? {})) {
    lines.push(`#define ${name} ${cNumber(spec, name, value)}`);
  }
  const args = spec.bindings.map((b) => {
    if (!IDENT.test(b.name)) throw new Error(`kernel ${spec.name}: bad binding name "${b.name}"`);
    return `${b.access === 'read' ? 'const ' : ''}${C_TYPE[b.type]}* __restrict__ ${b.name}`;
  });
  if (spec.uniforms.length > 0) {
    lines.push('struct Uniforms {', ...spec.uniforms.map((u) => `  ${C_TYPE[u.type]} ${u.name};`), '};');
    args.push('const Uniforms u');
  }
  lines.push(`#define KERNEL_ARGS ${args.join(', ')}`);
  lines.push(`// ---- cuda/${spec.name}.cu ----`, `#line 1 "${spec.name}.cu"`, '');
  return lines.join('\n');
}
