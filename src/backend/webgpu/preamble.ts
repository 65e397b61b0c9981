/**
 * The WGSL declarations of a kernel, generated from its KernelSpec and prepended to
 * `wgsl/<name>.wgsl`, so that a kernel's bindings, uniforms, workgroup size and constants are
 * written once (the descriptor) and never by hand in the shader:
 * - `const WG_X/WG_Y/WG_Z` and one `const` per spec constant (abstract numbers, so they mix with
 *   u32, i32 or f32 without casts);
 * - `struct Uniforms` with the spec's fields in order and `var<uniform> u` at
 *   `@binding(bindings.length)` (omitted when the kernel has no uniforms);
 * - one `var<storage>` array per binding, `@group(0) @binding(i)` in spec order.
 */
import type { KernelSpec } from '../types.js';

function wgslNumber(name: string, value: number): string {
  if (!Number.isFinite(value)) throw new Error(`constant ${name} must be finite, got ${value}`);
  if (Number.isInteger(value)) return String(value);
  const s = String(value);
  return s.includes('.') || s.includes('e') ? s : `${s}.0`;
}

export function wgslPreamble(spec: KernelSpec): string {
  const [x, y, z] = spec.workgroupSize;
  const lines = [
    `// ---- generated from the KernelSpec of ${spec.name} ----`,
    `const WG_X = ${x};`,
    `const WG_Y = ${y};`,
    `const WG_Z = ${z};`,
  ];
  for (const [name, value] of Object.entries(spec.constants ?? {})) {
    lines.push(`const ${name} = ${wgslNumber(name, value)};`);
  }
  if (spec.uniforms.length > 0) {
    lines.push('struct Uniforms {', ...spec.uniforms.map((u) => `  ${u.name}: ${u.type},`), '}');
    lines.push(`@group(0) @binding(${spec.bindings.length}) var<uniform> u: Uniforms;`);
  }
  spec.bindings.forEach((b, i) => {
    lines.push(`@group(0) @binding(${i}) var<storage, ${b.access}> ${b.name}: array<${b.type}>;`);
  });
  lines.push(`// ---- wgsl/${spec.name}.wgsl ----`, '');
  return lines.join('\n');
}
