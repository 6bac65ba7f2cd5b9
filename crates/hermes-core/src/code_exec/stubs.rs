//! The generated `hermes_tools` Python module: one function per sandbox tool the session has,
//! each sending `{"tool", "args", "token"}` and returning the tool's JSON result as a dict
//! (calls from several threads are serialised: one request, one reply); plus the helpers
//! `json_parse`, `shell_quote` and `retry`. Arguments left as `None` are not sent. Two
//! transports ([`Transport`]): one JSON line over the Unix socket named by `HERMES_RPC_SOCKET`
//! (a script on this machine), or request and reply files in the private directory named by
//! `HERMES_RPC_DIR` (a script in a remote environment, which the agent polls).

/// `(name, signature, argument dict, one-line doc)` of each sandbox tool's function.
const FUNCTIONS: &[(&str, &str, &str, &str)] = &[
    (
        "read_file",
        "path, offset=1, limit=500",
        r#"{"path": path, "offset": offset, "limit": limit}"#,
        "Read a text file as numbered lines (1-indexed).",
    ),
    (
        "write_file",
        "path, content",
        r#"{"path": path, "content": content}"#,
        "Write (overwrite) a file.",
    ),
    (
        "search_files",
        "pattern, target=\"content\", path=\".\", file_glob=None, limit=50, offset=0, output_mode=\"content\", context=0",
        r#"{"pattern": pattern, "target": target, "path": path, "file_glob": file_glob, "limit": limit, "offset": offset, "output_mode": output_mode, "context": context}"#,
        "Search file contents (target=\"content\") or names (target=\"files\").",
    ),
    (
        "patch",
        "path=None, old_string=None, new_string=None, replace_all=False, mode=\"replace\", patch=None",
        r#"{"path": path, "old_string": old_string, "new_string": new_string, "replace_all": replace_all, "mode": mode, "patch": patch}"#,
        "Replace old_string with new_string in a file, or apply a V4A patch (mode=\"patch\").",
    ),
    (
        "terminal",
        "command, timeout=None, workdir=None",
        r#"{"command": command, "timeout": timeout, "workdir": workdir}"#,
        "Run a shell command in the foreground; returns output and exit_code.",
    ),
    (
        "web_search",
        "query, limit=5",
        r#"{"query": query, "limit": limit}"#,
        "Search the web; returns {\"data\": {\"web\": [{title, url, description}]}}.",
    ),
    (
        "web_extract",
        "urls, char_limit=None",
        r#"{"urls": urls, "char_limit": char_limit}"#,
        "Read web pages as markdown; returns {\"results\": [{url, title, content}]}.",
    ),
];

/// How each function is shown in the tool description (the parameters that matter).
const SHOWN: &[(&str, &str)] = &[
    ("read_file", "read_file(path, offset=1, limit=500)"),
    ("write_file", "write_file(path, content)"),
    (
        "search_files",
        "search_files(pattern, target='content', path='.', file_glob=None, limit=50)",
    ),
    (
        "patch",
        "patch(path, old_string, new_string, replace_all=False)",
    ),
    ("terminal", "terminal(command, timeout=None, workdir=None)"),
    ("web_search", "web_search(query, limit=5)"),
    ("web_extract", "web_extract(urls)"),
];

/// How the module reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    /// A Unix socket on this machine.
    Socket,
    /// Files in a directory the agent polls (remote environments).
    Files,
}

const IMPORTS: &str = r#""""Hermes tools for this script. Each function runs the tool in the agent and returns its JSON result."""
import json as _json
import os as _os
import shlex as _shlex
import socket as _socket
import threading as _threading
import time as _time

_lock = _threading.Lock()
"#;

/// `_exchange(request) -> reply text` over the socket.
const SOCKET_EXCHANGE: &str = r#"_conn = None
_pending = b""


def _exchange(request):
    global _conn, _pending
    with _lock:
        if _conn is None:
            _conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            _conn.connect(_os.environ["HERMES_RPC_SOCKET"])
        _conn.sendall((request + "\n").encode("utf-8"))
        while b"\n" not in _pending:
            chunk = _conn.recv(65536)
            if not chunk:
                raise RuntimeError("the agent closed the tool channel")
            _pending += chunk
        reply, _, _pending = _pending.partition(b"\n")
    return reply.decode("utf-8")
"#;

/// `_exchange(request) -> reply text` through files: `req_N` appears whole (written as
/// `req_N.tmp`, then renamed), the agent answers with `res_N` (also renamed into place).
const FILES_EXCHANGE: &str = r#"_seq = 0


def _exchange(request):
    global _seq
    rpc = _os.environ["HERMES_RPC_DIR"]
    with _lock:
        _seq += 1
        name = "%06d" % _seq
        tmp = _os.path.join(rpc, "req_" + name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(request)
        _os.rename(tmp, _os.path.join(rpc, "req_" + name))
        res = _os.path.join(rpc, "res_" + name)
        delay = 0.02
        while not _os.path.exists(res):
            _time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        with open(res, encoding="utf-8") as f:
            reply = f.read()
        _os.remove(res)
    return reply
"#;

const HEADER: &str = r#"

def _call(tool, args):
    args = {k: v for k, v in args.items() if v is not None}
    request = _json.dumps({"tool": tool, "args": args, "token": _os.environ.get("HERMES_RPC_TOKEN", "")})
    result = _json.loads(_exchange(request))
    if isinstance(result, str):
        try:
            return _json.loads(result)
        except ValueError:
            return result
    return result


def json_parse(text):
    """json.loads that tolerates control characters (terminal output)."""
    return _json.loads(text, strict=False)


def shell_quote(s):
    """Quote a string for a shell command."""
    return _shlex.quote(s)


def retry(fn, max_attempts=3, delay=2):
    """Call fn until it does not raise, up to max_attempts, waiting delay * 2**n between tries."""
    for attempt in range(max_attempts):
        try:
            return fn()
        except Exception:
            if attempt == max_attempts - 1:
                raise
            _time.sleep(delay * (2 ** attempt))

"#;

/// The module's source for the tools in `names` (unknown names are ignored).
pub(super) fn module(names: &[&str], transport: Transport) -> String {
    let mut src = IMPORTS.to_string();
    src.push_str(match transport {
        Transport::Socket => SOCKET_EXCHANGE,
        Transport::Files => FILES_EXCHANGE,
    });
    src.push_str(HEADER);
    for (name, signature, args, doc) in FUNCTIONS {
        if names.contains(name) {
            src.push_str(&format!(
                "\ndef {name}({signature}):\n    \"\"\"{doc}\"\"\"\n    return _call(\"{name}\", {args})\n\n"
            ));
        }
    }
    src
}

/// The functions of `names` as the tool description lists them.
pub(super) fn signatures(names: &[&str]) -> String {
    SHOWN
        .iter()
        .filter(|(name, _)| names.contains(name))
        .map(|(_, shown)| *shown)
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_named_tools_get_functions() {
        let src = module(&["read_file", "terminal"], Transport::Socket);
        assert!(src.contains("def read_file(path, offset=1, limit=500):"));
        assert!(src.contains("def terminal(command, timeout=None, workdir=None):"));
        assert!(!src.contains("def web_search("));
        assert!(src.contains("def retry("));
        assert_eq!(
            signatures(&["read_file", "terminal", "patch"]),
            "read_file(path, offset=1, limit=500); patch(path, old_string, new_string, replace_all=False); terminal(command, timeout=None, workdir=None)"
        );
    }
}
