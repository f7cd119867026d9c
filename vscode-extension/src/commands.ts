/**
 * The extension's commands, in one table: the VS Code command ids that package.json
 * contributes, and the `workspace/executeCommand` names of the language server that carry
 * them out. Also what a command sends the server and how its answer is shown. No VS Code
 * import (unit-tested directly).
 *
 * Contract with the server, for every command with an `lsp` name:
 *   request:  workspace/executeCommand { command: lsp, arguments: [CommandArgument], workDoneToken }
 *   answer:   null (nothing to show; edits arrive through workspace/applyEdit), a string
 *             (shown as a message), or a CommandResult.
 *   progress: `$/progress` on the request's workDoneToken, shown in the command's own
 *             notification (`progressStep`); cancelling it sends `$/cancelRequest`.
 * The server reads the rest of its settings from the `dragon` configuration section.
 */

import type { DragonSettings } from './settings';

export interface DragonCommand {
  /** VS Code command id (package.json `contributes.commands`). */
  readonly id: string;
  readonly title: string;
  /** The server's executeCommand name; none: the client carries it out alone. */
  readonly lsp?: string;
  /** Acts on the active `.dragon` editor. */
  readonly needsDocument: boolean;
  /** Sends the selection (the whole document when nothing is selected). */
  readonly sendsSelection?: boolean;
  /** Asks for an optional free-text request first (an input box). */
  readonly prompt?: string;
  /** Language of a returned `content` when the server names none. */
  readonly language?: string;
  /** Title of the progress notification while the server works. */
  readonly progress?: string;
}

export const COMMANDS: readonly DragonCommand[] = [
  {
    id: 'dragon.suggestSchedule', title: 'Suggest schedule', lsp: 'dragon.suggestSchedule', needsDocument: true,
    progress: 'Dragon: suggesting a schedule',
  },
  {
    id: 'dragon.rewriteSchedule', title: 'Rewrite schedule', lsp: 'dragon.rewriteSchedule', needsDocument: true,
    sendsSelection: true, prompt: 'What should change? (optional, e.g. "stage A in shared memory")',
    progress: 'Dragon: rewriting the schedule',
  },
  {
    id: 'dragon.showTensorIR', title: 'Show scheduled TensorIR', lsp: 'dragon.showTensorIR', needsDocument: true,
    language: 'python', progress: 'Dragon: replaying the schedule',
  },
  {
    id: 'dragon.showCudaSource', title: 'Show CUDA source', lsp: 'dragon.showCudaSource', needsDocument: true,
    language: 'cuda-cpp', progress: 'Dragon: building CUDA source',
  },
  {
    id: 'dragon.measureLatency', title: 'Measure latency', lsp: 'dragon.measureLatency', needsDocument: true,
    progress: 'Dragon: measuring latency',
  },
  { id: 'dragon.selectTarget', title: 'Select target and device', needsDocument: false },
  { id: 'dragon.restartServer', title: 'Restart language server', needsDocument: false },
];

/** Optional: `dragon.listTargets` answers `{ targets?: string[], devices?: string[] }`; without it the built-in lists serve. */
export const LIST_TARGETS = 'dragon.listTargets';

export const SERVER_COMMANDS: readonly string[] = COMMANDS.flatMap((c) => (c.lsp ? [c.lsp] : []));

export function commandById(id: string): DragonCommand | undefined {
  return COMMANDS.find((c) => c.id === id);
}

/** An LSP position/range (0-based line and UTF-16 character). */
export interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** The single argument of every server command. */
export interface CommandArgument {
  uri: string;
  /** Document version the request is about (edits for another version are stale). */
  version: number;
  /** Selected range, for commands that send one. */
  range?: LspRange;
  /** Settings at the time of the request; empty strings mean "the default". */
  target: string;
  device: string;
  trackerAddress: string;
  /** The user's free-text request (rewrite). */
  prompt?: string;
}

