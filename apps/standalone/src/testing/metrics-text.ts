/** A Prometheus text exposition's samples: `name{labels}` → value (tests only). */
export const parseMetrics = (text: string): Map<string, number> => {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
};

/** The value of the sample named `name` whose labels include every one of `labels` (summed when several match), or undefined. */
export const sample = (metrics: Map<string, number>, name: string, labels: Record<string, string> = {}): number | undefined => {
  let found: number | undefined;
  for (const [key, value] of metrics) {
    const brace = key.indexOf('{');
    const n = brace < 0 ? key : key.slice(0, brace);
    if (n !== name) continue;
    const text = brace < 0 ? '' : key.slice(brace);
    if (Object.entries(labels).every(([k, v]) => text.includes(`${k}="${v}"`))) found = (found ?? 0) + value;
  }
  return found;
};
