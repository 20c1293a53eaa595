// Every TypeScript code block of README.md and docs/*.md compiles against the package's sources,
// and the blocks that train (they call `learn(` or `experiment(`) run to completion.
//
// A block is a module of its own. What it uses without defining (a sampler, a loss) comes from a
// hidden prelude: an HTML comment `<!-- docs-test prelude ... -->` right before the block's fence,
// invisible in the rendered page, compiled (and run) in front of the block.
//
// A block followed by the command that runs it (`npx xpm-torch learn experiment.ts`, `npx tsx
// experiment.ts`, in the paragraph right after its fence) is run that way: saved under that name
// in a project of its own that installed xpm-torch, and run by that command, twice (the second
// time, the job is done). Every training block of the README says how to run it.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

interface DocBlock {
  /** `docs/x.md:LINE` of the fence. */
  readonly place: string;
  /** The hidden prelude, possibly empty. */
  readonly prelude: string;
  readonly code: string;
  /** Line of the block's first code line in the Markdown file (1-based). */
  readonly firstLine: number;
  /** The command the paragraph after the block runs it with, if it gives one. */
  readonly command?: RunCommand;
}

/** How the text says to run a block: `npx xpm-torch learn FILE` or `npx tsx FILE`. */
interface RunCommand {
  readonly tool: "xpm-torch learn" | "tsx";
  readonly file: string;
}

