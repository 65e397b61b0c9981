/**
 * The trainer's Storage (src/train/storage.ts) in IndexedDB, for the page's worker: one object
 * store of path -> bytes. Every verb is one IndexedDB transaction, so a rename of a whole
 * checkpoint directory is atomic, as commitDir needs, and a tab closed mid-write leaves the old
 * bytes or the new.
 */
import { encodeText, joinPath, type Storage } from '../src/train/storage.js';

const STORE = 'files';

const norm = (path: string): string => joinPath(...path.replace(/^\.\//, '').split('/'));
/** Keys strictly under `dir/`: '0' is the code unit after '/'. */
const under = (dir: string) => IDBKeyRange.bound(`${dir}/`, `${dir}0`, false, true);

const done = <T>(req: IDBRequest<T>): Promise<T> =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

export class IndexedDbStorage implements Storage {
  private constructor(private readonly db: IDBDatabase) {}

  static async open(name = 'foxhunt'): Promise<IndexedDbStorage> {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    return new IndexedDbStorage(await done(req));
  }

  /** Runs `body` in one transaction and resolves when it has committed. */
  private async tx<T>(mode: IDBTransactionMode, body: (store: IDBObjectStore) => Promise<T>): Promise<T> {
    const t = this.db.transaction(STORE, mode, { durability: 'strict' });
    const committed = new Promise<void>((resolve, reject) => {
      t.oncomplete = () => resolve();
      t.onabort = t.onerror = () => reject(t.error);
    });
    const result = await body(t.objectStore(STORE));
    await committed;
    return result;
  }

  async read(path: string): Promise<Uint8Array | null> {
    const v = await this.tx('readonly', (s) => done(s.get(norm(path))));
    return v === undefined ? null : new Uint8Array(v as Uint8Array);
  }

  write(path: string, data: Uint8Array | string): Promise<void> {
    const bytes = typeof data === 'string' ? encodeText(data) : data.slice();
    return this.tx('readwrite', async (s) => void (await done(s.put(bytes, norm(path)))));
  }

  append(path: string, text: string): Promise<void> {
    const p = norm(path);
    return this.tx('readwrite', async (s) => {
      const old = ((await done(s.get(p))) as Uint8Array | undefined) ?? new Uint8Array(0);
      const add = encodeText(text);
      const next = new Uint8Array(old.length + add.length);
      next.set(old);
      next.set(add, old.length);
      await done(s.put(next, p));
    });
  }

  async list(dir: string): Promise<string[]> {
    const d = norm(dir);
    const keys = (await this.tx('readonly', (s) => done(s.getAllKeys(under(d))))) as string[];
    return [...new Set(keys.map((k) => k.slice(d.length + 1).split('/')[0]))].sort();
  }

  exists(path: string): Promise<boolean> {
    const p = norm(path);
    return this.tx(
      'readonly',
      async (s) => (await done(s.count(p))) > 0 || (await done(s.count(under(p)))) > 0,
    );
  }

  rename(from: string, to: string): Promise<void> {
    const [f, t] = [norm(from), norm(to)];
    return this.tx('readwrite', async (s) => {
      if ((await done(s.count(t))) > 0 || (await done(s.count(under(t)))) > 0)
        throw new Error(`${to}: already exists`);
      const file = await done(s.get(f));
      const keys = (await done(s.getAllKeys(under(f)))) as string[];
      if (file === undefined && keys.length === 0) throw new Error(`${from}: no such file or directory`);
      if (file !== undefined) {
        await done(s.put(file, t));
        await done(s.delete(f));
      }
      for (const k of keys) {
        await done(s.put(await done(s.get(k)), t + k.slice(f.length)));
        await done(s.delete(k));
      }
    });
  }

  remove(path: string): Promise<void> {
    const p = norm(path);
    return this.tx('readwrite', async (s) => {
      await done(s.delete(p));
      await done(s.delete(under(p)));
    });
  }
}
