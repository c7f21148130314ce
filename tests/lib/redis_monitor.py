"""Redis work counted from MONITOR, for the round-trip guard (tests/integration/test_round_trips.py)
and bench/capacity.py: a MONITOR connection read by a thread, its lines parsed, each command a
script runs ("lua" lines) given to the script call that ran it, and each script call named after
its store/lua script by the SHA-1 digest the store calls it by.

MONITOR writes a script call's line before the lines of the commands it runs (Redis 7.0), and
Redis runs one command at a time, so every "lua" line belongs to the last client command before
it. It depends on the Python standard library only."""

import hashlib
import os
import re
import socket
import threading

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))

# 1795757926.899259 [0 127.0.0.1:41840] "EVALSHA" "37754c..." "1" "osbq:instance:X1" ...
LINE = re.compile(r'^\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"(.*)$')
SCRIPT_COMMANDS = ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO")
_REQUIRES = re.compile(r"\n-- requires: ([a-z_]+)")


class Monitor:
    """A MONITOR connection read by a thread; lines() returns those seen so far."""

    def __init__(self, port):
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self._sock.sendall(b"MONITOR\r\n")
        self._file = self._sock.makefile("rb")
        if self._file.readline() != b"+OK\r\n":
            raise AssertionError("MONITOR refused")
        self._sock.settimeout(None)
        self._lines = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            for raw in self._file:  # ends when stop() shuts the socket down
                with self._lock:
                    self._lines.append(raw.decode(errors="replace").rstrip("\r\n").lstrip("+"))
        except (OSError, ValueError):
            pass

    def lines(self):
        with self._lock:
            return list(self._lines)

    def stop(self):
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._thread.join(timeout=5)
        self._file.close()
        self._sock.close()


def script_names(source_dir=SOURCE_DIR):
    """{SHA-1 digest: name} of the scripts in store/lua/, each as the store embeds it
    (cmake/EmbedScripts.cmake): for every line "-- requires: <lib>", store/lua/lib/<lib>.lua is
    put in front of the text, the later requirement in front of the earlier."""
    lua_dir = os.path.join(source_dir, "store", "lua")
    names = {}
    for entry in sorted(os.listdir(lua_dir)):
        if not entry.endswith(".lua"):
            continue
        with open(os.path.join(lua_dir, entry), "rb") as f:
            text = f.read()
        for lib in _REQUIRES.findall(text.decode()):
            with open(os.path.join(lua_dir, "lib", lib + ".lua"), "rb") as f:
                text = f.read() + text
        names[hashlib.sha1(text).hexdigest()] = entry[:-len(".lua")]
    return names


class Call:
    """A client's command; for a script call, the commands it ran (inner: (NAME, text) pairs)
    and the script's name (its digest when no store/lua script has it). owner: whose it is, for
    the caller to set (the client address mapped to a process)."""

    __slots__ = ("source", "command", "text", "inner", "script", "owner")

    def __init__(self, source, command, text, names):
        self.source = source
        self.command = command.upper()
        self.text = text
        self.inner = []
        self.script = None
        self.owner = None
        if self.command in SCRIPT_COMMANDS:
            words = text.split(" ", 2)
            digest = words[1].strip('"') if len(words) > 1 else ""
            self.script = names.get(digest, digest[:12]) if self.command.startswith("EVALSHA") \
                else self.command.lower()

    def commands(self):
        """Commands in all: the call itself and those it ran."""
        return 1 + len(self.inner)

    def names(self, word):
        """Whether word appears in the call or in any command it ran."""
        return word in self.text or any(word in text for _, text in self.inner)


def calls(lines, names=None):
    """The clients' commands of MONITOR lines, in order, each with the commands its script ran.
    Raises ValueError on a line that is not MONITOR's, or on a "lua" line with no script call
    before it."""
    out = []
    for line in lines:
        m = LINE.match(line)
        if m is None:
            raise ValueError("unexpected MONITOR line: %r" % line)
        source, command, rest = m.groups()
        if source == "lua":
            if not out or out[-1].script is None:
                raise ValueError("a command run by a script, with no script call before it: %r"
                                 % line)
            out[-1].inner.append((command.upper(), command + rest))
        else:
            out.append(Call(source, command, command + rest, names or {}))
    return out


# Operation ids in the keys a script names: <namespace>:op:<hex id>.
_OP_KEY = re.compile(r':op:([0-9a-f]{16,})')


def operation_calls(window, ids):
    """The calls of window (a list of Call) that belong to the operations of ids: those that
    name one of ids, or an operation an earlier such call named (the worker's claim and finish
    name the operation, not the instance). Returns (theirs, the others)."""
    known = set()
    theirs, others = [], []
    for c in window:
        if any(c.names(i) for i in ids) or any(c.names(op) for op in known):
            theirs.append(c)
            for text in [c.text] + [t for _, t in c.inner]:
                known.update(_OP_KEY.findall(text))
        else:
            others.append(c)
    return theirs, others


def breakdown(window, count):
    """Per script: calls, commands inside per call and by name, each per operation of count;
    and the clients' own commands (not script calls) by name, per operation."""
    scripts, direct = {}, {}
    for c in window:
        if c.script is None:
            direct[c.command] = direct.get(c.command, 0) + 1
            continue
        s = scripts.setdefault(c.script, {"calls": 0, "inner": 0, "by_command": {}})
        s["calls"] += 1
        s["inner"] += len(c.inner)
        for name, _ in c.inner:
            s["by_command"][name] = s["by_command"].get(name, 0) + 1
    def per_op(counts):
        return {k: round(v / count, 2) for k, v in sorted(counts.items())}

    out = {"scripts": {}, "direct_per_op": per_op(direct)}
    for name, s in sorted(scripts.items()):
        out["scripts"][name] = {
            "calls_per_op": round(s["calls"] / count, 2),
            "commands_inside_per_call": round(s["inner"] / s["calls"], 2),
            "commands_inside_per_op": round(s["inner"] / count, 2),
            "by_command_per_op": per_op(s["by_command"]),
        }
    return out
