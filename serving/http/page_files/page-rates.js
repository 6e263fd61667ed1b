// What the live view shows, from two scrapes of /metrics: counters become
// rates (their growth over the seconds between the scrapes), histograms
// become means, distributions and percentiles over the same window. The
// window spans a few scrapes, so one slow second does not make rates jump.
// A counter that went down means the server restarted: the window restarts.

const COUNTER = /(_total|_count|_sum|_bucket)$/;

function valuesOf(byName) {
  const values = new Map();
  for (const series of byName.values()) for (const s of series) values.set(s.key, s.value);
  return values;
}

function wentDown(before, after) {
  for (const [name, series] of after.byName) {
    if (!COUNTER.test(name)) continue;
    for (const s of series) if (s.value < (before.values.get(s.key) ?? 0)) return true;
  }
  return false;
}

export class MetricsWindow {
  constructor(spanMs = 5000) {
    this.spanMs = spanMs;
    this.snaps = [];
  }

  /** Add a scrape (time in ms, parsePrometheus' map). */
  push(time, byName) {
    const snap = { time, byName, values: valuesOf(byName) };
    if (this.snaps.length && wentDown(this.snaps[this.snaps.length - 1], snap)) this.snaps = [];
    this.snaps.push(snap);
    // keep one scrape older than the span, so the window covers it whole
    while (this.snaps.length > 2 && this.snaps[1].time <= time - this.spanMs) this.snaps.shift();
  }

  /** [oldest, newest] of the window, or null before two scrapes. */
  pair() {
    return this.snaps.length < 2 ? null : [this.snaps[0], this.snaps[this.snaps.length - 1]];
  }
}

function group(map, key, make) {
  if (!map.has(key)) map.set(key, make());
  return map.get(key);
}

/** Per group: the histogram's growth as [{le, count}] per bucket (not cumulative), by le. */
function histogramGrowth(old, cur, name, keyOf) {
  const cumulative = new Map();
  for (const s of cur.byName.get(`${name}_bucket`) || []) {
    const le = Number(s.labels.le === "+Inf" ? Infinity : s.labels.le);
    group(cumulative, keyOf(s.labels), () => []).push({ le, cum: s.value - (old.values.get(s.key) ?? 0) });
  }
  const out = new Map();
  for (const [key, buckets] of cumulative) {
    buckets.sort((a, b) => a.le - b.le);
    out.set(
      key,
      buckets.map((b, i) => ({ le: b.le, count: b.cum - (i ? buckets[i - 1].cum : 0) })),
    );
  }
  return out;
}

/** histogram_quantile: the q-th quantile, interpolated inside its bucket; null without data. */
export function quantile(buckets, q) {
  const total = buckets.reduce((n, b) => n + b.count, 0);
  if (!(total > 0)) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < buckets.length; i++) {
    const { le, count } = buckets[i];
    const lower = i ? buckets[i - 1].le : 0;
    if (below + count >= rank && count > 0) {
      if (le === Infinity) return lower;
      return lower + ((le - lower) * (rank - below)) / count;
    }
    below += count;
  }
  return null;
}

/** Batch-size buckets for people: "1", "3–4", "> 128"; up to the largest non-empty bucket. */
export function batchDistribution(buckets) {
  let last = -1;
  buckets.forEach((b, i) => {
    if (b.count > 0) last = i;
  });
  return buckets.slice(0, last + 1).map((b, i) => {
    const lower = i ? buckets[i - 1].le : 0;
    const label = b.le === Infinity ? `> ${lower}` : lower + 1 >= b.le ? `${b.le}` : `${lower + 1}–${b.le}`;
    return { label, count: b.count };
  });
}

function ratio(num, den) {
  return den > 0 ? num / den : null;
}

/** Sum of each series' growth per group: Map(key -> {total, byStatus}). */
function growth(old, cur, name, keyOf) {
  const out = new Map();
  for (const s of cur.byName.get(name) || []) {
    const g = group(out, keyOf(s.labels), () => ({ total: 0, byStatus: {} }));
    const delta = s.value - (old.values.get(s.key) ?? 0);
    g.total += delta;
    if (s.labels.status !== undefined) g.byStatus[s.labels.status] = (g.byStatus[s.labels.status] || 0) + delta;
  }
  return out;
}

