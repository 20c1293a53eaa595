/** The core's layers, lowest first: each entry lists the top-level modules of one layer. */
export declare const LAYERS: readonly (readonly string[])[];

/** Every `crate::` use into a higher layer (`file:line: ...`), and every module in no layer. */
export declare function layerViolations(srcDir: string): string[];
