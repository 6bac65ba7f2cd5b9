//! File tools: `read_file` (numbered lines, paging, caps, binary refusal) and `write_file`
//! (parents created, atomic replace), both refusing protected credential paths. Reads open
//! the file first and check what was opened ([`crate::protect::ProtectedPaths::open_read`]:
//! regular files only, so a FIFO or device fails at once, no hard links to keys) and stream it
//! with a cap per line, so memory stays bounded whatever the file (a 1 GiB single line read
//! with `limit: 1` keeps 8 KiB). Writes to guarded paths (the Hermes config and `.env`, shell
//! start-up files, `~/.ssh`, schedulers) need approval through the session's gate; the file
//! is then written relative to the directory actually opened, so a symlink swapped in after
//! the approval cannot redirect it. Blocking filesystem work runs on tokio's blocking pool.
//! `read_file` on a directory answers with its entries (at most [`MAX_DIR_ENTRIES`]) instead
//! of an error: small models ask it to "read" `.` when they mean "list", and an error only
//! makes them ask again.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Access, Tool, ToolContext, ToolError, ToolResult, paths};

/// Lines returned when the model gives no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 500;
const MAX_LIMIT: usize = 2000;
/// Characters of numbered content returned at most per call.
const MAX_CONTENT_CHARS: usize = 100_000;
/// Characters kept of one very long line.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes sniffed for NUL to decide a file is binary.
const SNIFF_BYTES: usize = 8192;
/// Entries of a directory listed by `read_file` at most.
const MAX_DIR_ENTRIES: usize = 200;
/// Bytes of one line kept in memory (enough for [`MAX_LINE_CHARS`] characters of any width);
/// the rest of a longer line is read and dropped.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::new(format!("invalid arguments: {e}")))
}

fn path_arg(args: &Value, ctx: &ToolContext) -> Option<PathBuf> {
    args.get("path")
        .and_then(Value::as_str)
        .map(|p| paths::resolve(&ctx.cwd, p))
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::new(format!("file operation failed: {e}")))?
}

// ---- read_file ----

pub struct ReadFileTool;

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait::async_trait]
impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Read a text file. Returns numbered lines as LINE|CONTENT, 500 lines from `offset` by default; page with offset/limit. Prefer this over cat/head/tail in the terminal."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path (absolute, relative to the working directory, or ~/...)"},
                "offset": {"type": "integer", "description": "First line to read, 1-based (default 1)", "minimum": 1},
                "limit": {"type": "integer", "description": "Lines to read (default 500, max 2000)", "minimum": 1}
            },
            "required": ["path"]
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        Access::Read(path_arg(args, ctx).into_iter().collect())
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: ReadArgs = parse_args(args)?;
        let offset = args.offset.unwrap_or(1).max(1);
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        if !ctx.environment.is_local() {
            return crate::env::tools::read_file(ctx, &args.path, offset, limit).await;
        }
        let path = paths::resolve(&ctx.cwd, &args.path);
        let protected = ctx.protected.clone();
        blocking(move || read_lines(&protected, &path, offset, limit)).await
    }
}

fn read_lines(
    protected: &crate::protect::ProtectedPaths,
    path: &Path,
    offset: usize,
    limit: usize,
) -> ToolResult {
    let shown = path.display();
    if path.is_dir() {
        protected.check_read(path)?;
        return list_directory(path);
    }
    let (mut file, meta) = protected.open_read(path)?;
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = read_up_to(&mut file, &mut head)
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?;
    head.truncate(n);
    if head.contains(&0) {
        return Err(ToolError::new(format!(
            "{shown} is a binary file ({} bytes); inspect it with terminal tools such as `file` or `xxd`",
            meta.len()
        )));
    }
    let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(file));
    number_lines(reader, &shown.to_string(), meta.len(), offset, limit)
}

