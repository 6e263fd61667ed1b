// Where an input comes from: an image dropped on the zone, pasted anywhere,
// or chosen with the file field; or a text typed in the form.

import { byId } from "./page-dom.js";

function imageOf(items) {
  for (const item of items || []) {
    const file = item instanceof File ? item : item.kind === "file" ? item.getAsFile() : null;
    if (file && file.type.startsWith("image/")) return file;
  }
  return null;
}

/** Calls onImage(file) or onText(text); onRefused(message) for a drop that holds no image. */
export function setupInputs({ onImage, onText, onRefused }) {
  const zone = byId("image-input");
  const file = byId("file");
  const textForm = byId("text-input");
  const text = byId("text");

  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    const image = imageOf(event.dataTransfer.files);
    if (image) onImage(image);
    else onRefused("that is not an image file");
  });
  zone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") file.click();
  });
  file.addEventListener("change", () => {
    if (file.files.length) onImage(file.files[0]);
    file.value = ""; // choosing the same file again sends it again
  });
  document.addEventListener("paste", (event) => {
    if (zone.hidden) return; // a text pipeline: pasting is typing
    const image = imageOf(event.clipboardData && event.clipboardData.items);
    if (image) {
      event.preventDefault();
      onImage(image);
    }
  });
  textForm.addEventListener("submit", (event) => {
    event.preventDefault();
    if (text.value.trim()) onText(text.value);
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      textForm.requestSubmit();
    }
  });
}

/** Show the input the pipeline takes. */
export function showInputFor(kind) {
  byId("image-input").hidden = kind !== "image";
  byId("text-input").hidden = kind !== "text";
}
