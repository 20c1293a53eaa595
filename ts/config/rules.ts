import type { z } from "zod";

/**
 * A value rule on one parameter, as the JSON Schema of the classes states it (`xpm-torch
 * schema`). It is declared once, on the parameter's zod type; the core reads the same rules from
 * that schema (crates/core/src/config/rules.rs) and words a broken one exactly as
 * {@link ruleMessage} does, so a bad value gets one message whichever side refuses it.
 */
export type ValueRule =
  | { readonly keyword: "minimum" | "exclusiveMinimum" | "maximum" | "exclusiveMaximum"; readonly limit: number }
  | { readonly keyword: "minLength"; readonly limit: number }
  | { readonly keyword: "itemCount"; readonly limit: number } // minItems = maxItems in the schema
  | { readonly keyword: "enum"; readonly values: readonly unknown[] }
  | { readonly keyword: "pattern"; readonly pattern: string };

const BOUND_WORDS = { minimum: "≥", exclusiveMinimum: ">", maximum: "≤", exclusiveMaximum: "<" } as const;

const shown = (value: unknown): string => JSON.stringify(value) ?? String(value);

/** The one message of a broken rule, `got` being the refused value. */
export function ruleMessage(rule: ValueRule, got: unknown): string {
  switch (rule.keyword) {
    case "minLength":
      return rule.limit === 1 ? "must not be empty" : `must be at least ${rule.limit} characters long, got ${shown(got)}`;
    case "itemCount":
      return `must hold exactly ${rule.limit} values, got ${shown(got)}`;
    case "enum":
      return `must be one of ${rule.values.map(shown).join(", ")}, got ${shown(got)}`;
    case "pattern":
      return `must match /${rule.pattern}/, got ${shown(got)}`;
    default:
      return `must be ${BOUND_WORDS[rule.keyword]} ${shown(rule.limit)}, got ${shown(got)}`;
  }
}

/** The value rule a zod issue reports, or undefined for issues of another kind (types, keys). */
export function ruleOfIssue(issue: z.core.$ZodIssue): ValueRule | undefined {
  switch (issue.code) {
    case "too_small":
    case "too_big": {
      const small = issue.code === "too_small";
      const limit = Number(small ? issue.minimum : issue.maximum);
      if (issue.origin === "string" && small && issue.inclusive !== false) return { keyword: "minLength", limit };
      if (issue.origin === "array" && issue.exact) return { keyword: "itemCount", limit };
      if (issue.origin !== "number" && issue.origin !== "int") return undefined;
      if (small) return { keyword: issue.inclusive === false ? "exclusiveMinimum" : "minimum", limit };
      return { keyword: issue.inclusive === false ? "exclusiveMaximum" : "maximum", limit };
    }
    case "invalid_value":
      return { keyword: "enum", values: issue.values };
    case "invalid_format":
      // zod writes the pattern as a regex literal; JSON Schema (and the core) keep its source.
      return issue.format === "regex" && "pattern" in issue && typeof issue.pattern === "string"
        ? { keyword: "pattern", pattern: issue.pattern.replace(/^\/(.*)\/[a-z]*$/s, "$1") }
        : undefined;
    default:
      return undefined;
  }
}
