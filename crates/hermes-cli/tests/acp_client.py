"""Drives `hermes acp` with the official ACP Python client library (PyPI
`agent-client-protocol`, module `acp`), as an editor would, and prints one JSON line per step
for the Rust test (acp_client.rs) to check.

usage: acp_client.py HERMES_BIN WORKDIR [terminal]

Steps: initialize (offering the editor's file system); a new session in WORKDIR; a prompt
whose turn edits notes.txt through the editor (the tool call and its diff); a read of an
unsaved editor buffer; a dangerous command denied, then the same command allowed once; a slow
answer cancelled; then a second `hermes acp` loads the stored session and replays it.

With `terminal`: the editor offers its terminal (really running the commands, recording every
terminal/* request); a turn runs a command there, a dangerous command is denied, a plain turn
reports its token usage, a long command is cancelled with its turn, and a second `hermes acp`
loads the session (its context usage).
"""

import asyncio
import json
import os
import signal
import sys

import acp
from acp import spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)


def dump(value):
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


class Editor:
    """The client side: records every update, answers permission requests from a queue."""

    def __init__(self):
        self.updates = []
        self.permissions = []
        self.answers = []
        self.first_chunk = asyncio.Event()
        # Unsaved editor buffers by path, and the fs/* requests the agent made.
        self.buffers = {}
        self.fs = []

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions.append(
            {"tool_call": dump(tool_call), "options": [dump(o) for o in options]}
        )
        choice = self.answers.pop(0) if self.answers else "deny"
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=choice, outcome="selected")
        )

    async def session_update(self, session_id, update, **kwargs):
        u = dump(update)
        self.updates.append(u)
        if u.get("sessionUpdate") == "agent_message_chunk":
            self.first_chunk.set()

    async def write_text_file(self, session_id, path, content, **kwargs):
        # An editor saves what the agent wrote; the test reads it back from the disk.
        self.fs.append({"op": "write", "path": path, "content": content})
        with open(path, "w") as f:
            f.write(content)
        return WriteTextFileResponse()

    async def read_text_file(self, session_id, path, line=None, limit=None, **kwargs):
        self.fs.append({"op": "read", "path": path, "line": line, "limit": limit})
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        with open(path) as f:
            return ReadTextFileResponse(content=f.read())

    def take(self):
        out, self.updates = self.updates, []
        return out


class TerminalEditor(Editor):
    """An editor with a terminal: runs each command for real (in the cwd, with the environment
    changes given) and records every terminal/* request in `self.terminal`."""

    def __init__(self):
        super().__init__()
        self.terminal = []
        self.procs = {}
        self.created = asyncio.Event()

    async def create_terminal(self, session_id, command, args=None, env=None, cwd=None,
                              output_byte_limit=None, **kwargs):
        changes = {e.name: e.value for e in (env or [])}
        self.terminal.append({"op": "create", "command": command, "args": args, "cwd": cwd,
                              "output_byte_limit": output_byte_limit,
                              "env_path": changes.get("PATH")})
        full = dict(os.environ)
        full.update(changes)
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=full,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        tid = f"term-{len(self.procs) + 1}"
        self.procs[tid] = {"proc": proc, "limit": output_byte_limit,
                           "reader": asyncio.create_task(proc.stdout.read())}
        self.created.set()
        return CreateTerminalResponse(terminal_id=tid)

    async def _status(self, tid):
        t = self.procs[tid]
        code = await t["proc"].wait()
        if code < 0:
            return TerminalExitStatus(signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code)

    async def wait_for_terminal_exit(self, session_id, terminal_id, **kwargs):
        self.terminal.append({"op": "wait", "terminal_id": terminal_id})
        status = await self._status(terminal_id)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(self, session_id, terminal_id, **kwargs):
        self.terminal.append({"op": "output", "terminal_id": terminal_id})
        t = self.procs[terminal_id]
        data = await t["reader"]
        limit = t["limit"]
        truncated = limit is not None and len(data) > limit
        if truncated:
            data = data[-limit:]
        status = await self._status(terminal_id) if t["proc"].returncode is not None else None
        return TerminalOutputResponse(output=data.decode(errors="replace"), truncated=truncated,
                                      exit_status=status)

    async def kill_terminal(self, session_id, terminal_id, **kwargs):
        self.terminal.append({"op": "kill", "terminal_id": terminal_id})
        proc = self.procs[terminal_id]["proc"]
        if proc.returncode is None:
            proc.kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id, terminal_id, **kwargs):
        self.terminal.append({"op": "release", "terminal_id": terminal_id})
        proc = self.procs[terminal_id]["proc"]
        if proc.returncode is None:
            proc.kill()
        return ReleaseTerminalResponse()


async def prompt(conn, editor, session_id, text):
    resp = await conn.prompt(session_id=session_id, prompt=[text_block(text)])
    return dump(resp), editor.take()


