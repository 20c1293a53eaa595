// A result's listener outputs as the caller reads them: the validation listeners' bests apart
// from what listeners written in TypeScript returned, so that each has a type of its own.
import { registeredBehaviour } from "../extensions.js";
import type { LearnerConfig, ListenerBests } from "../learn-types.js";

/** `stored` (every listener's output by id) split into validation bests and TypeScript outputs. */
export function listenerResults(
  config: LearnerConfig,
  stored: Readonly<Record<string, unknown>>,
): { listeners: Record<string, ListenerBests>; outputs: Record<string, unknown> } {
  const written = new Set(config.listeners.filter((l) => registeredBehaviour(l) !== undefined).map((l) => l.id));
  const listeners: Record<string, ListenerBests> = {};
  const outputs: Record<string, unknown> = {};
  for (const [id, output] of Object.entries(stored)) {
    if (written.has(id)) outputs[id] = output;
    else listeners[id] = output as ListenerBests;
  }
  return { listeners, outputs };
}
