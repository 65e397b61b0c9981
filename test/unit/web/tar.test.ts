import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTar, writeTar } from '../../../web/tar.js';

describe('the page checkpoint archive (web/tar.ts)', () => {
  const files = [
    { name: 'state.json', bytes: new TextEncoder().encode('{"version":1}\n') },
    { name: 'actor.safetensors', bytes: Uint8Array.from({ length: 1500 }, (_, i) => i % 251) },
  ];

  it('reads back what it wrote', () => {
    expect(readTar(writeTar(files))).toEqual(files);
  });

  it('is a tar that GNU tar unpacks into the same files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'foxhunt-tar-'));
    try {
      writeFileSync(join(dir, 'a.tar'), writeTar(files));
      execFileSync('tar', ['xf', 'a.tar'], { cwd: dir });
      for (const f of files) expect(new Uint8Array(readFileSync(join(dir, f.name)))).toEqual(f.bytes);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
