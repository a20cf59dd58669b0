// The nightcrow web client: one xterm.js terminal per pane, as tabs, on the hub's client
// protocol over a WebSocket (JSON control messages as text, `u32 LE pane id + bytes` as
// binary). Every `hello` means "start over": the terminals are dropped and rebuilt from the
// replay that follows, so a reconnect or a reload never shows output twice.
import { Terminal } from "/assets/xterm.mjs";
import { FitAddon } from "/assets/addon-fit.mjs";
import { chipText, endsHold, hasDeadline, isActive, marker, nowEpoch, truncate } from "/assets/chip.js";
import { CALLS_BACK, Notices, noticeText } from "/assets/notice.js";
import { KeyBar, followSwipes } from "/assets/keys.js";

/** Drawn output bytes are acknowledged in steps of this many (see docs/web.md). */
const ACK_EVERY = 64 * 1024;
/** Reconnect delays: quick at first, then every few seconds. */
const RECONNECT_MS = [250, 500, 1000, 2000, 4000];
/** Where the person's "notifications off" on this browser is kept (the permission itself is
 *  the browser's). */
const MUTED_KEY = "nightcrow.notifications-muted";

const $ = (id) => document.getElementById(id);
const THEME = {
  background: "#0f1218", foreground: "#d7dce4", cursor: "#f2c14e", cursorAccent: "#0f1218",
  selectionBackground: "#34405a", black: "#1b2029", red: "#e5676b", green: "#8fc97a",
  yellow: "#e5c07b", blue: "#6aa4e8", magenta: "#c58ae0", cyan: "#5fc4c9", white: "#d7dce4",
  brightBlack: "#5c6677", brightRed: "#ff8a8e", brightGreen: "#a9e59a", brightYellow: "#f2d49b",
  brightBlue: "#8cbcf5", brightMagenta: "#d9a7f0", brightCyan: "#84dde1", brightWhite: "#ffffff",
};

/** The page's state, also reachable as `window.nightcrow` for tests and the curious. */
const state = {
  repo: null,
  // The repository's folder name, for the page title and notifications.
  repoName: null,
  panes: new Map(),
  order: [],
  active: null,
  keep: null,
  socket: null,
  drawn: 0,
  acked: 0,
  attempts: 0,
  wantNewPane: false,
  notices: new Notices(),
  // Unread call-backs of the previous connection's panes, by id, kept across a `hello`.
  unreadBefore: new Map(),
  // The timer that redraws a counting-down chip, while one is shown.
  tick: null,
  // The timer that clears the notice row.
  noticeTimer: null,
  // The on-screen keys a phone's keyboard lacks (shown on narrow and touch screens).
  keyBar: new KeyBar($("keys"), () => state.panes.get(state.active)?.term),
};
window.nightcrow = state;

class Pane {
  constructor(id, title, alive) {
    this.id = id;
    // The configured title; `title` is what the tab shows: the program's title when it set
    // one (a `title` message), else this.
    this.configured = title || `pane ${id}`;
    this.title = this.configured;
    this.alive = alive;
    // Exited and held for its plugin to relaunch, until a `cancelled` report.
    this.held = false;
    this.ended = null;
    this.recovery = null;
    // Call-backs (`attention`, `needs_attention` notices) the person has not seen yet.
    this.unread = 0;
    this.element = document.createElement("div");
    this.element.className = "pane-view";
    $("terminals").append(this.element);
    this.term = new Terminal({
      theme: THEME,
      fontFamily: '"DejaVu Sans Mono", "Menlo", "Consolas", monospace',
      fontSize: 14,
      scrollback: 10000,
      cursorBlink: true,
      allowProposedApi: false,
    });
    this.fit = new FitAddon();
    this.term.loadAddon(this.fit);
    this.term.open(this.element);
    this.term.onData((data) => this.typeInto(state.keyBar.apply(data)));
    this.term.onBinary((data) => this.typeInto(data));
    followSwipes(this.element, this.term);
    this.tab = document.createElement("button");
    this.tab.className = "tab";
    this.tab.setAttribute("role", "tab");
    this.tab.addEventListener("click", () => select(this.id));
    const close = document.createElement("span");
    close.className = "close";
    close.title = "Close this pane";
    close.textContent = "×";
    close.addEventListener("click", (event) => {
      event.stopPropagation();
      const loses = this.alive
        ? "Its process is ended."
        : this.pendingRelaunch
          ? "Its plugin will not relaunch it, and its last screen goes with it."
          : "Its last screen goes with it.";
      if (confirm(`Close ${this.title}? ${loses}`)) send({ type: "close", pane: this.id });
    });
    this.label = document.createElement("span");
    this.tab.append(this.label, close);
    $("tabs").append(this.tab);
    this.drawTab();
  }

