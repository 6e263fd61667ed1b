// The live view: /metrics polled every second or few, shown as rates over a
// short window. Per pipeline: requests/s, failures, in flight, latency; per op:
// items and batches per second, the batch-size distribution, queue wait, run
// time, padding and errors. It pauses while the server wants a token.

import { byId, el, fmt, svg, table } from "./page-dom.js";
import { parsePrometheus } from "./page-prometheus.js";
import { MetricsWindow, opStats, pipelineStats } from "./page-rates.js";

const WINDOW_MS = 5000;
const HISTORY = 60; // requests/s points in a pipeline's sparkline

function errorText(errors) {
  const parts = Object.entries(errors)
    .filter(([, rate]) => rate > 0)
    .map(([status, rate]) => `${status}: ${fmt(rate, 1)}/s`);
  return parts.length ? parts.join(", ") : "none";
}

function stat(name, value, text, title) {
  return el("td", { "data-stat": name, "data-value": value ?? "", title }, text);
}

function sparkline(points) {
  const max = Math.max(1, ...points);
  const step = 100 / (HISTORY - 1);
  const offset = (HISTORY - points.length) * step;
  const coords = points.map((v, i) => `${(offset + i * step).toFixed(1)},${(24 - (v / max) * 22).toFixed(1)}`);
  return svg(
    "svg",
    { class: "spark", viewBox: "0 0 100 25", preserveAspectRatio: "none" },
    svg("polyline", { points: coords.join(" ") }),
  );
}

function sizeBars(sizes) {
  const most = Math.max(1, ...sizes.map((s) => s.count));
  return el(
    "div",
    { class: "sizes" },
    sizes.map((s) => {
      const bar = el("span", { class: "bar" });
      bar.style.height = `${Math.max(1, (22 * s.count) / most)}px`; // 22 px: the tallest bar
      const title = `batch size ${s.label}: ${Math.round(s.count)} batches`;
      return el("span", { class: "size", title }, bar, el("small", {}, s.label));
    }),
  );
}

const pipelineName = (s) => (s.pipeline === "shared" ? "shared" : `${s.pipeline} v${s.version}`);

export class LivePanel {
  constructor(api) {
    this.api = api;
    this.window = new MetricsWindow(WINDOW_MS);
    this.history = new Map();
    this.paused = false;
    this.timer = null;
    this.interval = byId("live-interval");
    this.status = byId("live-status");
    this.pipelines = byId("live-pipelines");
    this.ops = byId("live-ops");
    const pause = byId("live-pause");
    pause.addEventListener("click", () => {
      this.paused = !this.paused;
      pause.textContent = this.paused ? "Resume" : "Pause";
      this.schedule(0);
    });
    this.interval.addEventListener("change", () => this.schedule(0));
    api.addEventListener("token", () => this.schedule(0));
  }

  start() {
    this.schedule(0);
  }

  schedule(delay = Number(this.interval.value)) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.tick(), delay);
  }

  async tick() {
    if (this.paused) {
      this.status.textContent = "paused";
      return;
    }
    if (this.api.needsToken) {
      this.status.textContent = "waiting for a token";
      return; // resumed by the "token" event
    }
    if (!document.hidden) await this.scrape();
    this.schedule();
  }

  async scrape() {
    try {
      const text = await this.api.text("metrics");
      this.window.push(Date.now(), parsePrometheus(text));
    } catch (err) {
      this.status.textContent = err.status === 401 ? "waiting for a token" : `cannot read /metrics: ${err.message}`;
      return;
    }
    const pair = this.window.pair();
    if (!pair) {
      this.status.textContent = "reading /metrics …";
      return;
    }
    const [old, cur] = pair;
    this.render(pipelineStats(old, cur), opStats(old, cur));
    const span = ((cur.time - old.time) / 1000).toFixed(1);
    this.status.textContent = `rates over the last ${span} s · ${new Date(cur.time).toLocaleTimeString()}`;
  }

  render(pipelines, ops) {
    this.pipelines.replaceChildren(el("div", { class: "scroll" }, this.pipelineTable(pipelines)));
    this.ops.replaceChildren(el("div", { class: "scroll" }, this.opTable(ops)));
  }

  pipelineTable(rows) {
    const head = [
      ["pipeline", ""],
      ["requests/s", "requests answered 200 per second"],
      ["last minute", "requests/s at each scrape"],
      ["failed/s", "requests answered with an error per second (hover a value for its statuses)"],
      ["in flight", "admitted, unfinished requests now"],
      ["mean ms", "mean latency inside the engine"],
      ["p99 ms", "99th percentile latency, estimated from the histogram buckets"],
    ];
    const body = rows.map((s) => {
      const key = `${s.pipeline}\u0000${s.version}`;
      const points = [...(this.history.get(key) || []), s.rps || 0].slice(-HISTORY);
      this.history.set(key, points);
      return el(
        "tr",
        { "data-pipeline": s.pipeline, "data-version": s.version },
        el("th", { scope: "row" }, pipelineName(s)),
        stat("rps", s.rps, fmt(s.rps, 1)),
        el("td", {}, sparkline(points)),
        stat("errors", s.errorsPerS, fmt(s.errorsPerS, 1), errorText(s.errors)),
        stat("in-flight", s.inFlight, fmt(s.inFlight, 0)),
        stat("mean-ms", s.meanMs, fmt(s.meanMs, 1)),
        stat("p99-ms", s.p99Ms, fmt(s.p99Ms, 0)),
      );
    });
    return table({ class: "live" }, head, body);
  }

  opTable(rows) {
    const head = [
      ["op", ""],
      ["items/s", "items run through the op's predictor per second (det: images, rec: text lines)"],
      ["batches/s", "batches handed to a predictor instance per second"],
      ["mean batch", "items per batch"],
      ["batch sizes", "how many batches of each size ran in the window"],
      ["wait ms", "mean time an item waited in the op's batcher"],
      ["queued", "items waiting in the batcher now"],
      ["run ms", "mean predictor time per batch"],
      ["padding", "share of the input units that were padding (1 - real/padded)"],
      ["errors/s", "failed items per second"],
    ];
    const body = rows.map((s) =>
      el(
        "tr",
        { "data-pipeline": s.pipeline, "data-version": s.version, "data-op": s.op },
        el("th", { scope: "row" }, `${s.op} `, el("small", { class: "muted" }, pipelineName(s))),
        stat("items", s.itemsPerS, fmt(s.itemsPerS, 1)),
        stat("batches", s.batchesPerS, fmt(s.batchesPerS, 1)),
        stat("mean-batch", s.meanBatch, fmt(s.meanBatch, 2)),
        el("td", { "data-stat": "sizes" }, sizeBars(s.sizes)),
        stat("wait-ms", s.waitMs, fmt(s.waitMs, 1)),
        stat("depth", s.depth, fmt(s.depth, 0)),
        stat("run-ms", s.runMs, fmt(s.runMs, 1)),
        stat("padding", s.padding, s.padding === null ? "-" : `${fmt(s.padding * 100, 0)}%`),
        stat("op-errors", s.errorsPerS, fmt(s.errorsPerS, 1), errorText(s.errors)),
      ),
    );
    return table({ class: "live" }, head, body);
  }
}
