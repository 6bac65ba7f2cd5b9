//! Saving an attachment's bytes into the cache directory the core chose: size-capped while
//! streaming (a lying or absent `Content-Length` cannot smuggle more), written to a temporary
//! name and renamed when complete, under a sanitised, unique file name.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;

use crate::platform::error::PlatformError;
use crate::platform::http::network;

/// A file name safe on every platform: the last path component, only letters, digits, `.`,
/// `-` and `_`, no leading dot, at most 100 characters; `file` when nothing is left.
pub(crate) fn safe_file_name(hint: Option<&str>) -> String {
    let base = hint
        .and_then(|h| h.rsplit(['/', '\\']).next())
        .unwrap_or("");
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = name.trim_start_matches('.').to_string();
    name = trimmed;
    if name.len() > 100 {
        // Keep the extension.
        let ext = name
            .rsplit_once('.')
            .map(|(_, e)| e)
            .filter(|e| e.len() <= 10)
            .map(str::to_string);
        name.truncate(90);
        if let Some(ext) = ext {
            name.push('.');
            name.push_str(&ext);
        }
    }
    if name.is_empty() || name.chars().all(|c| c == '_' || c == '.') {
        "file".to_string()
    } else {
        name
    }
}

/// A prefix that makes names unique in the cache directory.
fn unique_prefix() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{nanos:x}{:06x}", fastrand::u32(..0x100_0000))
}

/// Streams `response` into `dir` (created when missing) as `<unique>_<name>`; at most
/// `max_bytes` (0: no cap).
/// How long one attachment download may take.
const DOWNLOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

/// Sends `request` (an attachment's URL with whatever auth the platform wants) and saves the
/// answer as [`save`] does; a refusal is an API error saying `what` was refused.
pub(crate) async fn fetch(
    platform: &'static str,
    request: reqwest::RequestBuilder,
    what: &str,
    dir: &Path,
    name_hint: Option<&str>,
    max_bytes: u64,
) -> Result<PathBuf, PlatformError> {
    let response = request
        .timeout(DOWNLOAD_TIMEOUT)
        .send()
        .await
        .map_err(|e| network(platform, e))?;
    if !response.status().is_success() {
        return Err(PlatformError::Api {
            platform,
            status: response.status().as_u16(),
            message: format!("{what} download refused"),
        });
    }
    save(platform, response, dir, name_hint, max_bytes).await
}

pub(crate) async fn save(
    platform: &'static str,
    response: reqwest::Response,
    dir: &Path,
    name_hint: Option<&str>,
    max_bytes: u64,
) -> Result<PathBuf, PlatformError> {
    let name = safe_file_name(name_hint);
    if max_bytes > 0
        && let Some(len) = response.content_length()
        && len > max_bytes
    {
        return Err(PlatformError::TooLarge {
            what: name,
            size: len,
            limit: max_bytes,
        });
    }
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| PlatformError::io(dir, e))?;
    let prefix = unique_prefix();
    let final_path = dir.join(format!("{prefix}_{name}"));
    let part_path = dir.join(format!("{prefix}_{name}.part"));
    let mut file = tokio::fs::File::create(&part_path)
        .await
        .map_err(|e| PlatformError::io(&part_path, e))?;
    let result = async {
        let mut total: u64 = 0;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| network(platform, e))?;
            total += chunk.len() as u64;
            if max_bytes > 0 && total > max_bytes {
                return Err(PlatformError::TooLarge {
                    what: name.clone(),
                    size: total,
                    limit: max_bytes,
                });
            }
            file.write_all(&chunk)
                .await
                .map_err(|e| PlatformError::io(&part_path, e))?;
        }
        file.flush()
            .await
            .map_err(|e| PlatformError::io(&part_path, e))?;
        Ok(())
    }
    .await;
    drop(file);
    match result {
        Ok(()) => {
            tokio::fs::rename(&part_path, &final_path)
                .await
                .map_err(|e| PlatformError::io(&final_path, e))?;
            Ok(final_path)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&part_path).await;
            Err(e)
        }
    }
}

/// Writes `bytes` already in memory (an attachment that came base64 inside an API answer)
/// into `dir` as [`save`] names files: a temporary name renamed when complete.
pub(crate) async fn write_bytes(
    dir: &Path,
    name_hint: Option<&str>,
    bytes: &[u8],
) -> Result<PathBuf, PlatformError> {
    let name = safe_file_name(name_hint);
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| PlatformError::io(dir, e))?;
    let prefix = unique_prefix();
    let final_path = dir.join(format!("{prefix}_{name}"));
    let part_path = dir.join(format!("{prefix}_{name}.part"));
    let write = async {
        let mut file = tokio::fs::File::create(&part_path).await?;
        file.write_all(bytes).await?;
        file.flush().await
    };
    if let Err(e) = write.await {
        let _ = tokio::fs::remove_file(&part_path).await;
        return Err(PlatformError::io(&part_path, e));
    }
    tokio::fs::rename(&part_path, &final_path)
        .await
        .map_err(|e| PlatformError::io(&final_path, e))?;
    Ok(final_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_sanitised() {
        assert_eq!(safe_file_name(Some("report.pdf")), "report.pdf");
        assert_eq!(safe_file_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(safe_file_name(Some("..\\..\\x.txt")), "x.txt");
        assert_eq!(safe_file_name(Some(".bashrc")), "bashrc");
        assert_eq!(safe_file_name(Some("a b$c.png")), "a_b_c.png");
        assert_eq!(safe_file_name(None), "file");
        assert_eq!(safe_file_name(Some("...")), "file");
        let long = format!("{}.tar", "x".repeat(300));
        let s = safe_file_name(Some(&long));
        assert!(s.len() <= 100 && s.ends_with(".tar"), "{s}");
    }
}
