/** The TypeScript side's layers, lowest first: each entry lists the folders and files (without `.ts`) of ts/ in one layer. */
export declare const LAYERS: readonly (readonly string[])[];

/** The relative imports of a source (static, `export … from`, dynamic), each with its specifier and line. */
export declare function importsOf(text: string): { spec: string; line: number }[];

/**
 * Every import into a higher layer (`file:line imports X (layer N) from layer M`), every file in
 * no layer, and one cycle (`import cycle: a.ts:3 → b.ts:7 → a.ts`) per set of files that import
 * each other.
 */
export declare function tsLayerProblems(srcDir: string): string[];