export function commandArguments(
  cmd: DragonCommand,
  doc: { uri: string; version: number; range?: LspRange },
  s: DragonSettings,
  prompt?: string,
): [CommandArgument] {
  const arg: CommandArgument = {
    uri: doc.uri,
    version: doc.version,
    target: s.target,
    device: s.device,
    trackerAddress: s.trackerAddress,
  };
  if (cmd.sendsSelection && doc.range) arg.range = doc.range;
  if (prompt) arg.prompt = prompt;
  return [arg];
}

/** The answer of a server command. */
export interface CommandResult {
  /** Shown as an information message. */
  message?: string;
  /** Shown as an error message (the command failed in a way the user can act on). */
  error?: string;
  /** Opened in a new editor beside the script (TensorIR, CUDA source, a suggested script). */
  content?: string;
  /** Its VS Code language id (default: the command's `language`, else `dragon`). */
  language?: string;
}

export type Outcome =
  | { kind: 'none' }
  | { kind: 'message'; severity: 'info' | 'error'; text: string }
  | { kind: 'document'; content: string; language: string; message?: string };

/** What to show for a server's answer; never throws on a malformed one. */
export function interpretResult(cmd: DragonCommand, result: unknown): Outcome {
  if (result === null || result === undefined) return { kind: 'none' };
  if (typeof result === 'string') return result ? { kind: 'message', severity: 'info', text: result } : { kind: 'none' };
  if (typeof result !== 'object' || Array.isArray(result)) {
    return { kind: 'message', severity: 'info', text: `${cmd.title}: ${JSON.stringify(result)}` };
  }
  const r = result as Record<string, unknown>;
  if (typeof r.error === 'string' && r.error) return { kind: 'message', severity: 'error', text: r.error };
  const message = typeof r.message === 'string' && r.message ? r.message : undefined;
  if (typeof r.content === 'string') {
    const language = typeof r.language === 'string' && r.language ? r.language : cmd.language ?? 'dragon';
    return message ? { kind: 'document', content: r.content, language, message } : { kind: 'document', content: r.content, language };
  }
  if (message) return { kind: 'message', severity: 'info', text: message };
  return { kind: 'message', severity: 'info', text: `${cmd.title}: ${JSON.stringify(result)}` };
}

/** A `$/progress` value of the server's work on a command (WorkDoneProgressBegin/Report/End). */
export interface WorkDoneValue {
  kind?: unknown;
  message?: unknown;
  percentage?: unknown;
}

/**
 * What to add to VS Code's progress notification for a `$/progress` value: its message, and the
 * increment from `done` (VS Code adds increments; LSP reports percentages). `done` is the
 * percentage shown so far; the answer's `done` is the new one. Never throws on a malformed value.
 */
export function progressStep(value: WorkDoneValue, done: number): { message?: string; increment?: number; done: number } {
  if (!value || typeof value !== 'object' || value.kind === 'end') return { done };
  const step: { message?: string; increment?: number; done: number } = { done };
  if (typeof value.message === 'string' && value.message) step.message = value.message;
  if (typeof value.percentage === 'number' && Number.isFinite(value.percentage)) {
    const pct = Math.min(100, Math.max(0, value.percentage));
    if (pct > done) {
      step.increment = pct - done;
      step.done = pct;
    }
  }
  return step;
}

/**
 * `vscode-languageclient` registers a VS Code command for every command the server lists in
 * `executeCommandProvider`. The commands of this table are the extension's own (they add
 * arguments, progress and a way to show the answer), so the client must not register them a
 * second time: VS Code would refuse the duplicate and the client would fail to start.
 */
export function withoutClientCommands<T extends { commands?: string[] }>(options: T): T {
  if (!options.commands) return options;
  const own = new Set(COMMANDS.map((c) => c.id));
  return { ...options, commands: options.commands.filter((c) => !own.has(c)) };
}
