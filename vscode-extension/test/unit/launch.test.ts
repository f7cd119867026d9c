import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import {
  commandLine, executable, expandVariables, findOnPath, type LaunchEnvironment, missingServerMessage, nodeEnvironment,
  probeServer, resolveServerLaunch,
} from '../../src/launch';
import { DEFAULT_SETTINGS, type DragonSettings } from '../../src/settings';

function fakeEnv(files: string[], over: Partial<LaunchEnvironment> = {}): LaunchEnvironment {
  const set = new Set(files);
  return {
    workspaceFolders: ['/ws'], platform: 'linux', env: { PATH: '/usr/local/bin:/usr/bin', HOME: '/home/u' },
    home: '/home/u', isFile: (p) => set.has(p), workspaceTrusted: true, ...over,
  };
}

const settings = (over: Partial<DragonSettings> = {}): DragonSettings => ({ ...DEFAULT_SETTINGS, serverArgs: [], ...over });

test('serverPath wins over everything and takes serverArgs', () => {
  const l = resolveServerLaunch(settings({ serverPath: '${workspaceFolder}/bin/dragon-lsp', pythonPath: '/py', serverArgs: ['-v'] }),
    fakeEnv(['/ws/.venv/bin/python']));
  assert.deepEqual([l.command, l.args, l.kind, l.origin, l.cwd], ['/ws/bin/dragon-lsp', ['-v'], 'executable', 'dragon.serverPath', '/ws']);
});

test('pythonPath runs -m dragon_lsp', () => {
  const l = resolveServerLaunch(settings({ pythonPath: '~/venv/bin/python' }), fakeEnv([]));
  assert.deepEqual([l.command, l.args, l.origin], ['/home/u/venv/bin/python', ['-m', 'dragon_lsp'], 'dragon.pythonPath']);
});

test("then the workspace's .venv, in a trusted workspace only", () => {
  const files = ['/ws/.venv/bin/python', '/usr/bin/dragon-lsp'];
  const trusted = resolveServerLaunch(settings(), fakeEnv(files));
  assert.deepEqual([trusted.command, trusted.args, trusted.origin], ['/ws/.venv/bin/python', ['-m', 'dragon_lsp'], 'workspace .venv']);
  const untrusted = resolveServerLaunch(settings(), fakeEnv(files, { workspaceTrusted: false }));
  assert.deepEqual([untrusted.command, untrusted.origin], ['/usr/bin/dragon-lsp', 'PATH']);
});

test('then dragon-lsp on PATH, then python3', () => {
  assert.equal(resolveServerLaunch(settings(), fakeEnv(['/usr/bin/dragon-lsp'])).command, '/usr/bin/dragon-lsp');
  const l = resolveServerLaunch(settings({ serverArgs: ['--x'] }), fakeEnv([]));
  assert.deepEqual([l.command, l.args, l.origin], ['python3', ['-m', 'dragon_lsp', '--x'], 'default']);
});

test('Windows: Scripts\\python.exe, PATHEXT, python', () => {
  const env = fakeEnv(['C:\\ws\\.venv\\Scripts\\python.exe', 'C:\\tools\\dragon-lsp.EXE'], {
    platform: 'win32', workspaceFolders: ['C:\\ws'], env: { Path: 'C:\\tools;C:\\other', PATHEXT: '.COM;.EXE' },
  });
  assert.equal(resolveServerLaunch(settings(), env).command, 'C:\\ws\\.venv\\Scripts\\python.exe');
  assert.equal(findOnPath('dragon-lsp', env), 'C:\\tools\\dragon-lsp.EXE');
  assert.equal(resolveServerLaunch(settings(), { ...env, isFile: () => false }).command, 'python');
});

test('variables: workspaceFolder, userHome, env, ~', () => {
  const env = fakeEnv([], { env: { VENV: '/opt/v' } });
  assert.equal(expandVariables('${env:VENV}/bin/python', env), '/opt/v/bin/python');
  assert.equal(expandVariables('${userHome}/x', env), '/home/u/x');
  assert.equal(expandVariables('~/x', env), '/home/u/x');
  assert.equal(expandVariables('a~b', env), 'a~b');
  assert.equal(expandVariables('${env:MISSING}x', env), 'x');
  assert.equal(expandVariables('${workspaceFolder}', fakeEnv([], { workspaceFolders: [] })), '${workspaceFolder}');
});

