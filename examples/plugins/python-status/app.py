"""Example nightcrow plugin in Python: a status line per pane.

Each pane it is given shows one of "working" (output arrived), "quiet" (no output for a
while: the host's pane_idle) or "exited" (the process ended and the host holds the pane for
a relaunch), with the last line of output as detail. A status is sent only when the state
changes, so a chatty pane costs one line, not one per output chunk.

It speaks protocol v3 (one JSON object per line) on stdin/stdout and needs no grants.
Build: componentize-py -d ../../../wit -w nightcrow:plugin/plugin componentize app -o python-status.wasm
"""

import json
import sys

from wit_world import exports

VERSION = 3
DETAIL_CHARS = 120


def send(command):
    command["v"] = VERSION
    sys.stdout.write(json.dumps(command, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def last_line(text):
    lines = [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]
    return lines[-1][:DETAIL_CHARS] if lines else None


class Panes:
    def __init__(self):
        # token -> [generation, state, detail]
        self.panes = {}

    def show(self, token, generation, state, detail=None):
        pane = self.panes.get(token)
        if pane is not None and pane[0] == generation and pane[1] == state:
            if detail is not None:
                pane[2] = detail
            return
        self.panes[token] = [generation, state, detail]
        send({"cmd": "status", "token": token, "generation": generation, "state": state,
              "detail": detail, "deadline_epoch": None, "attempt": 0})

    def handle(self, event):
        kind = event.get("event")
        token = event.get("token")
        generation = event.get("generation")
        if kind == "pane_opened":
            self.show(token, generation, "watching", event.get("command"))
        elif kind == "pane_output":
            self.show(token, generation, "working", last_line(event.get("text", "")))
        elif kind == "pane_idle":
            pane = self.panes.get(token)
            self.show(token, generation, "quiet", pane[2] if pane else None)
        elif kind == "pane_exited":
            self.show(token, generation, "exited")
        elif kind == "pane_closed":
            self.panes.pop(token, None)
        return kind != "shutdown"


class Run(exports.Run):
    def run(self) -> None:
        panes = Panes()
        for line in sys.stdin:
            try:
                event = json.loads(line)
            except ValueError as error:
                sys.stderr.write(f"python-status: not JSON, skipped: {error}\n")
                continue
            if not isinstance(event, dict) or event.get("v") != VERSION:
                sys.stderr.write("python-status: not a v3 event, skipped\n")
                continue
            if not panes.handle(event):
                return
