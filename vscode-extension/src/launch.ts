/**
 * How the language server is started: which program, with which arguments, and what to tell
 * the user when it is not there. No VS Code import: the extension and the end-to-end test
 * start the server through these same functions.
 *
 * The server speaks LSP over stdin/stdout with no transport flag (the client passes none:
 * `vscode-languageclient` adds `--stdio` only when a transport is named explicitly).
 */

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import type { DragonSettings } from './settings';

export const SERVER_MODULE = 'dragon_lsp';
export const SERVER_EXECUTABLE = 'dragon-lsp';

/** Where the launch came from, in the words of the settings. */
export type LaunchOrigin = 'dragon.serverPath' | 'dragon.pythonPath' | 'workspace .venv' | 'PATH' | 'default';

export interface ServerLaunch {
  command: string;
  args: string[];
  /** `python`: runs `-m dragon_lsp`; `executable`: a `dragon-lsp` program. */
  kind: 'python' | 'executable';
  origin: LaunchOrigin;
  /** Working directory: the first workspace folder, if any. */
  cwd?: string;
}

/** What the launch depends on outside the settings; `nodeEnvironment` gives the real one. */
export interface LaunchEnvironment {
  workspaceFolders: string[];
  platform: NodeJS.Platform;
  env: Record<string, string | undefined>;
  home: string;
  isFile(p: string): boolean;
  /** False in an untrusted workspace: its `.venv` interpreter is never run. */
  workspaceTrusted: boolean;
}

export function nodeEnvironment(workspaceFolders: string[], workspaceTrusted = true): LaunchEnvironment {
  return {
    workspaceFolders,
    workspaceTrusted,
    platform: process.platform,
    env: process.env,
    home: os.homedir(),
    isFile: (p) => {
      try {
        return fs.statSync(p).isFile();
      } catch {
        return false;
      }
    },
  };
}

/** `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`, as VS Code users write them. */
export function expandVariables(value: string, e: LaunchEnvironment): string {
  let v = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (m, what: string, name?: string) => {
    if (what === 'workspaceFolder') return e.workspaceFolders[0] ?? m;
    if (what === 'userHome') return e.home;
    return e.env[name as string] ?? '';
  });
  if (v === '~' || v.startsWith('~/') || v.startsWith('~\\')) v = e.home + v.slice(1);
  return v;
}

function pathKey(e: LaunchEnvironment): string | undefined {
  return Object.keys(e.env).find((k) => k.toUpperCase() === 'PATH');
}

/** The first `name` on PATH that is a file (with PATHEXT on Windows), or undefined. */
export function findOnPath(name: string, e: LaunchEnvironment): string | undefined {
  const key = pathKey(e);
  const dirs = (key ? e.env[key] ?? '' : '').split(e.platform === 'win32' ? ';' : ':').filter(Boolean);
  const exts = e.platform === 'win32' ? [''].concat((e.env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';').filter(Boolean)) : [''];
  const join = e.platform === 'win32' ? path.win32.join : path.posix.join;
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = join(dir, name + ext);
      if (e.isFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function venvPython(folder: string, e: LaunchEnvironment): string | undefined {
  const rel = e.platform === 'win32' ? ['.venv', 'Scripts', 'python.exe'] : ['.venv', 'bin', 'python'];
  const p = (e.platform === 'win32' ? path.win32.join : path.posix.join)(folder, ...rel);
  return e.isFile(p) ? p : undefined;
}

/**
 * The server's command line, in this order: `dragon.serverPath`; `dragon.pythonPath -m
 * dragon_lsp`; the `.venv` interpreter of a workspace folder (trusted workspaces only);
 * `dragon-lsp` on PATH;
 * `python3 -m dragon_lsp` (`python` on Windows). `dragon.serverArgs` follow in every case.
 */
export function resolveServerLaunch(s: DragonSettings, e: LaunchEnvironment): ServerLaunch {
  const cwd = e.workspaceFolders[0];
  const extra = [...s.serverArgs];
  const python = (command: string, origin: LaunchOrigin): ServerLaunch => ({
    command, args: ['-m', SERVER_MODULE, ...extra], kind: 'python', origin, cwd,
  });
  if (s.serverPath) {
    return { command: expandVariables(s.serverPath, e), args: extra, kind: 'executable', origin: 'dragon.serverPath', cwd };
  }
  if (s.pythonPath) return python(expandVariables(s.pythonPath, e), 'dragon.pythonPath');
  for (const folder of e.workspaceTrusted ? e.workspaceFolders : []) {
    const p = venvPython(folder, e);
    if (p) return python(p, 'workspace .venv');
  }
  const onPath = findOnPath(SERVER_EXECUTABLE, e);
  if (onPath) return { command: onPath, args: extra, kind: 'executable', origin: 'PATH', cwd };
  return python(e.platform === 'win32' ? 'python' : 'python3', 'default');
}

/** The `Executable` that `vscode-languageclient` spawns (no `transport`: plain stdio, no flag). */
export function executable(l: ServerLaunch): { command: string; args: string[]; options: { cwd?: string; env: NodeJS.ProcessEnv } } {
  return {
    command: l.command,
    args: [...l.args],
    // Unbuffered, so a traceback reaches the output channel before the process dies.
    options: { cwd: l.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
  };
}

export function commandLine(l: ServerLaunch): string {
  const q = (a: string) => (/^[\w@%+=:,./\\-]+$/.test(a) ? a : JSON.stringify(a));
  return [l.command, ...l.args].map(q).join(' ');
}

export type Probe =
  | { ok: true }
  | { ok: false; problem: 'not-found' | 'no-module' | 'failed'; detail: string };

// Finds dragon_lsp/__main__ without importing the server (fast, and no side effects of pygls).
const PROBE_CODE =
  'import importlib.util, sys\n' +
  'try:\n' +
  `    spec = importlib.util.find_spec("${SERVER_MODULE}.__main__")\n` +
  'except Exception as e:\n' +
  '    print(type(e).__name__ + ": " + str(e), file=sys.stderr); sys.exit(3)\n' +
  `sys.exit(0 if spec else 3)\n`;

function run(command: string, args: string[], cwd: string | undefined, timeoutMs: number): Promise<{ code: number | null; stderr: string; error?: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const done = (r: { code: number | null; stderr: string; error?: NodeJS.ErrnoException }) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, PYTHONUNBUFFERED: '1' } });
    const timer = setTimeout(() => {
      child.kill();
      done({ code: null, stderr: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error: NodeJS.ErrnoException) => done({ code: null, stderr, error }));
    child.on('close', (code) => done({ code, stderr }));
  });
}

