// Boxes over the image: an SVG laid on the <img>, its viewBox the image's own
// pixels, so the boxes (in original-image pixels, as the API returns them)
// scale with the picture. Hovering a box or its line highlights both.

import { svg } from "./page-dom.js";

export function colorOf(index) {
  return `hsl(${(index * 47) % 360} 75% 42%)`;
}

function highlight(index, on) {
  for (const node of document.querySelectorAll(`[data-line="${index}"]`)) node.classList.toggle("hot", on);
}

/** Link hovering of every node marked data-line="i" (a box, a line of the list). */
export function linkHover(node, index) {
  node.setAttribute("data-line", index);
  node.addEventListener("mouseenter", () => highlight(index, true));
  node.addEventListener("mouseleave", () => highlight(index, false));
}

/** Draw each line's box on `overlay` for an image of width x height pixels. */
export function drawBoxes(overlay, lines, width, height) {
  overlay.setAttribute("viewBox", `0 0 ${width} ${height}`);
  overlay.setAttribute("preserveAspectRatio", "none");
  const size = Math.max(10, Math.round(Math.max(width, height) / 60));
  const shapes = [];
  lines.forEach((line, i) => {
    const box = Array.isArray(line.box) ? line.box.filter((p) => Array.isArray(p) && p.length >= 2) : [];
    if (box.length < 3) return;
    const points = box.map(([x, y]) => `${Number(x)},${Number(y)}`).join(" ");
    const group = svg(
      "g",
      { class: "box", stroke: colorOf(i), fill: colorOf(i) },
      svg("title", {}, String(line.text ?? "")),
      svg("polygon", { points, "fill-opacity": 0.12, "stroke-width": 2, "vector-effect": "non-scaling-stroke" }),
      svg("text", { x: Number(box[0][0]), y: Number(box[0][1]) - 2, "font-size": size }, String(i + 1)),
    );
    linkHover(group, i);
    shapes.push(group);
  });
  overlay.replaceChildren(...shapes);
}