  /** Sizes the terminal to its box and tells the hub when that changed the PTY's size, or
   *  always when `claim`: the hub gives a pane the size of the client used last. */
  fitToBox(claim = false) {
    const size = this.fit.proposeDimensions();
    if (!size || !size.rows || !size.cols) return;
    if (!claim && size.rows === this.term.rows && size.cols === this.term.cols && this.sized) return;
    this.sized = true;
    this.term.resize(size.cols, size.rows);
    if (this.alive) send({ type: "resize", pane: this.id, rows: size.rows, cols: size.cols });
  }

  drawTab() {
    const number = state.order.indexOf(this.id) + 1;
    let text = `${number}:${truncate(this.title, 24)}`;
    if (this.unread > 0) text += "!";
    if (this.recovery) text += marker(this.recovery);
    this.label.textContent = text;
    this.tab.classList.toggle("active", state.active === this.id);
    this.tab.classList.toggle("unread", this.unread > 0);
    this.tab.classList.toggle("exited", !this.alive);
    this.tab.classList.toggle("recovering", !!this.recovery);
    this.tab.setAttribute("aria-selected", String(state.active === this.id));
    this.tab.dataset.pane = String(this.id);
  }

  /** Sends what the person typed to the pane's program. An exited pane has none: the keys
   *  are dropped and the notice says what to do instead, as in the terminal client (the hub
   *  used to answer each with `pane N is not running`). */
  typeInto(data) {
    if (this.alive) {
      send({ type: "input", pane: this.id, data });
      return;
    }
    // An escape sequence is dropped without a word: the terminal sends those by itself too
    // (focus and mouse reports, answers to a program's queries in the replayed screen).
    if (data.startsWith("\x1b")) return;
    say(this.pendingRelaunch
      ? `${label(this)} waits for its plugin; nothing is typed into it`
      : `${label(this)} has ended; + opens a new pane`);
  }

  /** Exited with its plugin about to act on it: a hold and a report of recovery under way
   *  (the terminal client's `pending_relaunch`). */
  get pendingRelaunch() {
    return !this.alive && this.held && this.recovery !== null;
  }

  /** The pane's program has ended: nothing takes keys any more, so no cursor invites them. */
  markExited(how, held) {
    this.alive = false;
    this.held = held;
    this.ended = how;
    this.term.write("\x1b[?25l");
    this.drawTab();
  }

  dispose() {
    this.term.dispose();
    this.element.remove();
    this.tab.remove();
  }
}

function send(message) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) {
    state.socket.send(JSON.stringify(message));
  }
}

/** How long a notice stays, as in the terminal client (`NOTICE_FOR`): what it says about a
 *  pane stays on the pane's tab and chip, and a notice left up would outlive its pane (a
 *  late page was told `2:shell ended` for as long as it stayed open, after 2 was closed). */
const NOTICE_FOR_MS = 6000;

function say(text) {
  $("notice").textContent = text;
  clearTimeout(state.noticeTimer);
  state.noticeTimer = setTimeout(() => {
    $("notice").textContent = "";
  }, NOTICE_FOR_MS);
}

/** A new pane's tab goes last, or where the pane it `replaces` was (a relaunch keeps the
 *  tab number). */
function addPane(id, title, replaces) {
  const pane = new Pane(id, title, true);
  state.panes.set(id, pane);
  const old = state.order.indexOf(replaces);
  if (old >= 0) {
    const previous = state.panes.get(replaces);
    pane.unread = previous.unread;
    previous.tab.replaceWith(pane.tab);
    previous.dispose();
    state.panes.delete(replaces);
    state.order[old] = id;
    if (state.active === replaces) state.active = null;
  } else {
    state.order.push(id);
  }
  state.panes.forEach((other) => other.drawTab());
  return pane;
}

/** `N:title`, as the pane's tab reads. */
function label(pane) {
  return `${state.order.indexOf(pane.id) + 1}:${pane.title}`;
}

