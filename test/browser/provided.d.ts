// Values vitest.config.ts provides to the browser project (read with `inject`).
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the browser parity run writes its Markdown report ('' = nowhere). */
    parityReport: string;
    /** The commit recorded in that report. */
    parityCommit: string;
    /** SHA-256 of each wgsl/ file as Node reads it, keyed `wgsl/<name>`. */
    wgslDigests: Record<string, string>;
  }
}
