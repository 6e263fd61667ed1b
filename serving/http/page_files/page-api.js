// Calls to the server. The token lives in this object only (memory: gone
// with the tab, never in storage, a cookie or a URL) and goes out as the
// header the API expects. A 401 is announced ("unauthorized") so the page
// can ask for a token, and needsToken holds until one is given.

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** The message of a failed answer: native {"error": {...}}, Paddle {"err_msg"}, or plain text. */
function messageOf(body, resp) {
  if (body && typeof body === "object") {
    if (body.error && typeof body.error.message === "string") return body.error.message;
    if (typeof body.err_msg === "string" && body.err_msg) return body.err_msg;
  }
  if (typeof body === "string" && body.trim()) return body.trim().slice(0, 300);
  return resp.statusText || "request failed";
}

async function bodyOf(resp) {
  const text = await resp.text();
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export class Api extends EventTarget {
  constructor(base) {
    super();
    this.base = base; // the directory the page's files are served from: the app's mount point
    this.token = null;
    this.needsToken = false;
  }

  setToken(token) {
    this.token = token || null;
    this.needsToken = false;
    this.dispatchEvent(new Event("token"));
  }

  /** fetch() a path relative to the app, with the token; throws ApiError on 401 (announced first). */
  async fetch(path, init = {}) {
    const headers = new Headers(init.headers || {});
    if (this.token) headers.set("Authorization", `Bearer ${this.token}`);
    const resp = await fetch(new URL(path, this.base), { ...init, headers, cache: "no-store", redirect: "error" });
    if (resp.status === 401) {
      const message = messageOf(await bodyOf(resp), resp);
      this.needsToken = true;
      this.dispatchEvent(new CustomEvent("unauthorized", { detail: message }));
      throw new ApiError(401, message);
    }
    return resp;
  }

  /** The JSON answer of a successful call; ApiError with the server's message otherwise. */
  async json(path, init = {}) {
    const resp = await this.fetch(path, init);
    const body = await bodyOf(resp);
    if (!resp.ok) throw new ApiError(resp.status, messageOf(body, resp));
    return body;
  }

  async text(path) {
    const resp = await this.fetch(path);
    const body = await resp.text();
    if (!resp.ok) throw new ApiError(resp.status, messageOf(body, resp));
    return body;
  }
}
