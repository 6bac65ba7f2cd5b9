//! The generated `hermes_tools` Python module: one function per sandbox tool the session has,
//! each sending `{"tool", "args", "token"}` as one JSON line over the Unix socket named by
//! `HERMES_RPC_SOCKET` and returning the tool's JSON result as a dict (calls from several
//! threads are serialised: one request, one reply); plus the helpers `json_parse`,
//! `shell_quote` and `retry`. Arguments left as `None` are not sent.

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

const HEADER: &str = r#""""Hermes tools for this script. Each function runs the tool in the agent and returns its JSON result."""
import json as _json
import os as _os
import shlex as _shlex
import socket as _socket
import threading as _threading
import time as _time

_lock = _threading.Lock()
_conn = None
_pending = b""


def _call(tool, args):
    global _conn, _pending
    args = {k: v for k, v in args.items() if v is not None}
    line = _json.dumps({"tool": tool, "args": args, "token": _os.environ.get("HERMES_RPC_TOKEN", "")}) + "\n"
    with _lock:
        if _conn is None:
            _conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            _conn.connect(_os.environ["HERMES_RPC_SOCKET"])
        _conn.sendall(line.encode("utf-8"))
        while b"\n" not in _pending:
            chunk = _conn.recv(65536)
            if not chunk:
                raise RuntimeError("the agent closed the tool channel")
            _pending += chunk
        reply, _, _pending = _pending.partition(b"\n")
    result = _json.loads(reply.decode("utf-8"))
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
pub(super) fn module(names: &[&str]) -> String {
    let mut src = HEADER.to_string();
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
        let src = module(&["read_file", "terminal"]);
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