/// The `read_file` result for a file's content: numbered lines from `offset`, at most
/// `limit` of them and [`MAX_CONTENT_CHARS`] in all, long lines capped, paging hints.
pub(crate) fn number_lines(
    mut reader: impl BufRead,
    shown: &str,
    file_size: u64,
    offset: usize,
    limit: usize,
) -> ToolResult {
    let mut content = String::new();
    let mut total_lines = 0usize;
    let mut next_offset = None;
    let mut line = Vec::with_capacity(256);
    while let Some(cut) = read_capped_line(&mut reader, &mut line, MAX_LINE_BYTES)
        .map_err(|e| ToolError::new(format!("cannot read {shown}: {e}")))?
    {
        total_lines += 1;
        let number = total_lines;
        if number < offset || number >= offset + limit || next_offset.is_some() {
            if number >= offset + limit && next_offset.is_none() {
                next_offset = Some(number);
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let mut rendered = cap_line(text);
        if cut && !rendered.ends_with("[line truncated]") {
            rendered = format!("{rendered}… [line truncated]").into();
        }
        if content.len() + rendered.len() > MAX_CONTENT_CHARS && !content.is_empty() {
            next_offset = Some(number);
            continue;
        }
        content.push_str(&number.to_string());
        content.push('|');
        content.push_str(&rendered);
        content.push('\n');
    }
    if content.ends_with('\n') {
        content.pop();
    }
    let mut result = json!({
        "content": content,
        "total_lines": total_lines,
        "file_size": file_size,
    });
    if let Some(next) = next_offset {
        result["truncated"] = json!(true);
        result["next_offset"] = json!(next);
    } else if offset > total_lines.max(1) {
        result["note"] = json!(format!(
            "offset {offset} is past the end of the file ({total_lines} lines)"
        ));
    }
    Ok(result)
}

/// A directory given to `read_file`: its entries sorted by name (directories marked with a
/// trailing `/`), at most [`MAX_DIR_ENTRIES`] of them, and a note saying what this is.
fn list_directory(path: &Path) -> ToolResult {
    let shown = path.display();
    let cannot = |e: std::io::Error| ToolError::new(format!("cannot list {shown}: {e}"));
    let mut names: Vec<String> = Vec::new();
    let mut total = 0usize;
    for entry in std::fs::read_dir(path).map_err(cannot)? {
        let entry = entry.map_err(cannot)?;
        total += 1;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    Ok(directory_result(&shown.to_string(), names, total))
}

/// The `read_file` result for a directory's entries (directories end in `/`).
pub(crate) fn directory_result(shown: &str, mut names: Vec<String>, total: usize) -> Value {
    names.sort_unstable();
    let truncated = names.len() > MAX_DIR_ENTRIES;
    names.truncate(MAX_DIR_ENTRIES);
    let mut result = json!({
        "content": names.join("\n"),
        "is_directory": true,
        "total_entries": total,
        "note": format!(
            "{shown} is a directory; these are its entries. read_file reads a file: give one of these paths"
        ),
    });
    if truncated {
        result["truncated"] = json!(true);
    }
    result
}

/// Reads the next line into `line` (without its newline), keeping at most `cap` bytes and
/// dropping the rest. `None` at the end of the input; `Some(true)` when the line was cut.
fn read_capped_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = cap.saturating_sub(line.len());
        if chunk.len() > room {
            cut = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(cut));
        }
    }
}

fn read_up_to(file: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn cap_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_LINE_CHARS || text.chars().count() <= MAX_LINE_CHARS {
        return text.into();
    }
    let kept: String = text.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}… [line truncated]").into()
}

// ---- write_file ----

pub struct WriteFileTool;

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }
    fn toolset(&self) -> &str {
        "file"
    }
    fn description(&self) -> &str {
        "Write a whole file, replacing it if it exists; parent directories are created. For small edits to existing files use patch."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path"},
                "content": {"type": "string", "description": "The complete new content"}
            },
            "required": ["path", "content"]
        })
    }
    fn access(&self, args: &Value, ctx: &ToolContext) -> Access {
        Access::Write(path_arg(args, ctx).into_iter().collect())
    }
    fn preview(&self, args: &Value) -> String {
        crate::output::shorten_line(args.get("path").and_then(Value::as_str).unwrap_or(""), 60)
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let args: WriteArgs = parse_args(args)?;
        if !ctx.environment.is_local() {
            return crate::env::tools::write_file(ctx, &args.path, &args.content).await;
        }
        let path = paths::resolve(&ctx.cwd, &args.path);
        ctx.protected.check_write(&path)?;
        let guard = ctx.protected.guarded_write(&path);
        let note = match guard {
            Some(g) => {
                ctx.approvals
                    .check_write(
                        g,
                        "write_file",
                        &path,
                        ctx.interaction.as_ref(),
                        &ctx.cancel,
                    )
                    .await?
            }
            None => None,
        };
        let protected = ctx.protected.clone();
        let mut result = blocking(move || {
            if path.is_dir() {
                return Err(ToolError::new(format!("{} is a directory", path.display())));
            }
            let created = !path.exists();
            write_checked(&protected, &path, args.content.as_bytes(), guard)?;
            Ok(json!({
                "path": path.display().to_string(),
                "bytes_written": args.content.len(),
                "created": created,
            }))
        })
        .await?;
        if let Some(n) = note {
            result["approval_note"] = json!(n);
        }
        Ok(result)
    }
}

