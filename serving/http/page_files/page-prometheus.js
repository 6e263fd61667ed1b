// The Prometheus text exposition format, as /metrics serves it: one sample a
// line, `name{label="value",...} value [timestamp]`; comments skipped.

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?/y;

function unescape(value) {
  return value.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
}

function parseLabels(text, line) {
  const labels = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const start = LABEL.lastIndex;
    const m = LABEL.exec(text);
    if (!m) {
      if (text.slice(start).trim() === "") break;
      throw new Error(`bad labels on line ${line}`);
    }
    labels[m[1]] = unescape(m[2]);
  }
  return labels;
}

function parseValue(text) {
  const low = text.toLowerCase();
  if (low === "+inf" || low === "inf") return Infinity;
  if (low === "-inf") return -Infinity;
  if (low === "nan") return NaN;
  const value = Number(text);
  if (Number.isNaN(value)) throw new Error(`not a number: ${text}`);
  return value;
}

/** A series' identity: its name and its labels in sorted order. */
export function seriesKey(name, labels) {
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `${name}{${pairs.join(",")}}`;
}

/** Parse /metrics text into Map(name -> [{labels, key, value}]), in the order served. */
export function parsePrometheus(text) {
  const byName = new Map();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith("#")) return;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`line ${i + 1} is not a Prometheus sample`);
    const [, name, labelText, value] = m;
    const labels = labelText ? parseLabels(labelText, i + 1) : {};
    if (!byName.has(name)) byName.set(name, []);
    byName.get(name).push({ labels, key: seriesKey(name, labels), value: parseValue(value) });
  });
  return byName;
}
