// Writes to other streams while a progress bar is drawn: held until a line is whole, then handed
// to the display, which clears its bar, writes them and draws the bar again below them (as
// progress libraries do), so that the user's output and the bar never share a line.
import { StringDecoder } from "node:string_decoder";

/** A stream whose writes a display can take over while its bar is shown (process.stdout, ...). */
export interface CapturableStream {
  write(chunk: string | Uint8Array, ...rest: never[]): boolean;
  readonly isTTY?: boolean;
}

type Write = CapturableStream["write"];
type Callback = (error?: Error | null) => void;

/** Writes taken over from some streams: their own writes, and a way to give them back. */
export interface Interception {
  /** Writes `text` to `stream` as before the interception (the display's own output). */
  raw(stream: { write(text: string): unknown }, text: string): void;
  /**
   * Gives each stream its own `write` back, then writes what it held of a line not yet ended,
   * as it was written.
   */
  restore(): void;
}

/**
 * Takes over the writes of `streams`: the whole lines written to one go to `lines(stream,
 * text)` (`text` ends with a newline); the end of a line not yet written is held until its
 * newline comes or the interception ends.
 */
export function interceptLines(
  streams: readonly CapturableStream[],
  lines: (stream: CapturableStream, text: string) => void,
): Interception {
  const held = new Map<object, { stream: CapturableStream; write: Write; patched: Write; pending: string }>();
  for (const stream of new Set(streams)) {
    const write = stream.write;
    const decoder = new StringDecoder("utf8");
    const entry = { stream, write, patched: write, pending: "" };
    entry.patched = function (this: unknown, chunk: string | Uint8Array, ...rest: unknown[]): boolean {
      const encoding = typeof rest[0] === "string" ? (rest[0] as BufferEncoding) : undefined;
      const callback = rest.find((r): r is Callback => typeof r === "function");
      const text = typeof chunk === "string" ? (encoding && encoding !== "utf8" ? Buffer.from(chunk, encoding).toString() : chunk) : decoder.write(Buffer.from(chunk));
      entry.pending += text;
      const end = entry.pending.lastIndexOf("\n") + 1;
      if (end > 0) {
        const whole = entry.pending.slice(0, end);
        entry.pending = entry.pending.slice(end);
        lines(stream, whole);
      }
      if (callback) process.nextTick(callback);
      return true;
    } as Write;
    stream.write = entry.patched;
    held.set(stream, entry);
  }
  return {
    raw(stream, text) {
      const entry = held.get(stream);
      if (entry) entry.write.call(stream, text);
      else stream.write(text);
    },
    restore() {
      for (const { stream, ...entry } of held.values()) {
        // Another taker that came after keeps its own.
        if (stream.write === entry.patched) stream.write = entry.write;
        if (entry.pending) entry.write.call(stream, entry.pending);
      }
      held.clear();
    },
  };
}
