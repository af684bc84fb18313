"""Command-hook gates for the conformance kit: a real process per gate that asks the
kit's ``behave`` (in the test process) what to answer, over a loopback socket.

A framework whose gates can be commands (hermes' shell hooks, code-puppy's hook engine,
Claude-style ``hooks.json``) registers each kit gate as the command ``bridge.command(name,
behave)``: the framework spawns it as it spawns any command hook, the process hands its
stdin (the framework's payload) to ``behave`` through ``seen_of(payload)`` and answers
with what ``behave`` returned, as the command's stdout and exit status:

- ``None``: no output, exit 0;
- a ``str``: printed as is, exit 0; a ``dict`` or ``list``: printed as JSON, exit 0;
- ``Exit(status, stdout="", stderr="")``: that output and exit status;

A ``behave`` that hangs keeps the process waiting (the framework's or failsecure's
deadline stops it). A command cannot raise a Python exception or answer a Python
object: when ``behave`` does, the process exits 1 and ``CommandBridge.unsupported`` says
so, and the harness reports that row ``n/a`` (``check()``); the failures a command does
have (exit statuses, signals, a missing binary) are each host's own tests.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .harness import NotSupported, Seen

__all__ = ("CommandBridge", "Exit")

_SCRIPT = r'''
import socket, sys
port, name = int(sys.argv[1]), sys.argv[2]
payload = sys.stdin.buffer.read()
s = socket.create_connection(("127.0.0.1", port))
s.sendall(name.encode() + b"\n" + payload)
s.shutdown(socket.SHUT_WR)
chunks = []
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    chunks.append(chunk)
head, _, rest = b"".join(chunks).partition(b"\n")
status, out_len = (int(x) for x in head.split())
sys.stdout.buffer.write(rest[:out_len])
sys.stderr.buffer.write(rest[out_len:])
sys.stdout.flush()
sys.exit(status)
'''


@dataclass
class Exit:
    """A command's answer with an exit status of its own."""

    status: int
    stdout: str = ""
    stderr: str = ""


class CommandBridge:
    """One loopback server for the gates of one harness; ``command(name, behave)`` is
    the command line of one gate. ``close()`` stops it."""

    def __init__(self, workdir: Path, seen_of: Callable[[Any], Seen]):
        self.seen_of = seen_of
        self.behaviours: dict[str, Callable] = {}
        self.unsupported: Optional[str] = None
        self.script = Path(workdir) / "failsecure_kit_command.py"
        self.script.write_text(_SCRIPT)
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def command(self, name: str, behave: Callable) -> str:
        self.behaviours[name] = behave
        return f"{sys.executable} -S {self.script} {self.port} {name}"  # -S: no site, a quick start

    def reset(self) -> None:
        self.behaviours.clear()
        self.unsupported = None

    def check(self) -> None:
        """Raise ``NotSupported`` when a gate's behaviour had no command form."""
        if self.unsupported:
            raise NotSupported(self.unsupported)

    def close(self) -> None:
        self._closed = True
        try:
            self._server.close()
        except OSError:
            pass

    # ------------------------------------------------------------ the server

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            chunks = []
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            name, _, payload = b"".join(chunks).partition(b"\n")
            status, out, err = self._run(name.decode(), payload)
            data = out.encode()
            try:
                conn.sendall(f"{status} {len(data)}\n".encode() + data + err.encode())
            except OSError:
                pass  # the process was stopped while it waited (a deadline)

    def _run(self, name: str, payload: bytes) -> tuple[int, str, str]:
        behave = self.behaviours.get(name)
        if behave is None:
            return 0, "", ""
        try:
            try:
                native = json.loads(payload.decode() or "null")
            except ValueError:
                native = None
            answer = behave(self.seen_of(native))
        except NotSupported as exc:  # an answer the harness says this kind has not
            self.unsupported = str(exc)
            return 1, "", ""
        except BaseException:  # noqa: BLE001 - a gate that raises (SystemExit, a hostile exception) has no command form
            self.unsupported = "a command hook cannot raise (its failures are exit statuses)"
            return 1, "", ""
        if answer is None:
            return 0, "", ""
        if isinstance(answer, Exit):
            return answer.status, answer.stdout, answer.stderr
        if type(answer) is str:
            return 0, answer, ""
        if type(answer) in (dict, list):
            try:
                return 0, json.dumps(answer), ""
            except (TypeError, ValueError):
                pass
        self.unsupported = "a command hook answers text, not a Python object"
        return 1, "", ""
