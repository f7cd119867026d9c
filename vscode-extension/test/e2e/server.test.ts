/**
 * End to end: start the real language server the way the extension does (settings ->
 * resolveServerLaunch -> probeServer -> executable) and talk LSP to it over stdio.
 *
 * The interpreter is the repository's `.venv/bin/python`, or `DRAGON_PYTHON`, given to the
 * extension as `dragon.pythonPath`, exactly as a user would set it. When `python -m
 * dragon_lsp --help` fails (the server is not built or not installed there) the tests are
 * skipped with the reason; with `DRAGON_E2E_REQUIRED=1` they fail instead.
 *
 * What the server must do: answer `initialize`, publish diagnostics with the checker's codes,
 * list and carry out the extension's commands with the arguments the extension sends (the
 * answers read through the extension's own `interpretResult`), shut down cleanly. What it may do
 * (a TODO, not a failure, when its capability is absent): completion, hover.
 */

import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, test } from 'node:test';

import {
  CompletionRequest, type Diagnostic, DidChangeConfigurationNotification, DidOpenTextDocumentNotification, ExecuteCommandRequest,
  ExitNotification, HoverRequest, type InitializeResult, InitializeRequest, InitializedNotification, PublishDiagnosticsNotification,
  type PublishDiagnosticsParams, ShutdownRequest, WorkDoneProgress,
} from 'vscode-languageserver-protocol';
import { createProtocolConnection, type ProtocolConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-languageserver-protocol/node';

import { commandArguments, commandById, interpretResult, LIST_TARGETS, type Outcome, progressStep, SERVER_COMMANDS } from '../../src/commands';
import { commandLine, executable, nodeEnvironment, probeServer, resolveServerLaunch } from '../../src/launch';
import { DEFAULT_SETTINGS, initializationOptions, SECTION } from '../../src/settings';
import { BUILTIN_TARGETS, choices } from '../../src/status';
import { EXTENSION_ROOT, REPO_ROOT } from '../paths';

const python = process.env.DRAGON_PYTHON || path.join(REPO_ROOT, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const required = process.env.DRAGON_E2E_REQUIRED === '1';
const settings = { ...DEFAULT_SETTINGS, serverArgs: [], pythonPath: python };
const env = nodeEnvironment([REPO_ROOT]);
const launch = resolveServerLaunch(settings, env);

/** Why the server cannot be run here, or undefined when it can. */
function unavailable(): string | undefined {
  if (!fs.existsSync(python)) return `no interpreter at ${python} (set DRAGON_PYTHON)`;
  const help = spawnSync(launch.command, [...launch.args, '--help'], { cwd: launch.cwd, encoding: 'utf8', timeout: 60000 });
  if (help.status === 0) return undefined;
  const why = `${help.stderr ?? ''}${help.stdout ?? ''}`.trim().split('\n').pop() || help.error?.message || `status ${help.status}`;
  return `\`${commandLine(launch)} --help\` failed: ${why}`;
}

const reason = unavailable();
if (reason && required) {
  test('the language server can be started (DRAGON_E2E_REQUIRED=1)', () => assert.fail(reason));
}
const skip = reason && !required ? `dragon-lsp not ready: ${reason}` : false;

const SCRIPT_URI = pathToFileURL(path.join(EXTENSION_ROOT, 'test', 'e2e', 'broken.dragon')).href;
// Line 2: `b0` is a block where split expects a loop (DRG102, the checker's golden message).
const SCRIPT = 'b0 = get_sblock("C")\nl1, l2 = split(b0, [None, 32])\n';

// Schedules of the repository's 64x64x64 matmul: one for a GPU (threads bound; its CUDA source
// needs no GPU), one for this machine's CPU.
const WORKLOAD = path.join(REPO_ROOT, 'tests', 'data', 'workloads', 'matmul_64.tvmscript');
const GPU_URI = pathToFileURL(path.join(EXTENSION_ROOT, 'test', 'e2e', 'gpu.dragon')).href;
const GPU_SCRIPT = `workload ${JSON.stringify(WORKLOAD)}\ntarget "nvidia/nvidia-h100"\n\nb0 = get_sblock("C")\n` +
  'l1, l2, l3 = get_loops(b0)\nl4 = fuse(l1, l2)\nl5, l6 = split(l4, [None, 128])\nbind(l5, "blockIdx.x")\nbind(l6, "threadIdx.x")\n';
const CPU_URI = pathToFileURL(path.join(EXTENSION_ROOT, 'test', 'e2e', 'cpu.dragon')).href;
const CPU_SCRIPT = `workload ${JSON.stringify(WORKLOAD)}\ntarget "llvm"\n\nb0 = get_sblock("C")\nl1, l2, l3 = get_loops(b0)\nparallel(l1)\n`;
const NO_WORKLOAD_URI = pathToFileURL(path.join(EXTENSION_ROOT, 'test', 'e2e', 'alone.dragon')).href;

let server: ChildProcess | undefined;
let requests = 0;
const progress = new Map<string, unknown[]>();
let connection: ProtocolConnection | undefined;
let init: InitializeResult | undefined;
const stderr: string[] = [];
const diagnostics = new Map<string, PublishDiagnosticsParams[]>();
const waiters: Array<() => void> = [];

function waitFor<T>(what: string, get: () => T | undefined, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms; server stderr:\n${stderr.join('').slice(-2000)}`)), timeoutMs);
    const check = () => {
      const v = get();
      if (v === undefined) return false;
      clearTimeout(timer);
      resolve(v);
      return true;
    };
    if (!check()) waiters.push(() => void check());
  });
}

before(async () => {
  if (skip) return;
  const probe = await probeServer(launch, env);
  assert.deepEqual(probe, { ok: true }, 'the extension would refuse to start this server');
  const ex = executable(launch);
  server = spawn(ex.command, ex.args, { ...ex.options, stdio: ['pipe', 'pipe', 'pipe'] });
  server.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  // Requests a server may send to the client (VS Code answers these).
  connection.onRequest('workspace/configuration', (params: { items: Array<{ section?: string }> }) =>
    params.items.map((i) => (i.section === SECTION ? { ...settings } : i.section?.startsWith(`${SECTION}.`) ? (settings as Record<string, unknown>)[i.section.slice(SECTION.length + 1)] ?? null : null)));
  connection.onRequest('client/registerCapability', () => null);
  connection.onRequest('client/unregisterCapability', () => null);
  connection.onRequest('window/workDoneProgress/create', () => null);
  connection.onRequest('workspace/applyEdit', () => ({ applied: false }));
  connection.onProgress(WorkDoneProgress.type, 'e2e-progress', (value) => progress.set('e2e-progress', [...(progress.get('e2e-progress') ?? []), value]));
  connection.onNotification(PublishDiagnosticsNotification.type, (p) => {
    diagnostics.set(p.uri, [...(diagnostics.get(p.uri) ?? []), p]);
    for (const w of waiters.splice(0)) w();
  });
  connection.listen();
  init = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    clientInfo: { name: 'little-dragon e2e' },
    rootUri: pathToFileURL(REPO_ROOT).href,
    workspaceFolders: [{ uri: pathToFileURL(REPO_ROOT).href, name: 'little-dragon' }],
    initializationOptions: initializationOptions(settings),
    capabilities: {
      workspace: { configuration: true, workspaceFolders: true, applyEdit: true, didChangeConfiguration: { dynamicRegistration: true },
        executeCommand: { dynamicRegistration: true } },
      textDocument: {
        synchronization: { dynamicRegistration: true, didSave: true },
        publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true },
        completion: { completionItem: { snippetSupport: true, documentationFormat: ['markdown', 'plaintext'] } },
        hover: { contentFormat: ['markdown', 'plaintext'] },
      },
      window: { workDoneProgress: true },
    },
  });
  await connection.sendNotification(InitializedNotification.type, {});
  // vscode-languageclient sends the `dragon` section after initialized (synchronize.configurationSection).
  await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
});

after(async () => {
  if (!server) return;
  const exited = new Promise<number | null>((resolve) => {
    if (server!.exitCode !== null) resolve(server!.exitCode);
    server!.on('exit', (code) => resolve(code));
  });
  const timer = setTimeout(() => server?.kill(), 10000);
  try {
    if (connection) {
      await connection.sendRequest(ShutdownRequest.type);
      await connection.sendNotification(ExitNotification.type);
    }
    const code = await exited;
    assert.equal(code, 0, `server exit code ${code}; stderr:\n${stderr.join('').slice(-2000)}`);
  } finally {
    clearTimeout(timer);
    connection?.dispose();
  }
});

test('initialize: the server syncs text documents', { skip }, () => {
  assert.ok(init, 'no initialize result');
  assert.ok(init.capabilities.textDocumentSync !== undefined, 'textDocumentSync missing');
});

test('diagnostics: a type error is published with its code and span', { skip, timeout: 60000 }, async () => {
  await connection!.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: SCRIPT_URI, languageId: 'dragon', version: 1, text: SCRIPT },
  });
  const found = await waitFor<Diagnostic>('DRG102 diagnostic', () => {
    for (const p of diagnostics.get(SCRIPT_URI) ?? []) {
      const d = p.diagnostics.find((x) => x.code === 'DRG102');
      if (d) return d;
    }
    return undefined;
  }, 45000);
  assert.deepEqual(found.range, { start: { line: 1, character: 15 }, end: { line: 1, character: 17 } });
  assert.equal(found.severity, 1);
  assert.match(found.message, /split: 'loop' expects a loop, but 'b0' is a block/);
});

test('completion: instruction names from the table', { skip, timeout: 30000 }, async (t) => {
  if (!init?.capabilities.completionProvider) return t.todo('the server offers no completion');
  const r = await connection!.sendRequest(CompletionRequest.type, { textDocument: { uri: SCRIPT_URI }, position: { line: 2, character: 0 } });
  const items = Array.isArray(r) ? r : r?.items ?? [];
  const labels = new Set(items.map((i) => i.label));
  const snippets = JSON.parse(fs.readFileSync(path.join(EXTENSION_ROOT, 'snippets', 'dragon.json'), 'utf8')) as Record<string, { prefix: string }>;
  for (const name of ['get_sblock', 'split', 'sample_perfect_tile', 'bind']) {
    assert.ok(name in snippets);
    assert.ok(labels.has(name), `completion lacks ${name}: ${[...labels].slice(0, 20).join(', ')}`);
  }
});

test('hover: the signature of an instruction', { skip, timeout: 30000 }, async (t) => {
  if (!init?.capabilities.hoverProvider) return t.todo('the server offers no hover');
  const h = await connection!.sendRequest(HoverRequest.type, { textDocument: { uri: SCRIPT_URI }, position: { line: 1, character: 10 } });
  assert.ok(h, 'no hover on split');
  assert.match(JSON.stringify(h.contents), /split\(loop: loop/);
});

async function open(uri: string, text: string): Promise<void> {
  await connection!.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId: 'dragon', version: 1, text } });
}

/** Run one of the extension's commands as the extension does: its arguments, then its reading of the answer. */
async function run(id: string, uri: string, prompt?: string, token?: string): Promise<Outcome> {
  const cmd = commandById(id)!;
  const args = commandArguments(cmd, { uri, version: 1 }, settings, prompt);
  const result: unknown = await connection!.sendRequest(ExecuteCommandRequest.type, { command: cmd.lsp!, arguments: args, workDoneToken: token ?? `e2e-${++requests}` });
  return interpretResult(cmd, result);
}

test("commands: the server lists the extension's commands", { skip }, () => {
  const offered = init?.capabilities.executeCommandProvider?.commands ?? [];
  assert.deepEqual(SERVER_COMMANDS.filter((c) => !offered.includes(c)), [], `the server lists: ${offered.join(', ')}`);
  assert.ok(offered.includes(LIST_TARGETS));
});

test('Show scheduled TensorIR opens the replayed module beside the script', { skip, timeout: 120000 }, async () => {
  await open(GPU_URI, GPU_SCRIPT);
  const outcome = await run('dragon.showTensorIR', GPU_URI);
  assert.equal(outcome.kind, 'document', JSON.stringify(outcome));
  if (outcome.kind !== 'document') return;
  assert.equal(outcome.language, 'python');
  assert.match(outcome.content, /@T\.prim_func/);
  assert.match(outcome.content, /thread="blockIdx\.x"/);
});

test('Show CUDA source opens the kernel TVM generates (no GPU needed)', { skip, timeout: 120000 }, async () => {
  const outcome = await run('dragon.showCudaSource', GPU_URI, undefined, 'e2e-progress');
  assert.equal(outcome.kind, 'document', JSON.stringify(outcome));
  if (outcome.kind !== 'document') return;
  assert.equal(outcome.language, 'cuda-cpp');
  assert.match(outcome.content, /__global__ void __launch_bounds__\(128\) main_kernel\(/);
  // the server reported on the request's token, as the extension's notification shows it
  const values = progress.get('e2e-progress') ?? [];
  assert.deepEqual(values.map((v) => (v as { kind: string }).kind), ['begin', 'end']);
  assert.equal(progressStep(values[0] as never, 0).message, 'starting');
});

test('Measure latency answers the latency and its speedup', { skip, timeout: 300000 }, async (t) => {
  await open(CPU_URI, CPU_SCRIPT);
  const outcome = await run('dragon.measureLatency', CPU_URI);
  if (outcome.kind === 'message' && outcome.severity === 'error' && /dragon_dsl\.engine/.test(outcome.text)) {
    return t.skip(`no measurement engine here: ${outcome.text}`);
  }
  assert.equal(outcome.kind, 'message', JSON.stringify(outcome));
  if (outcome.kind !== 'message') return;
  assert.equal(outcome.severity, 'info', outcome.text);
  assert.match(outcome.text, /^cpu\.dragon \(llvm, device local\): median latency [0-9.]+ us; [0-9.]+x vs unscheduled/);
  const published = await waitFor('DRG706 information', () => diagnostics.get(CPU_URI)?.at(-1)?.diagnostics.find((d) => d.code === 'DRG706'), 30000);
  assert.equal(published.severity, 3);
  assert.ok(outcome.text.endsWith(published.message));
});

test('Suggest schedule says why it cannot work: an error message', { skip, timeout: 120000 }, async () => {
  await open(NO_WORKLOAD_URI, 'b0 = get_sblock("C")\n');
  const outcome = await run('dragon.suggestSchedule', NO_WORKLOAD_URI);
  assert.equal(outcome.kind, 'message');
  if (outcome.kind !== 'message') return;
  assert.equal(outcome.severity, 'error');
  assert.match(outcome.text, /^no workload: add `workload "file\.tvmscript"` to the header/);
});

test('Rewrite schedule: a malformed request is refused, not crashed on', { skip, timeout: 60000 }, async () => {
  await assert.rejects(connection!.sendRequest(ExecuteCommandRequest.type, { command: 'dragon.rewriteSchedule', arguments: [SCRIPT_URI, 'rewrite'] }),
    /expects one argument/);
  // the script has errors: the rewrite says so (and the selection and request are accepted)
  const cmd = commandById('dragon.rewriteSchedule')!;
  const args = commandArguments(cmd, { uri: SCRIPT_URI, version: 1, range: { start: { line: 0, character: 0 }, end: { line: 1, character: 5 } } }, settings, 'use shared memory');
  const outcome = interpretResult(cmd, await connection!.sendRequest(ExecuteCommandRequest.type, { command: cmd.lsp!, arguments: args }));
  assert.deepEqual(outcome, { kind: 'message', severity: 'error', text: 'the script has errors: fix them first' });
});

test("Select target and device: the server's lists come first", { skip, timeout: 120000 }, async () => {
  const listed = (await connection!.sendRequest(ExecuteCommandRequest.type, { command: LIST_TARGETS, arguments: [] })) as { targets?: unknown; devices?: unknown };
  const targets = choices(listed.targets, BUILTIN_TARGETS);
  assert.ok(targets.indexOf('nvidia/nvidia-h100') < targets.indexOf('arm/rasp4b'), targets.slice(0, 10).join(', '));
  assert.ok(targets.length > 100);
  assert.deepEqual(listed.devices, ['local', 'cpu', 'rpc']);
});
