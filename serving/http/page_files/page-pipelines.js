// Which pipeline to try: GET /pipelines lists names and versions; a choice
// is a name (its routed default) or one version of it. GET /{name}/config
// then tells what it takes (an image or a text) and its ops.

import { el } from "./page-dom.js";

/** Path of a pipeline's endpoint, relative to the app: "ocr/predict", "ocr/v2/config". */
export function endpoint(target, what) {
  const name = encodeURIComponent(target.name);
  return target.version === null ? `${name}/${what}` : `${name}/v${target.version}/${what}`;
}

/** The choices of a /pipelines listing: [{name, version (null: routed), label}]. */
export function choices(listing) {
  const byName = new Map();
  for (const p of listing.pipelines || []) {
    if (!byName.has(p.name)) byName.set(p.name, []);
    byName.get(p.name).push(p);
  }
  const out = [];
  for (const [name, versions] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    if (versions.length === 1) {
      out.push({ name, version: null, label: `${name} (v${versions[0].version})` });
      continue;
    }
    const routed = versions.find((p) => p.default);
    out.push({ name, version: null, label: `${name} (routed${routed ? `, default v${routed.version}` : ""})` });
    for (const p of versions) {
      const notes = [p.default && "default", p.shadow && "shadow", p.weight && `weight ${p.weight}`].filter(Boolean);
      const label = `${name} v${p.version}${notes.length ? ` (${notes.join(", ")})` : ""}`;
      out.push({ name, version: p.version, label });
    }
  }
  return out;
}

export class PipelinePicker extends EventTarget {
  constructor(api, select, opsLine) {
    super();
    this.api = api;
    this.select = select;
    this.opsLine = opsLine;
    this.options = [];
    this.current = null; // {name, version, input, ops}
    select.addEventListener("change", () => this.choose(Number(select.value)));
  }

  async load() {
    const listing = await this.api.json("pipelines");
    const previous = this.current;
    this.options = choices(listing);
    this.select.replaceChildren(...this.options.map((c, i) => el("option", { value: i }, c.label)));
    let index = this.options.findIndex((c) => previous && c.name === previous.name && c.version === previous.version);
    if (index < 0) index = 0;
    this.select.value = String(index);
    if (this.options.length) await this.choose(index);
    else this.opsLine.textContent = "this server serves no pipeline";
  }

  async choose(index) {
    const choice = this.options[index];
    const conf = await this.api.json(endpoint(choice, "config"));
    this.current = { name: choice.name, version: choice.version, input: conf.input, ops: conf.ops.map((r) => r.op) };
    this.opsLine.textContent = `${conf.input} → ${this.current.ops.join(" → ")}`;
    this.select.dataset.chosen = String(index); // what the browser tests wait for
    this.dispatchEvent(new Event("change"));
  }
}
