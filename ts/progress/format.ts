/** `75`, `1:15`, `1:02:03`: a duration in seconds as a clock reads it. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "--:--";
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const two = (n: number) => String(n).padStart(2, "0");
  return h > 0 ? `${h}:${two(m)}:${two(s % 60)}` : `${m}:${two(s % 60)}`;
}

/** A rate with about three significant digits: `1520`, `35.2`, `0.412`. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return "-";
  if (perSecond >= 100) return perSecond.toFixed(0);
  if (perSecond >= 10) return perSecond.toFixed(1);
  return perSecond.toFixed(perSecond >= 1 ? 2 : 3);
}

/** A loss with four significant digits, or `-` before there is one. */
export function formatLoss(loss: number | undefined): string {
  return loss === undefined || !Number.isFinite(loss) ? "-" : loss.toPrecision(4);
}
