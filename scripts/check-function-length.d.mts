/** The most lines a production function of the Rust crates may have. */
export declare const MAX_LINES: number;

/** The functions of a Rust file longer than `max` lines, before its first test module. */
export declare function longFunctions(
  text: string,
  max?: number,
): { readonly name: string; readonly line: number; readonly length: number }[];

/** Every production function over MAX_LINES lines under `cratesDir`, as `file:line` messages. */
export declare function functionLengthViolations(cratesDir: string): string[];
