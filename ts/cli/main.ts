import { ConfigError, XpmTorchError } from "../errors.js";
import { type CliIo, type Command, UsageError, parseCommandArgs } from "./command.js";
import { doctorCommand } from "./doctor.js";
import { downloadCommand } from "./download.js";
import { jobsCommand } from "./jobs.js";
import { demoCommand, learnCommand } from "./learn.js";
import { reportCommand } from "./report.js";
import { checkIdentifiersCommand, schemaCommand } from "./schema.js";
import { libtorchPathCommand, setupCommand } from "./setup.js";
import { wireCommand } from "./wire.js";

export const COMMANDS: readonly Command[] = [
  demoCommand,
  learnCommand,
  jobsCommand,
  reportCommand,
  doctorCommand,
  setupCommand,
  downloadCommand,
  libtorchPathCommand,
  schemaCommand,
  checkIdentifiersCommand,
  wireCommand,
];

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "usage: xpm-torch <command> [options]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "`xpm-torch <command> --help` describes a command.",
  ].join("\n");
}

/** Runs the command line `argv` (without `node cli.js`); resolves to the exit status. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    (name === undefined ? io.err : io.out)(topic ? topic.help : usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(`xpm-torch: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
    return 2;
  }
  if (rest.includes("--help") || rest.includes("-h")) {
    io.out(command.help);
    return 0;
  }
  try {
    return await command.run(parseCommandArgs(command, rest), io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`xpm-torch ${command.name}: ${error.message}\n\n${command.help}`);
      return 2;
    }
    if (error instanceof ConfigError || (error instanceof Error && (error as { code?: unknown }).code === "ERR_CONFIG")) {
      io.err(`xpm-torch ${command.name}: invalid configuration: ${error.message}`);
      return 1;
    }
    if (error instanceof XpmTorchError) {
      io.err(`xpm-torch ${command.name}: ${error.message}`);
      return 1;
    }
    throw error;
  }
}
