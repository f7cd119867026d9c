/** Paths of the extension and the repository, from the compiled tests in out/test/. */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const EXTENSION_ROOT = path.resolve(__dirname, '..', '..');
export const REPO_ROOT = path.resolve(EXTENSION_ROOT, '..');

export function readJson<T = any>(rel: string): T { // eslint-disable-line @typescript-eslint/no-explicit-any
  return JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, rel), 'utf8')) as T;
}
