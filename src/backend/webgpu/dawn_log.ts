/**
 * Dawn's native code prints warnings straight to file descriptor 2 while it probes adapters
 * ("Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced ...", on some
 * drivers with a build-machine source path). They are not the user's business, so in Node they
 * go to a debug log instead: `FOXHUNT_DAWN_LOG`, default `<tmpdir>/foxhunt-dawn.log`; with
 * FOXHUNT_DEBUG=1 they print as before.
 *
 * Node cannot redirect a native write except by pointing descriptor 2 elsewhere around the call.
 * Dawn's requestAdapter probes synchronously, before it returns its promise, so the swap spans
 * one synchronous call and no JS output can fall inside it. It needs /proc/self/fd (Linux) to
 * reopen the original stderr; elsewhere, or when anything fails before the swap, the call runs
 * unchanged. So it does when stderr is a regular file: reopening makes a new open file (appending)
 * where the old one may be shared with stdout (`> run.log 2>&1`), whose writes at its own offset
 * would then overwrite every later stderr line. This file imports nothing from Node (the browser
 * bundle includes gpu.ts): the caller passes node:fs.
 */

/** The node:fs calls the swap needs. */
export interface FdApi {
  openSync(path: string, flags: string): number;
  closeSync(fd: number): void;
  fstatSync(fd: number): { isFile(): boolean };
}

/** Runs `call` with descriptor 2 appending to `path`, then puts the original stderr back. */
export function withStderrTo<T>(fs: FdApi, path: string, call: () => T): T {
  let saved: number;
  try {
    // The swap relies on 2 being the lowest free descriptor once closed.
    fs.fstatSync(0);
    fs.fstatSync(1);
    if (fs.fstatSync(2).isFile()) return call();
    saved = fs.openSync('/proc/self/fd/2', 'a');
  } catch {
    return call();
  }
  fs.closeSync(2);
  let log = -1;
  try {
    log = fs.openSync(path, 'a');
  } catch {
    // An unwritable log: descriptor 2 stays closed for the call, so the warnings are dropped.
  }
  try {
    return call();
  } finally {
    if (log !== -1) fs.closeSync(log);
    fs.openSync(`/proc/self/fd/${saved}`, 'a');
    fs.closeSync(saved);
  }
}

/** `gpu` whose requestAdapter writes Dawn's probe warnings to `path` (see the file comment). */
export function quietAdapters(gpu: GPU, fs: FdApi, path: string): GPU {
  const request = gpu.requestAdapter.bind(gpu);
  return new Proxy(gpu, {
    get(target, key) {
      if (key === 'requestAdapter') {
        return (options?: GPURequestAdapterOptions) => withStderrTo(fs, path, () => request(options));
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
