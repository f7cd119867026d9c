/**
 * The language client: `vscode-languageclient` set up for Dragon. The only module besides
 * extension.ts that imports the client library (and through it VS Code).
 */

import * as vscode from 'vscode';
import {
  type DynamicFeature,
  type Executable,
  ExecuteCommandRequest,
  type ExecuteCommandRegistrationOptions,
  LanguageClient,
  type LanguageClientOptions,
  type StaticFeature,
} from 'vscode-languageclient/node';

import { withoutClientCommands } from './commands';
import { executable, type ServerLaunch } from './launch';
import { type DragonSettings, initializationOptions, SECTION } from './settings';

export const CLIENT_ID = 'dragon';
export const CLIENT_NAME = 'Dragon Language Server';

/**
 * A LanguageClient that leaves the extension's own commands to the extension: the server may
 * list `dragon.suggestSchedule` and the others in `executeCommandProvider` (pygls lists every
 * `@server.command`), and the stock client would register each as a VS Code command, which
 * fails for ids the extension already registered. Other server commands (code lenses, code
 * actions) are registered as usual.
 */
export class DragonLanguageClient extends LanguageClient {
  // Called from the base constructor for every built-in feature: no instance fields here.
  public override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    if ('registrationType' in feature && feature.registrationType.method === ExecuteCommandRequest.method) {
      const commands = feature as DynamicFeature<ExecuteCommandRegistrationOptions>;
      const register = commands.register.bind(commands);
      commands.register = (data) => register({ ...data, registerOptions: withoutClientCommands(data.registerOptions) });
    }
    super.registerFeature(feature);
  }
}

export function createClient(launch: ServerLaunch, settings: DragonSettings, output: vscode.OutputChannel): DragonLanguageClient {
  const server: Executable = executable(launch);
  const options: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'dragon' },
      { scheme: 'untitled', language: 'dragon' },
    ],
    synchronize: {
      // didChangeConfiguration carries the whole `dragon` section; workloads and scripts on
      // disk change replay results.
      configurationSection: SECTION,
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{dragon,tvmscript}'),
    },
    initializationOptions: initializationOptions(settings),
    outputChannel: output,
    traceOutputChannel: output,
  };
  return new DragonLanguageClient(CLIENT_ID, CLIENT_NAME, { run: server, debug: server }, options);
}