test('the executable is the command line as is: stdio, no transport flag, unbuffered Python', () => {
  const l = resolveServerLaunch(settings({ pythonPath: '/py' }), fakeEnv([]));
  const ex = executable(l);
  assert.deepEqual([ex.command, ex.args, ex.options.cwd], ['/py', ['-m', 'dragon_lsp'], '/ws']);
  assert.equal(ex.options.env.PYTHONUNBUFFERED, '1');
  assert.ok(!ex.args.includes('--stdio'));
  assert.equal(commandLine({ ...l, command: '/a b/py' }), '"/a b/py" -m dragon_lsp');
});

// ---- probing real programs (POSIX shell scripts standing in for interpreters) ----------------

const posix = process.platform !== 'win32';

function script(dir: string, name: string, body: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return p;
}

test('probe: a missing interpreter, a missing module, a broken one, a good one', { skip: !posix && 'POSIX shell scripts' }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dragon-probe-'));
  try {
    const env = nodeEnvironment([dir]);
    const launch = (command: string) => resolveServerLaunch(settings({ pythonPath: command }), env);

    const missing = await probeServer(launch(path.join(dir, 'nope')), env);
    assert.deepEqual(missing.ok ? 'ok' : missing.problem, 'not-found');
    assert.match(missingServerMessage(launch(path.join(dir, 'nope')), missing), /nope was not found.*Set "dragon\.pythonPath" to an existing Python interpreter/);

    const noModule = await probeServer(launch(script(dir, 'nomod', 'echo "ModuleNotFoundError: No module named dragon_lsp" >&2; exit 3')), env);
    assert.equal(noModule.ok, false);
    if (!noModule.ok) {
      assert.equal(noModule.problem, 'no-module');
      assert.match(noModule.detail, /cannot run -m dragon_lsp \(ModuleNotFoundError: No module named dragon_lsp\)/);
      const msg = missingServerMessage(launch(path.join(dir, 'nomod')), noModule);
      assert.match(msg, /could not be started/);
      assert.match(msg, /Install Little Dragon into that environment/);
      assert.match(msg, /dragon\.pythonPath/);
      assert.match(msg, /-m dragon_lsp/);
    }

    const broken = await probeServer(launch(script(dir, 'broken', 'echo boom >&2; exit 1')), env);
    assert.deepEqual(broken.ok ? 'ok' : [broken.problem, broken.detail.endsWith('boom')], ['failed', true]);

    const slow = await probeServer(launch(script(dir, 'slow', 'exec sleep 5')), env, 300);
    assert.deepEqual(slow.ok ? 'ok' : [slow.problem, /timed out/.test(slow.detail)], ['failed', true]);

    // The probe hands the interpreter `-c CODE`: a stand-in that checks it asks for dragon_lsp.__main__.
    const good = await probeServer(launch(script(dir, 'good', 'case "$2" in *dragon_lsp.__main__*) exit 0;; esac; exit 9')), env);
    assert.deepEqual(good, { ok: true });

    const exe = resolveServerLaunch(settings({ serverPath: path.join(dir, 'good') }), env);
    assert.deepEqual(await probeServer(exe, env), { ok: true });
    const noExe = resolveServerLaunch(settings({ serverPath: path.join(dir, 'dragon-lsp') }), env);
    const p = await probeServer(noExe, env);
    assert.equal(p.ok, false);
    assert.match(missingServerMessage(noExe, p), /dragon\.serverPath/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the default launch tells the user which settings to set', () => {
  const l = resolveServerLaunch(settings(), fakeEnv([]));
  const msg = missingServerMessage(l, { ok: false, problem: 'not-found', detail: 'python3 was not found' });
  assert.match(msg, /python3 was not found/);
  assert.match(msg, /"dragon\.pythonPath"/);
  assert.match(msg, /"dragon\.serverPath"/);
  assert.equal(missingServerMessage(l, { ok: true }), '');
});