function lastLine(text: string): string {
  const lines = text.trim().split(/\r?\n/);
  return lines[lines.length - 1] ?? '';
}

/**
 * Whether the launch can work, before the client starts it: the program exists and, for an
 * interpreter, `dragon_lsp` is importable and runnable with `-m`. Never throws.
 */
export async function probeServer(l: ServerLaunch, e: LaunchEnvironment, timeoutMs = 15000): Promise<Probe> {
  if (l.kind === 'executable') {
    const hasDir = l.command.includes('/') || l.command.includes('\\');
    const found = hasDir ? e.isFile(l.command) : findOnPath(l.command, e) !== undefined;
    return found ? { ok: true } : { ok: false, problem: 'not-found', detail: `${l.command} does not exist` };
  }
  const r = await run(l.command, ['-c', PROBE_CODE], l.cwd, timeoutMs);
  if (r.error) {
    const detail = r.error.code === 'ENOENT' ? `${l.command} was not found` : `${l.command}: ${r.error.message}`;
    return { ok: false, problem: 'not-found', detail };
  }
  if (r.code === 0) return { ok: true };
  if (r.code === 3) {
    const why = lastLine(r.stderr);
    return { ok: false, problem: 'no-module', detail: `${l.command} cannot run -m ${SERVER_MODULE}${why ? ` (${why})` : ''}` };
  }
  return { ok: false, problem: 'failed', detail: `${l.command} failed (${r.code === null ? 'timed out' : `exit ${r.code}`}): ${lastLine(r.stderr)}` };
}

/** The sentence the user reads when the server cannot be started. */
export function missingServerMessage(l: ServerLaunch, p: Probe): string {
  if (p.ok) return '';
  const setting = l.origin === 'workspace .venv' ? 'dragon.pythonPath' : l.origin;
  let how: string;
  if (l.origin === 'default' || l.origin === 'PATH') {
    how = 'Set "dragon.pythonPath" to the Python of an environment where Little Dragon is installed (pip install -e . in a checkout), or "dragon.serverPath" to a dragon-lsp executable.';
  } else if (l.kind === 'executable') {
    how = 'Check "dragon.serverPath".';
  } else if (p.problem === 'not-found') {
    how = `Set "${setting}" to an existing Python interpreter.`;
  } else {
    how = `Install Little Dragon into that environment (pip install -e . in a checkout) or change "${setting}".`;
  }
  return `Dragon: the language server could not be started: ${p.detail}. Tried: ${commandLine(l)} (from ${l.origin}). ${how}`;
}
