// Waits in tests: each has a deadline and says what it waited for when it fails.

/** Resolves once `ready()` holds; rejects after `timeoutMs` naming `what`. */
export async function waitFor(ready: () => boolean, what: string, timeoutMs = 10_000, everyMs = 2): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
    await new Promise((wake) => setTimeout(wake, everyMs));
  }
}
