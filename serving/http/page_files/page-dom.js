// Every node the page builds is made here. Text only ever goes in as text
// (text nodes, textContent): nothing a model reads or a server says is parsed
// as HTML, so a line reading "<script>" stays those characters.

const SVG_NS = "http://www.w3.org/2000/svg";

function setAttributes(node, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (/^on/i.test(name)) throw new Error(`no event handler attributes: ${name}`);
    node.setAttribute(name, value === true ? "" : String(value));
  }
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: attributes, then children (nodes, or strings that become text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  setAttributes(node, attrs);
  append(node, children);
  return node;
}

/** An SVG element, the same way. */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  setAttributes(node, attrs);
  append(node, children);
  return node;
}

export function byId(id) {
  return document.getElementById(id);
}

/** A number for people: "-" when there is none, else `digits` decimals. */
export function fmt(value, digits = 1) {
  return value === null || value === undefined || !Number.isFinite(value) ? "-" : value.toFixed(digits);
}

/** A table: `head` as [label, tooltip] pairs, then body rows (and optional foot rows), all nodes. */
export function table(attrs, head, rows, foot = []) {
  return el(
    "table",
    attrs,
    el("thead", {}, el("tr", {}, head.map(([label, title]) => el("th", { title: title || undefined }, label)))),
    el("tbody", {}, rows),
    foot.length ? el("tfoot", {}, foot) : null,
  );
}
