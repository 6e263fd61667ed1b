// One answer on the page: the image with its boxes, the lines read (text,
// score, and the field label where the pipeline adds one), a text
// pipeline's label, the per-op timings and the raw JSON.

import { colorOf, drawBoxes, linkHover } from "./page-boxes.js";
import { byId, el, fmt } from "./page-dom.js";
import { renderTimings } from "./page-timings.js";

/** The lines of a result, or null: OCR's list of {text, score, box}, or one {text, score}. */
export function asLines(result) {
  if (Array.isArray(result) && result.every((r) => r && typeof r === "object" && !Array.isArray(r))) return result;
  if (result && typeof result === "object" && typeof result.text === "string") return [result];
  return null;
}

function lineList(lines) {
  if (!lines.length) return el("p", { class: "muted", "data-role": "no-lines" }, "no text found");
  return el(
    "ol",
    { class: "lines" },
    lines.map((line, i) => {
      const number = el("span", { class: "n" }, String(i + 1));
      number.style.background = colorOf(i);
      const item = el(
        "li",
        {},
        number,
        el("span", { class: "text", "data-role": "line-text" }, String(line.text ?? "")),
        el("span", { class: "score", title: "recognition score" }, fmt(line.score, 3)),
        line.label !== undefined && line.label !== null
          ? el(
              "span",
              { class: "label", "data-role": "line-label", title: `label score ${fmt(line.label_score, 3)}` },
              String(line.label),
            )
          : null,
      );
      linkHover(item, i);
      return item;
    }),
  );
}

function labelView(result) {
  const probs = Object.entries(result.probs || {}).sort(([, a], [, b]) => b - a);
  return el(
    "div",
    { class: "label-view" },
    el(
      "p",
      {},
      "label ",
      el("strong", { "data-role": "label" }, String(result.label)),
      ` · score ${fmt(result.score, 3)}`,
    ),
    el(
      "table",
      { class: "probs" },
      el(
        "tbody",
        {},
        probs.map(([label, p]) => {
          const fill = el("span", { class: "fill" });
          fill.style.width = `${Math.max(0, Math.min(100, p * 100))}%`;
          return el(
            "tr",
            {},
            el("th", { scope: "row" }, label),
            el("td", {}, el("div", { class: "prob" }, fill)),
            el("td", {}, fmt(p, 3)),
          );
        }),
      ),
    ),
  );
}

function showFigure(imageUrl, lines) {
  const figure = byId("figure");
  const img = byId("figure-img");
  const overlay = byId("boxes");
  figure.hidden = !imageUrl;
  overlay.replaceChildren();
  if (!imageUrl) return;
  const draw = () => drawBoxes(overlay, lines || [], img.naturalWidth, img.naturalHeight);
  img.onload = draw; // a property, not an attribute: no inline script for the CSP to refuse
  if (img.src === imageUrl && img.complete) draw();
  else img.src = imageUrl;
}

export function showResult(answer, { imageUrl = null } = {}) {
  const result = Array.isArray(answer.results) ? answer.results[0] : undefined;
  const lines = asLines(result);
  byId("result").hidden = false;
  showFigure(imageUrl, lines);
  let main;
  if (lines) main = lineList(lines);
  else if (result && typeof result === "object" && "label" in result) main = labelView(result);
  else main = el("p", { class: "muted" }, "the answer is in the raw JSON below");
  byId("answer-main").replaceChildren(main);
  renderTimings(byId("timings"), answer.timing && answer.timing[0]);
  byId("raw-json").textContent = JSON.stringify(answer, null, 2);
  byId("raw").open = !lines && !(result && typeof result === "object" && "label" in result);
}
