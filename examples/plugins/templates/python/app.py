"""{{name}}: a nightcrow plugin in Python.

nightcrow sends one JSON event per line on stdin and reads one JSON command per line from
stdout; every line carries "v": 3. Start from `handle` below. docs/PLUGIN-AUTHORING.md in
the nightcrow repository describes every event and command.
"""

import json
import sys

from wit_world import exports

VERSION = 3


def send(command):
    """Writes one command line and flushes it (nightcrow reads lines as they come)."""
    command["v"] = VERSION
    sys.stdout.write(json.dumps(command, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def handle(event):
    """Reacts to one event; returns False to stop (on shutdown)."""
    kind = event.get("event")
    if kind == "shutdown":
        return False
    if kind == "pane_opened":
        send({"cmd": "status", "token": event["token"], "generation": event["generation"],
              "state": "watching", "detail": None, "deadline_epoch": None, "attempt": 0})
    # pane_output, pane_idle, pane_exited, pane_closed, user_input: yours to handle.
    return True


class Run(exports.Run):
    def run(self) -> None:
        for line in sys.stdin:
            try:
                event = json.loads(line)
            except ValueError:
                sys.stderr.write("{{name}}: a line that is not JSON, skipped\n")
                continue
            if event.get("v") == VERSION and not handle(event):
                return