const COMMAND = /`npx (xpm-torch learn|tsx) ([\w.-]+\.[cm]?[tj]s)\b[^`]*`/;

/** The command in the paragraph right after line `close` (a block's closing fence). */
function commandAfter(lines: string[], close: number): RunCommand | undefined {
  let i = close + 1;
  while (i < lines.length && lines[i]!.trim() === "") i++;
  const paragraph: string[] = [];
  for (; i < lines.length && lines[i]!.trim() !== "" && !FENCE.test(lines[i]!); i++) paragraph.push(lines[i]!);
  const m = COMMAND.exec(paragraph.join(" "));
  return m ? { tool: m[1] as RunCommand["tool"], file: m[2]! } : undefined;
}

const FENCE = /^(\s*)```(ts|typescript)\s*$/;
const CLOSE = /^\s*```\s*$/;
const PRELUDE_START = "<!-- docs-test prelude";

/** The TypeScript blocks of one Markdown text (fences may be indented, as in list items). */
function extractBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = FENCE.exec(lines[i]!);
    if (!fence) continue;
    const indent = fence[1]!.length;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !CLOSE.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`${file}:${start + 1}: the code block is not closed`);
    const command = commandAfter(lines, end);
    blocks.push({
      place: `${file}:${start + 1}`,
      prelude: preludeBefore(lines, start),
      code: lines
        .slice(start + 1, end)
        .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
        .join("\n"),
      firstLine: start + 2,
      ...(command ? { command } : {}),
    });
    i = end;
  }
  return blocks;
}

function preludeBefore(lines: string[], fence: number): string {
  if (fence === 0 || lines[fence - 1]!.trim() !== "-->") return "";
  let open = fence - 2;
  while (open >= 0 && !lines[open]!.trim().startsWith("<!--")) open--;
  if (open < 0 || !lines[open]!.trim().startsWith(PRELUDE_START)) return "";
  return lines.slice(open + 1, fence - 1).join("\n");
}

function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => join("docs", f));
  return ["README.md", ...docs];
}

const BLOCKS = markdownFiles().flatMap((file) => extractBlocks(readFileSync(join(ROOT, file), "utf8"), file));

// Written inside the package (dist/ is ignored by git) so that `from "xpm-torch"` resolves to the
// package itself when a block runs.
mkdirSync(join(ROOT, "dist"), { recursive: true });
const WORK = mkdtempSync(join(ROOT, "dist", ".docs-blocks-"));
afterAll(() => rmSync(WORK, { recursive: true, force: true }));

const fileOf = (index: number) => join(WORK, `block${index}.ts`);
const source = (block: DocBlock) => `${block.prelude}\n${block.code}\nexport {};\n`;
const preludeLines = (block: DocBlock) => block.prelude.split("\n").length;

/** Type errors of every block, as `docs/x.md:LINE: message`, from one program over them all. */
function typeErrors(): string[] {
  BLOCKS.forEach((block, i) => writeFileSync(fileOf(i), source(block)));
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    noEmit: true,
    types: ["node"],
    typeRoots: [join(ROOT, "node_modules", "@types")],
    paths: { "xpm-torch": [join(ROOT, "ts", "index.ts")] },
  };
  const program = ts.createProgram(
    BLOCKS.map((_, i) => fileOf(i)),
    options,
  );
  const errors: string[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n");
    const file = diagnostic.file;
    const index = file ? BLOCKS.findIndex((_, i) => fileOf(i) === file.fileName) : -1;
    if (!file || index < 0) {
      errors.push(`${file ? relative(ROOT, file.fileName) : "?"}: ${message}`);
      continue;
    }
    const block = BLOCKS[index]!;
    const line = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line;
    const inPrelude = line < preludeLines(block);
    const mdLine = inPrelude ? `${block.place} (prelude line ${line + 1})` : `${block.place.split(":")[0]}:${block.firstLine + line - preludeLines(block)}`;
    errors.push(`${mdLine}: ${message}`);
  }
  return errors;
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  /** stdout and stderr, interleaved. */
  readonly output: string;
}

/** Runs `node ...args` in `cwd`, whose jobs go to `cwd/workspace`. */
function runNode(args: readonly string[], cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...args], {
      cwd,
      env: { ...process.env, XPM_TORCH_WORKSPACE: join(cwd, "workspace") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let output = "";
    child.stdout.on("data", (d: Buffer) => ((stdout += d.toString()), (output += d.toString())));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, output }));
  });
}

/** Runs a block with Node from a fresh directory; resolves to its exit code and output. */
async function runBlock(index: number): Promise<Run> {
  const block = BLOCKS[index]!;
  const js = ts.transpileModule(source(block), {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  }).outputText;
  const file = join(WORK, `block${index}.mjs`);
  writeFileSync(file, js);
  const cwd = mkdtempSync(join(tmpdir(), "xpm-docs-run-"));
  try {
    return await runNode([file], cwd);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/** tsx's loader, as `node --import tsx` (what `npx tsx` runs) finds it. */
const TSX = pathToFileURL(createRequire(join(ROOT, "package.json")).resolve("tsx")).href;

/**
 * Runs a block as its text says: saved as the command's file (the block as written, its prelude
 * first) in a fresh ES-module project where xpm-torch is installed (linked, as `npm link` does),
 * then the command, twice. `npx xpm-torch learn` is the package's bin script, dist/cli.js.
 */
async function runAsTold(index: number): Promise<readonly [Run, Run]> {
  const block = BLOCKS[index]!;
  const { tool, file } = block.command!;
  const cwd = mkdtempSync(join(tmpdir(), "xpm-docs-project-"));
  try {
    writeFileSync(join(cwd, "package.json"), JSON.stringify({ name: "experiments", version: "1.0.0", type: "module" }));
    mkdirSync(join(cwd, "node_modules"));
    symlinkSync(ROOT, join(cwd, "node_modules", "xpm-torch"), "dir");
    writeFileSync(join(cwd, file), block.prelude ? `${block.prelude}\n${block.code}\n` : `${block.code}\n`);
    const args = tool === "tsx" ? ["--import", TSX, file] : [join(ROOT, "dist", "cli.js"), "learn", file];
    const first = await runNode(args, cwd);
    return [first, await runNode(args, cwd)];
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe("the documentation's code blocks", () => {
  it("finds the blocks, with their hidden preludes", () => {
    const sample = [
      "text", "<!-- docs-test prelude", "const a = 1;", "-->", "```ts", "a + 1;", "```", "```typescript", "b;", "```",
      "- item:", "  ```ts", "  if (c) {", "    d();", "  }", "  ```", "```js", "e;", "```",
    ].join("\n");
    const blocks = extractBlocks(sample.replace("```\n```typescript", "```\n\nRun it: `npx xpm-torch learn a.ts`.\n```typescript"), "x.md");
    expect(blocks).toEqual([
      { place: "x.md:5", prelude: "const a = 1;", code: "a + 1;", firstLine: 6, command: { tool: "xpm-torch learn", file: "a.ts" } },
      { place: "x.md:10", prelude: "", code: "b;", firstLine: 11 },
      { place: "x.md:14", prelude: "", code: "if (c) {\n  d();\n}", firstLine: 15 },
    ]);
    expect(BLOCKS.length).toBeGreaterThanOrEqual(15);
  });

  // Node 20 runs no .ts file: the pages that show loadModel say how to run such a script.
  it.each(["README.md", "docs/text-models.md"])("%s shows a second script that loads the learned model, and how to run it", (file) => {
    const script = BLOCKS.find((b) => b.place.startsWith(`${file}:`) && /\bprocess\.argv\b[\s\S]*\bloadModel\(|\bloadModel\(process\.argv/.test(b.code));
    expect(script, `${file}: no block opens the model a script is given`).toBeDefined();
    expect(script!.code).toMatch(/^\/\/ \w+\.ts: npx tsx \w+\.ts /);
    const text = readFileSync(join(ROOT, file), "utf8");
    expect(text).toContain("ERR_UNKNOWN_FILE_EXTENSION");
    expect(text).toContain("node --import tsx");
  });

  it("all compile (strict)", () => {
    expect(typeErrors()).toEqual([]);
  });

  // Blocks that train run, unless they stand on declared (not defined) pieces or a SLURM cluster.
  const training = BLOCKS.map((block, index) => ({ block, index })).filter(
    ({ block }) => /\b(learn|experiment)\(/.test(block.code) && !/\bdeclare\b|SlurmLauncher/.test(block.prelude + block.code),
  );

  it("include training examples", () => {
    expect(training.length).toBeGreaterThanOrEqual(2);
  });

  it("README's training examples each say how to run them", () => {
    const readme = training.filter(({ block }) => block.place.startsWith("README.md:"));
    expect(readme.length).toBeGreaterThanOrEqual(1);
    for (const { block } of readme) expect(block.command, `${block.place}: no \`npx xpm-torch learn FILE\` or \`npx tsx FILE\` after it`).toBeDefined();
  });

  const told = training.filter(({ block }) => block.command);
  const untold = training.filter(({ block }) => !block.command);

  it.each(untold.map(({ block, index }) => [block.place, index] as const))("%s trains", async (_place, index) => {
    const { code, output } = await runBlock(index);
    expect(code, output).toBe(0);
  });

  it.each(told.map(({ block, index }) => [block.place, `${block.command!.tool} ${block.command!.file}`, index] as const))(
    "%s trains with `npx %s`, and again, as a finished job",
    async (_place, _command, index) => {
      const [first, again] = await runAsTold(index);
      expect(first.code, first.output).toBe(0);
      expect(again.code, again.output).toBe(0);
      for (const run of [first, again]) expect(run.output).not.toMatch(/exports no Learner|Error/);
      if (BLOCKS[index]!.command!.tool === "xpm-torch learn") {
        expect(first.stdout).toMatch(/trained \d+ epochs, \d+ steps/);
        expect(again.stdout).toContain("this job had already run; its stored result:");
      }
    },
  );
});
