// The per-op timeline the native endpoint returns with ?timing=1: per op the
// longest queue wait of this request's items, the run time of the batches they
// ran in (batches shared with other requests count whole) and those batches'
// sizes; and the request's total time inside the engine.

import { el, fmt, table } from "./page-dom.js";

function bar(total, wait, run) {
  const part = (cls, ms) => {
    const span = el("span", { class: cls });
    span.style.width = `${total > 0 ? Math.min(100, (100 * ms) / total) : 0}%`;
    return span;
  };
  return el("div", { class: "timebar" }, part("wait", wait), part("run", run));
}

export function renderTimings(container, timing) {
  if (!timing) {
    container.replaceChildren(el("p", { class: "muted" }, "no timeline in the answer"));
    return;
  }
  const rows = Object.entries(timing.ops || {}).map(([op, t]) =>
    el(
      "tr",
      { "data-op": op },
      el("th", { scope: "row" }, op),
      el("td", { "data-stat": "wait-ms" }, fmt(t.queue_wait_ms, 1)),
      el("td", { "data-stat": "run-ms" }, fmt(t.run_ms, 1)),
      el("td", {}, (t.batch_sizes || []).join(", ") || "-"),
      el("td", { class: "barcell" }, bar(timing.total_ms, t.queue_wait_ms, t.run_ms)),
    ),
  );
  const head = [
    ["op", ""],
    ["queue wait ms", "the longest wait of this request's items in the op's batcher"],
    ["run ms", "run time of the batches its items ran in, added up (batches on parallel instances overlap)"],
    ["batch sizes", "the size of each of those batches"],
    ["", ""],
  ];
  const total = el(
    "tr",
    {},
    el("th", { scope: "row" }, "total"),
    el("td", { colspan: 4, "data-stat": "total-ms" }, `${fmt(timing.total_ms, 1)} ms in the engine`),
  );
  container.replaceChildren(
    table({ class: "timings" }, head, rows, [total]),
    el(
      "p",
      { class: "legend muted" },
      el("span", { class: "key wait" }),
      " queue wait ",
      el("span", { class: "key run" }),
      " run",
    ),
  );
}