/// Writes `data` to `path` atomically, checking the directory actually opened: the path must
/// still be writable there, and guarded only as `approved` (what the user approved).
pub(crate) fn write_checked(
    protected: &crate::protect::ProtectedPaths,
    path: &Path,
    data: &[u8],
    approved: Option<crate::protect::GuardedWrite>,
) -> Result<(), ToolError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display();
    let fail = |e: std::io::Error| ToolError::new(format!("cannot write {shown}: {e}"));
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(ToolError::new(format!(
            "cannot write {shown}: not a file path"
        )));
    };
    std::fs::create_dir_all(parent).map_err(fail)?;
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(parent)
        .map_err(fail)?;
    let Some(real_dir) = crate::protect::fd_path(&dir) else {
        // No /proc: the path checks already done are what there is.
        return hermes_config::atomic_write(path, data).map_err(fail);
    };
    let target = real_dir.join(name);
    protected.check_write(&target)?;
    if protected
        .guarded_write(&target)
        .is_some_and(|g| Some(g) != approved)
    {
        return Err(ToolError::new(format!(
            "not written: {shown} now resolves to {}, which needs its own approval; try again",
            target.display()
        )));
    }
    use std::os::fd::AsRawFd;
    let via_fd = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(name);
    hermes_config::atomic_write(&via_fd, data).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf())
    }

    #[tokio::test]
    async fn reads_numbered_lines_with_paging() {
        let tmp = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("line {i}\r\n")).collect();
        std::fs::write(tmp.path().join("f.txt"), text).unwrap();
        let out = ReadFileTool
            .call(
                json!({"path": "f.txt", "offset": 3, "limit": 2}),
                &ctx(tmp.path()),
            )
            .await
            .unwrap();
        assert_eq!(out["content"], "3|line 3\n4|line 4");
        assert_eq!(out["total_lines"], 10);
        assert_eq!(out["next_offset"], 5);
        let out = ReadFileTool
            .call(json!({"path": "f.txt", "offset": 50}), &ctx(tmp.path()))
            .await
            .unwrap();
        assert!(out["note"].as_str().unwrap().contains("past the end"));
    }

    #[tokio::test]
    async fn refuses_binary_missing_and_directories() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let c = ctx(tmp.path());
        let e = ReadFileTool
            .call(json!({"path": "b.bin"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("binary file"), "{e}");
        let e = ReadFileTool
            .call(json!({"path": "nope"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("not found"), "{e}");
        let listed = ReadFileTool.call(json!({"path": "."}), &c).await.unwrap();
        assert_eq!(listed["is_directory"], true);
        assert_eq!(listed["content"], "b.bin");
        assert_eq!(listed["total_entries"], 1);
        let e = ReadFileTool
            .call(json!({"offset": 1}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("invalid arguments"), "{e}");
    }

    #[tokio::test]
    async fn a_directory_is_listed_sorted_and_capped() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("sub")).unwrap();
        for i in 0..(MAX_DIR_ENTRIES + 5) {
            std::fs::write(tmp.path().join(format!("f{i:04}.txt")), "x").unwrap();
        }
        let c = ctx(tmp.path());
        let listed = ReadFileTool.call(json!({"path": "."}), &c).await.unwrap();
        let content = listed["content"].as_str().unwrap();
        let lines: Vec<&str> = content.lines().collect();
        assert_eq!(lines.len(), MAX_DIR_ENTRIES);
        assert_eq!(lines[0], "f0000.txt");
        assert_eq!(listed["total_entries"], MAX_DIR_ENTRIES + 6);
        assert_eq!(listed["truncated"], true);
        let small = tempfile::tempdir().unwrap();
        std::fs::create_dir(small.path().join("docs")).unwrap();
        std::fs::write(small.path().join("a.md"), "x").unwrap();
        let listed = ReadFileTool
            .call(json!({"path": "."}), &ctx(small.path()))
            .await
            .unwrap();
        assert_eq!(listed["content"], "a.md\ndocs/");
        assert!(listed.get("truncated").is_none());
    }

    #[tokio::test]
    async fn long_files_are_capped_and_invalid_utf8_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let long_line = "y".repeat(5000);
        let text: String = (0..200).map(|_| format!("{long_line}\n")).collect();
        std::fs::write(tmp.path().join("big.txt"), text).unwrap();
        std::fs::write(tmp.path().join("bad.txt"), b"ok \xff\xfe end\n").unwrap();
        let c = ctx(tmp.path());
        let out = ReadFileTool
            .call(json!({"path": "big.txt", "limit": 2000}), &c)
            .await
            .unwrap();
        let content = out["content"].as_str().unwrap();
        assert!(content.len() <= MAX_CONTENT_CHARS + 100);
        assert!(content.contains("[line truncated]"));
        assert_eq!(out["truncated"], true);
        let out = ReadFileTool
            .call(json!({"path": "bad.txt"}), &c)
            .await
            .unwrap();
        assert_eq!(out["content"], "1|ok \u{fffd}\u{fffd} end");
    }

    #[tokio::test]
    async fn fifos_devices_and_hard_links_to_keys_fail_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::hard_link(home.join(".ssh/id_rsa"), tmp.path().join("notes.txt")).unwrap();
        let mut c = ctx(tmp.path());
        c.protected = std::sync::Arc::new(crate::protect::ProtectedPaths::new(
            Some(home.clone()),
            None,
        ));
        let e = ReadFileTool
            .call(json!({"path": "notes.txt"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("hard link"), "{e}");
        let made = std::process::Command::new("mkfifo")
            .arg(tmp.path().join("pipe"))
            .status();
        if made.is_ok_and(|s| s.success()) {
            // Nobody writes to the FIFO: a blocking read would never return.
            let e = tokio::time::timeout(
                std::time::Duration::from_secs(30),
                ReadFileTool.call(json!({"path": "pipe"}), &c),
            )
            .await
            .expect("read_file blocked on a FIFO")
            .unwrap_err();
            assert!(e.0.contains("not a regular file (a FIFO)"), "{e}");
        }
        let e = ReadFileTool
            .call(json!({"path": "/dev/zero", "limit": 1}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("character device"), "{e}");
    }

    #[tokio::test]
    async fn guarded_files_need_approval_and_nobody_unattended_gives_it() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".hermes/profiles/work")).unwrap();
        std::fs::write(home.join(".bashrc"), "alias ll='ls -l'\n").unwrap();
        let mut c = ctx(tmp.path());
        c.protected = std::sync::Arc::new(crate::protect::ProtectedPaths::new(
            Some(home.clone()),
            Some(home.join(".hermes")),
        ));
        for target in [
            home.join(".bashrc"),
            home.join(".hermes/profiles/work/config.yaml"),
            home.join(".hermes/active_profile"),
            home.join(".hermes/.env"),
            home.join(".ssh/authorized_keys"),
        ] {
            let e = WriteFileTool
                .call(
                    json!({"path": target.to_str().unwrap(), "content": "x"}),
                    &c,
                )
                .await
                .unwrap_err();
            assert!(e.0.contains("approvals.non_interactive: deny"), "{e}");
        }
        assert_eq!(
            std::fs::read_to_string(home.join(".bashrc")).unwrap(),
            "alias ll='ls -l'\n"
        );
        assert!(!home.join(".hermes/active_profile").exists());
        c.approvals = std::sync::Arc::new(crate::ApprovalGate::new(
            crate::ApprovalSettings {
                yolo: true,
                ..Default::default()
            },
            Default::default(),
            None,
        ));
        WriteFileTool
            .call(
                json!({"path": home.join(".bashrc").to_str().unwrap(), "content": "x"}),
                &c,
            )
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(home.join(".bashrc")).unwrap(), "x");
    }

    #[tokio::test]
    async fn writes_atomically_creating_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let c = ctx(tmp.path());
        let out = WriteFileTool
            .call(json!({"path": "a/b/c.txt", "content": "hi"}), &c)
            .await
            .unwrap();
        assert_eq!(out["created"], true);
        let out = WriteFileTool
            .call(json!({"path": "a/b/c.txt", "content": "hey"}), &c)
            .await
            .unwrap();
        assert_eq!(out["created"], false);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/b/c.txt")).unwrap(),
            "hey"
        );
        let e = WriteFileTool
            .call(json!({"path": "a", "content": "x"}), &c)
            .await
            .unwrap_err();
        assert!(e.0.contains("directory"));
    }
}
