// The page's entry point: one Api (the token lives there), the token form,
// the pipeline picker and try panel, the live view and the readiness badge.

import { Api } from "./page-api.js";
import { setupAuth } from "./page-auth.js";
import { byId } from "./page-dom.js";
import { setupInputs, showInputFor } from "./page-input.js";
import { LivePanel } from "./page-live.js";
import { PipelinePicker } from "./page-pipelines.js";
import { TryPanel } from "./page-try.js";

const READY_EVERY_MS = 5000;

// The directory this file is served from is the app's root, under any mount point.
const api = new Api(new URL(".", import.meta.url));
setupAuth(api);

const picker = new PipelinePicker(api, byId("pipeline"), byId("pipeline-ops"));
const panel = new TryPanel(api, picker);
picker.addEventListener("change", () => showInputFor(picker.current.input));
setupInputs({
  onImage: (file) => panel.sendImage(file),
  onText: (text) => panel.sendText(text),
  onRefused: (message) => panel.say(message, "error"),
});

async function loadPipelines() {
  try {
    await picker.load();
  } catch (err) {
    byId("pipeline-ops").textContent = err.status === 401 ? "needs a token" : `cannot list pipelines: ${err.message}`;
  }
}

let generation = null;

async function readiness() {
  const badge = byId("server-state");
  try {
    const body = await api.json("health/ready");
    badge.textContent = `ready · generation ${body.generation}`;
    badge.dataset.state = "ready";
    if (generation !== null && body.generation !== generation) loadPipelines(); // reloaded: the list may differ
    generation = body.generation;
  } catch (err) {
    badge.textContent = err.status ? "not ready" : "no answer";
    badge.dataset.state = "down";
  }
  setTimeout(readiness, READY_EVERY_MS);
}

api.addEventListener("token", loadPipelines);
loadPipelines();
readiness();
new LivePanel(api).start();
document.body.dataset.loaded = "true"; // the modules ran (the browser tests wait for it)
