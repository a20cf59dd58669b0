// On a phone: the keys its keyboard lacks (a bar of buttons) and scrolling by touch. What
// each key sends and what a swipe does are decided in docs/web.md, "On a phone".

/** The keys that send one fixed sequence, whatever the terminal's modes. */
const PLAIN = { Escape: "\x1b", Tab: "\t", Enter: "\r" };
/** The final byte of each arrow's sequence. */
const ARROW = { ArrowUp: "A", ArrowDown: "B", ArrowRight: "C", ArrowLeft: "D" };

/** What Ctrl held with `char` sends, as xterm does: letters and `@[\]^_` (and their lower
 *  row, `` `{|}~ ``) their control code, Space NUL, `?` DEL; anything else itself. */
export function ctrlChord(char) {
  const code = char.codePointAt(0);
  if (char === " ") return "\x00";
  if (char === "?") return "\x7f";
  if (code >= 0x40 && code <= 0x7e) return String.fromCharCode(code & 0x1f);
  return char;
}

/** What an arrow key sends: `ESC [ A` normally, `ESC O A` while the program asked for
 *  application cursor keys (DECCKM), and `ESC [ 1 ; 5 A` with Ctrl, as xterm does. */
export function arrowSequence(key, applicationCursor, ctrl) {
  const final = ARROW[key];
  if (ctrl) return `\x1b[1;5${final}`;
  return (applicationCursor ? "\x1bO" : "\x1b[") + final;
}

/** The bar of keys under the terminals. Its buttons never take the focus (the phone's
 *  keyboard stays open) and type into the terminal in view through its own input path, so
 *  what they send goes where typing goes. Ctrl is sticky: it turns the next key, from the
 *  bar or the keyboard, into its Ctrl chord. */
export class KeyBar {
  constructor(element, terminalInView) {
    this.element = element;
    this.terminalInView = terminalInView;
    this.ctrl = false;
    this.ctrlButton = element.querySelector('[data-key="Control"]');
    for (const button of element.querySelectorAll("button")) {
      // A button that took the focus would close the phone's keyboard.
      for (const kind of ["pointerdown", "mousedown"]) {
        button.addEventListener(kind, (event) => event.preventDefault());
      }
      button.addEventListener("click", () => this.press(button.dataset.key));
    }
  }

  press(key) {
    if (key === "Control") {
      this.arm(!this.ctrl);
      return;
    }
    const term = this.terminalInView();
    if (!term) return;
    let data = PLAIN[key];
    if (key in ARROW) {
      data = arrowSequence(key, term.modes.applicationCursorKeysMode, this.ctrl);
      this.arm(false);
    }
    // As typed: xterm.js scrolls to the bottom and hands it to `onData`, then to `apply`.
    term.input(data, true);
  }

  arm(on) {
    this.ctrl = on;
    this.ctrlButton.setAttribute("aria-pressed", String(on));
  }

  /** Typed input on its way to the pane: the Ctrl chord of a single key while Ctrl is
   *  armed. More than one character at once (a paste, a word the keyboard completed, a
   *  terminal's answer to a query) goes as it is and leaves Ctrl armed. */
  apply(data) {
    if (!this.ctrl || [...data].length !== 1) return data;
    this.arm(false);
    return ctrlChord(data);
  }
}

/** A vertical swipe over `element` acts as the mouse wheel, one notch for each row the
 *  finger travels: on the normal screen it scrolls `term`'s scrollback; when the program
 *  asked for mouse reports (or is on the alternate screen, which has no scrollback) it goes
 *  to xterm.js as a wheel, which reports it to the program (or sends arrow keys), as a
 *  desktop wheel would. xterm.js 6.0 does neither on touch by itself. */
export function followSwipes(element, term) {
  let last = null;
  let travelled = 0;
  element.addEventListener("touchstart", (event) => {
    last = event.touches.length === 1 ? event.touches[0] : null;
    travelled = 0;
  }, { passive: true });
  element.addEventListener("touchmove", (event) => {
    if (!last || event.touches.length !== 1) return;
    const touch = event.touches[0];
    const down = touch.clientY - last.clientY;
    if (Math.abs(down) < Math.abs(touch.clientX - last.clientX) && travelled === 0) return;
    event.preventDefault();
    last = touch;
    travelled += down;
    const screen = element.querySelector(".xterm-screen");
    const rowHeight = screen.getBoundingClientRect().height / term.rows;
    const rows = Math.trunc(travelled / rowHeight);
    if (rows === 0) return;
    travelled -= rows * rowHeight;
    // A finger moving down shows what is above: the wheel turned up.
    if (term.buffer.active.type === "normal" && term.modes.mouseTrackingMode === "none") {
      term.scrollLines(-rows);
      return;
    }
    for (let notch = 0; notch < Math.abs(rows); notch++) {
      screen.dispatchEvent(new WheelEvent("wheel", {
        deltaY: rows > 0 ? -1 : 1,
        deltaMode: WheelEvent.DOM_DELTA_LINE,
        clientX: touch.clientX,
        clientY: touch.clientY,
        bubbles: true,
        cancelable: true,
      }));
    }
  }, { passive: false });
  element.addEventListener("touchend", () => { last = null; });
  element.addEventListener("touchcancel", () => { last = null; });
}
