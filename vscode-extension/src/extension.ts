/**
 * Activation: the status-bar item, the commands, and the language server's life cycle.
 * Decisions live in the VS Code-free modules (settings, launch, commands, status); this one
 * only connects them to the editor.
 */

import * as vscode from 'vscode';
import { ExecuteCommandRequest, State, WorkDoneProgress } from 'vscode-languageclient/node';

import { CLIENT_NAME, createClient, type DragonLanguageClient } from './client';
import {
  COMMANDS, type DragonCommand, commandArguments, interpretResult, LIST_TARGETS, type Outcome, progressStep,
} from './commands';
import { missingServerMessage, nodeEnvironment, probeServer, resolveServerLaunch, commandLine } from './launch';
import { type DragonSettings, readSettings, RESTART_KEYS, SECTION } from './settings';
import { BUILTIN_DEVICES, BUILTIN_TARGETS, choices, scriptTarget, type ServerState, statusText } from './status';

const LANGUAGE = 'dragon';
const OTHER = '\u0000other';
let requests = 0;

/** What `activate` returns: for tests and other extensions. */
export interface DragonApi {
  /** Settles when the first start of the server has succeeded or failed. */
  readonly ready: Promise<void>;
  state(): ServerState;
  client(): DragonLanguageClient | undefined;
}

function settings(): DragonSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return readSettings((key) => config.get(key));
}

class DragonExtension implements vscode.Disposable {
  private client: DragonLanguageClient | undefined;
  private serverState: ServerState = 'stopped';
  private readonly output = vscode.window.createOutputChannel(CLIENT_NAME);
  private readonly status = vscode.window.createStatusBarItem('dragon.status', vscode.StatusBarAlignment.Right, 100);
  private readonly disposables: vscode.Disposable[] = [];
  private starting: Promise<void> = Promise.resolve();