function removePane(id) {
  const pane = state.panes.get(id);
  if (!pane) return;
  const index = state.order.indexOf(id);
  pane.dispose();
  state.panes.delete(id);
  state.order.splice(index, 1);
  if (state.active === id) {
    state.active = null;
    const next = state.order[Math.min(index, state.order.length - 1)];
    if (next !== undefined) select(next);
  }
  state.panes.forEach((other) => other.drawTab());
  drawToolbar();
}

function select(id) {
  const pane = state.panes.get(id);
  if (!pane) return;
  state.active = id;
  pane.unread = 0;
  state.panes.forEach((other) => {
    other.element.classList.toggle("active", other.id === id);
    other.drawTab();
  });
  pane.fitToBox();
  pane.term.focus();
  // On a narrow screen the tab bar scrolls: keep the tab in view visible.
  pane.tab.scrollIntoView({ block: "nearest", inline: "nearest" });
  drawToolbar();
}

/** The toolbar shows the pane in view: its title, its recovery chip and the Cancel button. */
function drawToolbar() {
  const pane = state.panes.get(state.active);
  const chip = $("chip");
  const cancel = $("cancel");
  $("pane-title").textContent = pane ? label(pane) : "";
  // Plainly exited unless its plugin is about to act on it (a hold and a report).
  const pending = pane && pane.pendingRelaunch;
  const ended = pane && !pane.alive ? (pending ? `${pane.ended} · ` : `${pane.ended} · × on its tab closes it`) : "";
  if (pane && (pane.recovery || ended)) {
    chip.textContent = ended + (pane.recovery ? chipText(pane.recovery, nowEpoch()) : "");
    chip.dataset.state = pane.recovery ? pane.recovery.state : "exited";
    chip.hidden = false;
  } else {
    chip.hidden = true;
    chip.textContent = "";
    delete chip.dataset.state;
  }
  // The chip counts down: redrawn every second while it shows a deadline, not otherwise.
  const ticking = !!(pane && pane.recovery && hasDeadline(pane.recovery));
  if (ticking && state.tick === null) {
    state.tick = setInterval(drawToolbar, 1000);
  } else if (!ticking && state.tick !== null) {
    clearInterval(state.tick);
    state.tick = null;
  }
  // Only a hold can be cancelled; a running pane's plugin goes on watching it.
  cancel.hidden = !(pane && pane.held);
  const empty = $("empty");
  empty.hidden = state.panes.size > 0;
  empty.textContent = "No panes. Press + to open a shell.";
  drawTitle();
}

/** `(N) nightcrow — repo`: N call-backs not seen yet, in every pane. */
function drawTitle() {
  const name = state.repoName ? `nightcrow — ${state.repoName}` : "nightcrow";
  let unread = 0;
  state.panes.forEach((pane) => { unread += pane.unread; });
  document.title = unread > 0 ? `(${unread}) ${name}` : name;
}

/** Whether the person is looking at `pane`: in view, on a visible page that has the focus. */
function inView(pane) {
  return state.active === pane.id && document.visibilityState === "visible" && document.hasFocus();
}

/** The person came back to the page: the pane in view is seen. */
function seen() {
  const pane = state.panes.get(state.active);
  if (pane && pane.unread > 0 && inView(pane)) {
    pane.unread = 0;
    pane.drawTab();
  }
  drawToolbar();
}

/** A moment worth telling the person: counted as unread unless they are looking at the
 *  pane, and a desktop notification when they allowed them. */
function tell(notice) {
  const pane = state.panes.get(notice.pane);
  if (pane && inView(pane)) return;
  if (pane && CALLS_BACK.has(notice.event)) {
    pane.unread += 1;
    pane.drawTab();
  }
  if (notifyState() !== "on") return;
  try {
    const shown = new Notification(`nightcrow — ${state.repoName || state.repo}`, {
      body: noticeText(notice),
      // One per pane and event: a repeat replaces the one still on screen.
      tag: `${state.repo}#${notice.pane}:${notice.event}`,
    });
    shown.onclick = () => {
      window.focus();
      select(notice.pane);
      shown.close();
    };
  } catch {
    // Some browsers (Chrome on Android) only notify from a service worker: the title
    // count still tells.
  }
}

/** `unavailable` (no API, or not a secure context), `ask`, `on`, `off` (muted here) or
 *  `blocked`. */