async def first_connection(hermes, workdir, env):
    editor = Editor()
    async with spawn_agent_process(editor, hermes, "acp", env=env, cwd=workdir) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True)
            ),
        )
        emit("initialize", response=dump(init))

        new = await conn.new_session(cwd=workdir, mcp_servers=[])
        sid = new.session_id
        emit("new_session", response=dump(new), updates=editor.take())

        resp, updates = await prompt(conn, editor, sid, "edit the notes")
        emit("edit", response=resp, updates=updates, fs=editor.fs,
             notes=open(os.path.join(workdir, "notes.txt")).read())
        editor.fs = []

        editor.buffers[os.path.join(workdir, "draft.txt")] = "unsaved line one\nunsaved line two\n"
        resp, updates = await prompt(conn, editor, sid, "read the draft")
        emit("read", response=resp, updates=updates, fs=editor.fs)

        editor.answers = ["deny"]
        resp, updates = await prompt(conn, editor, sid, "remove the victim")
        emit("denied", response=resp, updates=updates, permissions=editor.permissions,
             victim_exists=os.path.isdir(os.path.join(workdir, "victim")))
        editor.permissions = []

        editor.answers = ["allow_once"]
        resp, updates = await prompt(conn, editor, sid, "remove the victim again")
        emit("allowed", response=resp, updates=updates, permissions=editor.permissions,
             victim_exists=os.path.isdir(os.path.join(workdir, "victim")))

        editor.first_chunk.clear()
        running = asyncio.create_task(
            conn.prompt(session_id=sid, prompt=[text_block("tell a long story")])
        )
        await asyncio.wait_for(editor.first_chunk.wait(), 30)
        await conn.cancel(session_id=sid)
        resp = await asyncio.wait_for(running, 30)
        emit("cancelled", response=dump(resp), updates=editor.take())

        mode = await conn.set_session_mode(session_id=sid, mode_id="yolo")
        emit("mode", response=dump(mode), updates=editor.take())
        return sid


async def second_connection(hermes, workdir, env, sid):
    editor = Editor()
    async with spawn_agent_process(editor, hermes, "acp", env=env, cwd=workdir) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        loaded = await conn.load_session(cwd=workdir, session_id=sid, mcp_servers=[])
        emit("load", response=dump(loaded), updates=editor.take())
        resp, updates = await prompt(conn, editor, sid, "after the load")
        emit("after_load", response=resp, updates=updates)


async def terminal_connection(hermes, workdir, env):
    editor = TerminalEditor()
    async with spawn_agent_process(editor, hermes, "acp", env=env, cwd=workdir) as (conn, _proc):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(terminal=True),
        )
        new = await conn.new_session(cwd=workdir, mcp_servers=[])
        sid = new.session_id

        resp, updates = await prompt(conn, editor, sid, "run the greeting")
        await released(editor)
        emit("terminal", response=resp, updates=updates, terminal=editor.terminal)
        editor.terminal = []

        editor.answers = ["deny"]
        resp, updates = await prompt(conn, editor, sid, "remove the victim")
        await asyncio.sleep(0.5)
        emit("terminal_denied", response=resp, updates=updates, permissions=editor.permissions,
             terminal=editor.terminal,
             victim_exists=os.path.isdir(os.path.join(workdir, "victim")))

        resp, updates = await prompt(conn, editor, sid, "count the tokens")
        emit("usage", response=resp, updates=updates)

        editor.terminal = []
        editor.created.clear()
        running = asyncio.create_task(
            conn.prompt(session_id=sid, prompt=[text_block("wait for a long time")])
        )
        await asyncio.wait_for(editor.created.wait(), 30)
        await asyncio.sleep(0.3)
        await conn.cancel(session_id=sid)
        resp = await asyncio.wait_for(running, 30)
        await released(editor)
        emit("terminal_cancelled", response=dump(resp), terminal=editor.terminal,
             updates=editor.take())
    return sid


async def released(editor):
    """The release is sent without waiting for its answer: lets it arrive."""
    for _ in range(50):
        if editor.terminal and editor.terminal[-1]["op"] == "release":
            return
        await asyncio.sleep(0.1)


async def load_for_usage(hermes, workdir, env, sid):
    editor = Editor()
    async with spawn_agent_process(editor, hermes, "acp", env=env, cwd=workdir) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        loaded = await conn.load_session(cwd=workdir, session_id=sid, mcp_servers=[])
        emit("load", response=dump(loaded), updates=editor.take())


async def main():
    hermes, workdir = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    if sys.argv[3:] == ["terminal"]:
        sid = await terminal_connection(hermes, workdir, env)
        await load_for_usage(hermes, workdir, env, sid)
        return
    sid = await first_connection(hermes, workdir, env)
    await second_connection(hermes, workdir, env, sid)


asyncio.run(main())