  constructor() {
    this.status.name = 'Dragon target and device';
    this.status.command = 'dragon.selectTarget';
    this.disposables.push(this.output, this.status);
    for (const cmd of COMMANDS) {
      this.disposables.push(vscode.commands.registerCommand(cmd.id, () => this.run(cmd)));
    }
    this.disposables.push(
      vscode.window.onDidChangeActiveTextEditor(() => this.updateStatus()),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.document === vscode.window.activeTextEditor?.document) this.updateStatus();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (RESTART_KEYS.some((k) => e.affectsConfiguration(`${SECTION}.${k}`))) {
          this.output.appendLine('Server settings changed: restarting the language server.');
          void this.restart();
        }
        if (e.affectsConfiguration(SECTION)) this.updateStatus();
      }),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
    );
    this.updateStatus();
  }

  get state(): ServerState {
    return this.serverState;
  }

  get languageClient(): DragonLanguageClient | undefined {
    return this.client;
  }

  start(): Promise<void> {
    this.starting = this.starting.then(() => this.startOnce()).catch((error) => {
      this.output.appendLine(`Starting the language server: ${String(error)}`);
      this.setState('stopped');
    });
    return this.starting;
  }

  private setState(state: ServerState): void {
    this.serverState = state;
    this.updateStatus();
  }

  private async startOnce(): Promise<void> {
    if (this.client) return;
    const s = settings();
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
    const env = nodeEnvironment(folders, vscode.workspace.isTrusted);
    const launch = resolveServerLaunch(s, env);
    this.setState('starting');
    this.output.appendLine(`Starting: ${commandLine(launch)} (from ${launch.origin})`);
    const probe = await probeServer(launch, env);
    if (!probe.ok) {
      const message = missingServerMessage(launch, probe);
      this.output.appendLine(message);
      this.setState('missing');
      void vscode.window.showErrorMessage(message, 'Open Settings', 'Show Output').then((choice) => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', `@ext:little-dragon.little-dragon`);
        if (choice === 'Show Output') this.output.show();
      });
      return;
    }
    const client = createClient(launch, s, this.output);
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      this.setState(e.newState === State.Running ? 'running' : e.newState === State.Starting ? 'starting' : 'stopped');
    });
    this.client = client;
    try {
      await client.start();
      this.setState('running');
    } catch (error) {
      this.output.appendLine(`The language server failed to start: ${String(error)}`);
      this.setState('stopped');
      void vscode.window.showErrorMessage(`Dragon: the language server failed to start (${commandLine(launch)}). See the output for details.`, 'Show Output')
        .then((choice) => choice && this.output.show());
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.output.appendLine(`Stopping the language server: ${String(error)}`);
      }
    }
    this.setState('stopped');
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  updateStatus(): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== LANGUAGE) {
      this.status.hide();
      return;
    }
    const { text, tooltip } = statusText(settings(), scriptTarget(editor.document.getText()), this.serverState);
    this.status.text = text;
    this.status.tooltip = tooltip;
    this.status.show();
  }

  private async run(cmd: DragonCommand): Promise<void> {
    if (cmd.id === 'dragon.restartServer') return this.restart();
    if (cmd.id === 'dragon.selectTarget') return this.selectTarget();
    if (cmd.lsp) return this.runOnServer(cmd, cmd.lsp);
  }

  private async runOnServer(cmd: DragonCommand, lsp: string): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== LANGUAGE) {
      void vscode.window.showWarningMessage(`Dragon: ${cmd.title} works on a .dragon script: open one first.`);
      return;
    }
    const client = this.client;
    if (!client || this.serverState !== 'running') {
      void vscode.window.showErrorMessage(`Dragon: ${cmd.title} needs the language server, which is not running.`, 'Show Output')
        .then((choice) => choice && this.output.show());
      return;
    }
    let prompt: string | undefined;
    if (cmd.prompt) {
      prompt = await vscode.window.showInputBox({ prompt: cmd.prompt, ignoreFocusOut: true });
      if (prompt === undefined) return; // cancelled
    }
    const c2p = client.code2ProtocolConverter;
    const doc = editor.document;
    const range = editor.selection.isEmpty ? undefined : c2p.asRange(editor.selection);
    const args = commandArguments(cmd, { uri: c2p.asUri(doc.uri), version: doc.version, range }, settings(), prompt);
    let result: unknown;
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: cmd.progress ?? `Dragon: ${cmd.title}`, cancellable: true },
        async (progress, token) => {
          // The server reports its stages on this token; they go to this notification, whose
          // cancel button cancels the request.
          const workDoneToken = `dragon-client-${++requests}`;
          let done = 0;
          const listener = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
            const step = progressStep(value, done);
            done = step.done;
            if (step.message !== undefined || step.increment !== undefined) progress.report({ message: step.message, increment: step.increment });
          });
          try {
            return await client.sendRequest(ExecuteCommandRequest.type, { command: lsp, arguments: args, workDoneToken }, token);
          } finally {
            listener.dispose();
          }
        },
      );
    } catch (error) {
      if (isCancellation(error)) return;
      void vscode.window.showErrorMessage(`Dragon: ${cmd.title} failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    await show(interpretResult(cmd, result));
  }

  private async selectTarget(): Promise<void> {
    const s = settings();
    let listed: { targets?: unknown; devices?: unknown } = {};
    const client = this.client;
    const offered = client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    if (client && this.serverState === 'running' && offered.includes(LIST_TARGETS)) {
      try {
        const r: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command: LIST_TARGETS, arguments: [] });
        if (r && typeof r === 'object') listed = r as typeof listed;
      } catch (error) {
        this.output.appendLine(`${LIST_TARGETS}: ${String(error)}`);
      }
    }
    const target = await pick('Target', s.target, choices(listed.targets, BUILTIN_TARGETS),
      { label: 'From the script', detail: "The script's target line, else llvm" },
      'A target tag (nvidia/nvidia-h100), a kind (llvm, cuda) or a JSON object ({"kind": "llvm", "num-cores": 4})');
    if (target === undefined) return;
    const device = await pick('Device', s.device, choices(listed.devices, BUILTIN_DEVICES),
      { label: 'Automatic', detail: 'The RPC tracker when dragon.trackerAddress is set, else this machine' },
      'A device: local, cpu, rpc (through the tracker) or rpc://HOST:PORT/KEY');
    if (device === undefined) return;
    const where = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    const config = vscode.workspace.getConfiguration(SECTION);
    await config.update('target', target, where);
    await config.update('device', device, where);
    this.updateStatus();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

function isCancellation(error: unknown): boolean {
  // vscode-jsonrpc's RequestCancelled (-32800) and LSP's ServerCancelled (-32802).
  const code = (error as { code?: number } | undefined)?.code;
  return code === -32800 || code === -32802;
}

async function show(outcome: Outcome): Promise<void> {
  if (outcome.kind === 'none') return;
  if (outcome.kind === 'message') {
    if (outcome.severity === 'error') void vscode.window.showErrorMessage(outcome.text);
    else void vscode.window.showInformationMessage(outcome.text);
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ content: outcome.content, language: outcome.language });
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
  if (outcome.message) void vscode.window.showInformationMessage(outcome.message);
}

/** A quick pick over `values`, a "default" item (the empty string) and "Other..." (an input box). */
async function pick(what: string, current: string, values: string[], empty: { label: string; detail: string }, otherPrompt: string): Promise<string | undefined> {
  type Item = vscode.QuickPickItem & { value: string };
  const mark = (v: string) => (v === current ? 'current' : undefined);
  const items: Item[] = [
    { label: empty.label, detail: empty.detail, description: mark(''), value: '' },
    ...values.map((v) => ({ label: v, description: mark(v), value: v })),
    { label: 'Other...', value: OTHER },
  ];
  if (current && !values.includes(current)) items.splice(1, 0, { label: current, description: 'current', value: current });
  const chosen = await vscode.window.showQuickPick(items, { title: `Dragon: ${what}`, placeHolder: `${what} (current: ${current || empty.label})` });
  if (!chosen) return undefined;
  if (chosen.value !== OTHER) return chosen.value;
  const typed = await vscode.window.showInputBox({ title: `Dragon: ${what}`, prompt: otherPrompt, value: current });
  return typed === undefined ? undefined : typed.trim();
}

let extension: DragonExtension | undefined;

export function activate(context: vscode.ExtensionContext): DragonApi {
  const ext = new DragonExtension();
  extension = ext;
  context.subscriptions.push(ext);
  const ready = ext.start();
  return { ready, state: () => ext.state, client: () => ext.languageClient };
}

export async function deactivate(): Promise<void> {
  const ext = extension;
  extension = undefined;
  await ext?.stop();
}
