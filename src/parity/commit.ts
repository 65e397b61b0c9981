import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../backend/cuda/native.js';

/**
 * The commit a report names: $FOXHUNT_COMMIT, else the one a bundle was staged from (its
 * package.json's gitCommit, scripts/bundle.mjs), else the HEAD of the package's git checkout.
 */
export function currentCommit(env: NodeJS.ProcessEnv = process.env, root = packageRoot()): string {
  if (env.FOXHUNT_COMMIT) return env.FOXHUNT_COMMIT;
  try {
    const staged = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).gitCommit;
    if (typeof staged === 'string' && staged) return staged;
  } catch {
    // no package.json there: fall back to git
  }
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .toString()
      .trim();
  } catch {
    return 'unknown';
  }
}
