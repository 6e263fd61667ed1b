// Asking for the token: shown when a call gets 401, hidden once a token is
// given. The field is cleared at once; the token stays in the Api object.

import { byId } from "./page-dom.js";

export function setupAuth(api) {
  const form = byId("token-form");
  const input = byId("token-input");
  const message = byId("token-message");
  const forget = byId("token-forget");

  api.addEventListener("unauthorized", (event) => {
    message.textContent = api.token
      ? `The server refused this token (${event.detail}). Enter the right one:`
      : "This server needs a token (auth_token):";
    form.hidden = false;
    forget.hidden = true;
    if (document.activeElement !== input) input.focus();
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = input.value.trim();
    input.value = "";
    if (!token) return;
    if (!/^[\x21-\x7e]+$/.test(token)) {
      message.textContent = "A token is printable ASCII without spaces (it travels in an HTTP header):";
      return;
    }
    form.hidden = true;
    forget.hidden = false;
    api.setToken(token);
  });

  forget.addEventListener("click", () => {
    forget.hidden = true;
    api.setToken(null);
  });
}
