import { type ParseArgsConfig, parseArgs } from "node:util";

/** Where a command writes: stdout and stderr lines (replaceable in tests). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

/** Parsed command line of one command. */
export interface CommandArgs {
  readonly values: Readonly<Record<string, string | boolean | readonly string[] | undefined>>;
  readonly positionals: readonly string[];
}

/** One `xpm-torch <name>` command. */
export interface Command {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** `--help` text: usage line, description, options. */
  readonly help: string;
  readonly options?: ParseArgsConfig["options"];
  /** How many positional arguments it takes: [min, max]. */
  readonly positionals?: readonly [number, number];
  run(args: CommandArgs, io: CliIo): Promise<number>;
}

/** A usage error: the message, then the command's help, exit status 2. */
export class UsageError extends Error {}

/** Parses `argv` for `command`; throws UsageError on unknown options or a wrong argument count. */
export function parseCommandArgs(command: Command, argv: readonly string[]): CommandArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: command.options ?? {}, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const [min, max] = command.positionals ?? [0, 0];
  const n = parsed.positionals.length;
  if (n < min) throw new UsageError(`${command.name}: missing argument`);
  if (n > max) throw new UsageError(`${command.name}: unexpected argument ${JSON.stringify(parsed.positionals[max])}`);
  return { values: parsed.values as CommandArgs["values"], positionals: parsed.positionals };
}
