//! Safe file writes: a temporary file in the same directory, fsync, then rename over the
//! target, so a crash leaves either the old or the new content, never half of each.

use std::io::Write;
use std::path::Path;

/// Writes `data` to `path` atomically, creating parent directories and keeping the permissions
/// of an existing file.
pub fn atomic_write(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let existing_perms = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut tmp = tempfile::Builder::new()
        .prefix(".hermes-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_all()?;
    if let Some(perms) = existing_perms {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_creates_parents_and_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x/y/z.txt");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        let leftovers: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".hermes-tmp-"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