function notifyState() {
  if (!("Notification" in window) || !window.isSecureContext) return "unavailable";
  switch (Notification.permission) {
    case "granted":
      return localStorage.getItem(MUTED_KEY) === "yes" ? "off" : "on";
    case "denied":
      return "blocked";
    default:
      return "ask";
  }
}

/** The bar's notifications button: asks for the permission (on a click, never on load),
 *  then turns them on and off for this browser. */
function drawNotify() {
  const button = $("notify");
  const now = notifyState();
  button.hidden = now === "unavailable";
  button.disabled = now === "blocked";
  button.dataset.state = now;
  button.textContent = { ask: "Notify me", on: "Notifications on", off: "Notifications off", blocked: "Notifications blocked" }[now] || "";
  button.title = {
    ask: "Get a desktop notification when a pane needs you",
    on: "Click to stop desktop notifications in this browser",
    off: "Click to get desktop notifications in this browser again",
    blocked: "This browser blocks notifications from this page: allow them in its site settings",
  }[now] || "";
}

function onMessage(message) {
  const notice = state.notices.observe(message);
  switch (message.type) {
    case "hello": {
      // Start over; the pane in view stays in view if it is still there, and what was not
      // seen stays unread.
      state.keep = state.active;
      state.unreadBefore = new Map([...state.panes.values()].map((pane) => [pane.id, pane.unread]));
      state.panes.forEach((pane) => pane.dispose());
      state.panes.clear();
      state.order = [];
      state.active = null;
      say("");
      break;
    }
    case "created": {
      const wasActive = state.active !== null && state.active === message.replaces;
      const pane = addPane(message.pane, message.title || "shell", message.replaces);
      pane.unread += state.unreadBefore.get(message.pane) || 0;
      state.unreadBefore.delete(message.pane);
      pane.term.resize(message.cols, message.rows);
      if (state.wantNewPane || state.active === null || wasActive || state.keep === message.pane) {
        state.wantNewPane = false;
        select(message.pane);
      } else {
        pane.fitToBox();
      }
      break;
    }
    case "resized": {
      const pane = state.panes.get(message.pane);
      if (pane && (pane.term.rows !== message.rows || pane.term.cols !== message.cols)) {
        pane.term.resize(message.cols, message.rows);
      }
      break;
    }
    case "exited": {
      // The pane stays, with its screen, until it is closed (`closed` follows then).
      const pane = state.panes.get(message.pane);
      if (!pane) break;
      const how = message.code === null || message.code === undefined ? "ended" : `exited with code ${message.code}`;
      pane.markExited(how, !!message.held);
      say(`${label(pane)} ${how}`);
      break;
    }
    case "title": {
      const pane = state.panes.get(message.pane);
      if (!pane) break;
      pane.title = message.title || pane.configured;
      pane.drawTab();
      break;
    }
    case "closed": {
      if (state.panes.has(message.pane)) removePane(message.pane);
      break;
    }
    case "recovery": {
      const pane = state.panes.get(message.pane);
      if (!pane) break;
      if (isActive(message)) {
        pane.recovery = message;
      } else {
        const wasShown = pane.recovery !== null;
        pane.recovery = null;
        if (endsHold(message) && pane.held) {
          pane.held = false;
          say(`${label(pane)}: recovery ended; it stays exited (× on its tab closes it)`);
        } else if (message.detail) {
          say(`${label(pane)}: ${message.detail}`);
        } else if (wasShown) {
          say(`${label(pane)}: recovery over`);
        }
      }
      pane.drawTab();
      break;
    }
    case "attention": {
      const pane = state.panes.get(message.pane);
      if (!pane) break;
      say(`${label(pane)} wants you back`);
      break;
    }
    case "plugin":
      if (message.state !== "running") {
        say(`plugin ${message.name} ${message.state.replace("_", " ")}${message.detail ? ": " + message.detail : ""}`);
      }
      break;
    case "error":
      say(`hub: ${message.message}`);
      break;
  }
  if (notice) tell(notice);
  drawToolbar();
}

function onOutput(buffer) {
  const view = new DataView(buffer);
  const id = view.getUint32(0, true);
  const bytes = new Uint8Array(buffer, 4);
  const done = () => {
    state.drawn += bytes.length;
    if (state.drawn - state.acked >= ACK_EVERY) {
      state.acked = state.drawn;
      send({ type: "ack", bytes: state.drawn });
    }
  };
  const pane = state.panes.get(id);
  if (pane) pane.term.write(bytes, done);
  else done();
}