function gauges(cur, name, keyOf) {
  const out = new Map();
  for (const s of cur.byName.get(name) || []) out.set(keyOf(s.labels), (out.get(keyOf(s.labels)) || 0) + s.value);
  return out;
}

const pipelineKey = (l) => JSON.stringify([l.pipeline, l.version]);
const opKey = (l) => JSON.stringify([l.pipeline, l.version, l.op]);
const perSecond = (n, seconds) => (seconds > 0 ? n / seconds : null);

function rates(byStatus, seconds) {
  return Object.fromEntries(Object.entries(byStatus).map(([status, n]) => [status, n / seconds]));
}

/** Per pipeline (name, version): requests/s answered 200, failed requests/s by status, in flight, latency. */
export function pipelineStats(old, cur) {
  const seconds = (cur.time - old.time) / 1000;
  const m = "batchline_request";
  const requests = growth(old, cur, `${m}s_total`, pipelineKey);
  const latSum = growth(old, cur, `${m}_seconds_sum`, pipelineKey);
  const latCount = growth(old, cur, `${m}_seconds_count`, pipelineKey);
  const latency = histogramGrowth(old, cur, `${m}_seconds`, pipelineKey);
  const inFlight = gauges(cur, `${m}s_in_flight`, pipelineKey);
  const keys = new Set([...requests.keys(), ...inFlight.keys()]);
  return [...keys].map((key) => {
    const [pipeline, version] = JSON.parse(key);
    const byStatus = { ...(requests.get(key)?.byStatus || {}) };
    const ok = byStatus["200"] || 0;
    delete byStatus["200"];
    const failed = Object.values(byStatus).reduce((a, b) => a + b, 0);
    const mean = ratio(latSum.get(key)?.total || 0, latCount.get(key)?.total || 0);
    const p99 = quantile(latency.get(key) || [], 0.99);
    return {
      pipeline,
      version,
      rps: perSecond(ok, seconds),
      errorsPerS: perSecond(failed, seconds),
      errors: rates(byStatus, seconds),
      inFlight: inFlight.get(key) ?? null,
      meanMs: mean === null ? null : mean * 1000,
      p99Ms: p99 === null ? null : p99 * 1000,
    };
  });
}

/** Per op: items/s, batches/s, batch sizes, queue wait, run time, padding, errors, queue depth. */
export function opStats(old, cur) {
  const seconds = (cur.time - old.time) / 1000;
  const m = "batchline_op";
  const d = (suffix) => growth(old, cur, `${m}_${suffix}`, opKey);
  const [items, batchSum, batchCount, waitSum, waitCount, runSum, runCount, real, padded, errors] = [
    "items_total",
    "batch_size_sum",
    "batch_size_count",
    "queue_wait_seconds_sum",
    "queue_wait_seconds_count",
    "run_seconds_sum",
    "run_seconds_count",
    "real_units_total",
    "padded_units_total",
    "errors_total",
  ].map(d);
  const sizes = histogramGrowth(old, cur, `${m}_batch_size`, opKey);
  const depth = gauges(cur, `${m}_queue_depth`, opKey);
  const total = (map, key) => map.get(key)?.total || 0;
  const keys = new Set([...batchCount.keys(), ...items.keys(), ...depth.keys()]);
  return [...keys].map((key) => {
    const [pipeline, version, op] = JSON.parse(key);
    const wait = ratio(total(waitSum, key), total(waitCount, key));
    const run = ratio(total(runSum, key), total(runCount, key));
    const fill = ratio(total(real, key), total(padded, key));
    return {
      pipeline,
      version,
      op,
      itemsPerS: perSecond(total(items, key), seconds),
      batchesPerS: perSecond(total(batchCount, key), seconds),
      meanBatch: ratio(total(batchSum, key), total(batchCount, key)),
      sizes: batchDistribution(sizes.get(key) || []),
      waitMs: wait === null ? null : wait * 1000,
      runMs: run === null ? null : run * 1000,
      padding: fill === null ? null : 1 - fill,
      errorsPerS: perSecond(total(errors, key), seconds),
      errors: rates(errors.get(key)?.byStatus || {}, seconds),
      depth: depth.get(key) ?? null,
    };
  });
}
