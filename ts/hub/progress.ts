// What a download shows: on a terminal one line per file, redrawn as it grows; elsewhere (logs,
// CI) one line when a file starts.

/** The progress of one file's download. */
export interface FileProgress {
  /** `bytes` of the file are now on disk. */
  update(bytes: number): void;
  done(): void;
}

/** Where a model's downloads are shown. */
export interface DownloadDisplay {
  /** A file of `total` bytes (when known) starts, `start` of them already on disk (a resumed download). */
  file(name: string, total: number | undefined, start: number): FileProgress;
  /** Another process is downloading `name`; this one waits for it. */
  waiting(name: string): void;
}

const REDRAW_MS = 100;
const silent: FileProgress = { update() {}, done() {} };

/** `bytes` in the unit that suits `scale` bytes: `12.3 kB`, `438.0 MB`. */
function amount(bytes: number, scale = bytes): string {
  return scale < 1e6 ? `${(bytes / 1e3).toFixed(1)} kB` : `${(bytes / 1e6).toFixed(1)} MB`;
}

/** One line redrawn with `\r`: `ORG/NAME: file  12.3/438.0 MB  25.1 MB/s`. */
function terminalLine(stream: NodeJS.WritableStream, label: string, total: number | undefined, start: number): FileProgress {
  const began = Date.now();
  let last = 0;
  let bytes = start;
  const draw = () => {
    const seconds = Math.max((Date.now() - began) / 1000, 1e-3);
    const size = total === undefined ? amount(bytes) : `${amount(bytes, total).split(" ")[0]}/${amount(total)}`;
    stream.write(`\r${label}  ${size}  ${amount((bytes - start) / seconds)}/s\x1b[K`);
  };
  draw();
  return {
    update(now) {
      bytes = now;
      if (Date.now() - last < REDRAW_MS) return;
      last = Date.now();
      draw();
    },
    done() {
      draw();
      stream.write("\n");
    },
  };
}

/** The display of model `id`'s downloads on `stream` (nothing when `false`). */
export function downloadDisplay(id: string, stream: NodeJS.WritableStream | false): DownloadDisplay {
  if (stream === false) return { file: () => silent, waiting() {} };
  const isTTY = (stream as { isTTY?: boolean }).isTTY === true;
  return {
    file(name, total, start) {
      const label = `${id}: ${name}`;
      if (isTTY) return terminalLine(stream, label, total, start);
      const size = total === undefined ? "" : ` (${amount(total)}${start > 0 ? `, resuming at ${amount(start, total)}` : ""})`;
      stream.write(`downloading ${label}${size}\n`);
      return silent;
    },
    waiting(name) {
      stream.write(`${id}: ${name}: waiting for another process downloading it\n`);
    },
  };
}