function connect() {
  const link = $("link");
  const url = new URL("/ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  url.searchParams.set("repo", state.repo);
  const socket = new WebSocket(url);
  socket.binaryType = "arraybuffer";
  state.socket = socket;
  state.drawn = 0;
  state.acked = 0;
  socket.onopen = () => {
    state.attempts = 0;
    link.textContent = "connected";
    link.dataset.state = "connected";
  };
  socket.onmessage = (event) => {
    if (typeof event.data === "string") onMessage(JSON.parse(event.data));
    else onOutput(event.data);
  };
  socket.onclose = () => {
    if (state.socket !== socket) return;
    const delay = RECONNECT_MS[Math.min(state.attempts, RECONNECT_MS.length - 1)];
    state.attempts += 1;
    link.textContent = "reconnecting…";
    link.dataset.state = "reconnecting";
    setTimeout(start, delay);
  };
}

/** Finds the repository to show (`?repo=`, else the first open one) and connects. */
async function start() {
  let repos;
  try {
    const answer = await fetch("/api/repos", { cache: "no-store" });
    if (answer.status === 401) {
      // The login brings the person back to the repository this page asked for.
      location.href = "/login" + location.search;
      return;
    }
    repos = await answer.json();
  } catch {
    $("link").textContent = "daemon unreachable; retrying…";
    setTimeout(start, 2000);
    return;
  }
  const wanted = new URLSearchParams(location.search).get("repo");
  const chosen = wanted === null ? repos[0] : repos.find((entry) => entry.repo === wanted);
  if (wanted !== null && !chosen) {
    // Never show another repository than the one asked for.
    const empty = $("empty");
    empty.hidden = false;
    empty.textContent = `No open repository is ${wanted}. Open it with \`nightcrow web ${wanted}\`${repos.length ? ", or pick one above" : ""}.`;
    const picker = $("repo");
    picker.replaceChildren(new Option("choose a repository", ""), ...repos.map((entry) => new Option(entry.name || entry.repo, entry.repo)));
    picker.hidden = repos.length === 0;
    return;
  }
  const picker = $("repo");
  picker.replaceChildren(...repos.map((entry) => new Option(entry.name || entry.repo, entry.repo)));
  picker.hidden = repos.length < 2;
  $("repo-name").textContent = repos.length === 1 ? repos[0].name || repos[0].repo : "";
  if (!chosen) {
    const empty = $("empty");
    empty.hidden = false;
    empty.textContent = "No repository is open. Run `nightcrow web DIR` or `nightcrow open DIR`.";
    setTimeout(start, 3000);
    return;
  }
  picker.value = chosen.repo;
  state.repo = chosen.repo;
  state.repoName = chosen.name || chosen.repo;
  connect();
}

$("repo").addEventListener("change", (event) => {
  const url = new URL(location.href);
  url.searchParams.set("repo", event.target.value);
  location.href = url.toString();
});
$("new-pane").addEventListener("click", () => {
  const pane = state.panes.get(state.active);
  state.wantNewPane = true;
  const size = pane ? { rows: pane.term.rows, cols: pane.term.cols } : {};
  send({ type: "create", ...size });
});
$("claim-size").addEventListener("click", () => {
  state.panes.forEach((pane) => pane.fitToBox(true));
  say("The panes take this window's size.");
});
$("cancel").addEventListener("click", () => {
  const pane = state.panes.get(state.active);
  if (pane && confirm(`Cancel the recovery of ${label(pane)}? Its plugin will not relaunch it; it stays exited.`)) {
    send({ type: "cancel_recovery", pane: pane.id });
  }
});
$("notify").addEventListener("click", async () => {
  const now = notifyState();
  if (now === "ask") {
    await Notification.requestPermission();
  } else if (now === "on" || now === "off") {
    localStorage.setItem(MUTED_KEY, now === "on" ? "yes" : "no");
  }
  drawNotify();
});
// A decision changed in the browser's own settings shows at once.
if (navigator.permissions) {
  navigator.permissions.query({ name: "notifications" }).then((status) => {
    status.onchange = drawNotify;
  }, () => {});
}
document.addEventListener("visibilitychange", seen);
window.addEventListener("focus", seen);
drawNotify();
new ResizeObserver(() => state.panes.forEach((pane) => pane.fitToBox())).observe($("terminals"));
start();
