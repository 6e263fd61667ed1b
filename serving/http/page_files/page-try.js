// Sending one input to the chosen pipeline's native endpoint, with the
// per-op timeline asked for (?timing=1), and showing what came back.

import { byId } from "./page-dom.js";
import { endpoint } from "./page-pipelines.js";
import { showResult } from "./page-result.js";

export class TryPanel {
  constructor(api, picker) {
    this.api = api;
    this.picker = picker;
    this.status = byId("try-status");
    this.imageUrl = null;
    this.busy = false;
  }

  say(text, kind = "") {
    this.status.textContent = text;
    this.status.dataset.kind = kind;
  }

  sendImage(file) {
    if (this.imageUrl) URL.revokeObjectURL(this.imageUrl);
    this.imageUrl = URL.createObjectURL(file);
    const type = file.type.startsWith("image/") ? file.type : "image/octet-stream";
    return this.send({ method: "POST", headers: { "Content-Type": type }, body: file }, { imageUrl: this.imageUrl });
  }

  sendText(text) {
    const body = JSON.stringify({ inputs: [{ text }], timing: true });
    return this.send({ method: "POST", headers: { "Content-Type": "application/json" }, body }, { text });
  }

  async send(init, input) {
    const target = this.picker.current;
    if (!target) return;
    if (this.busy) {
      this.say("still waiting for the previous answer", "error");
      return;
    }
    this.busy = true;
    this.say(`sending to ${target.name} …`);
    const started = performance.now();
    try {
      const answer = await this.api.json(`${endpoint(target, "predict")}?timing=1`, init);
      const ms = performance.now() - started;
      const server = answer.timing && answer.timing[0] ? ` (server: ${answer.timing[0].total_ms.toFixed(1)} ms)` : "";
      this.say(`answered in ${ms.toFixed(0)} ms${server}`, "ok");
      showResult(answer, input);
    } catch (err) {
      this.say(err.status ? `HTTP ${err.status}: ${err.message}` : `no answer: ${err.message}`, "error");
    } finally {
      this.busy = false;
    }
  }
}
