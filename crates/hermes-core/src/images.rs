//! Images given to the model: a file read into an inline [`Image`] (type sniffed from its
//! first bytes, size capped), and the `@path` references to image files in a user's message
//! (`describe @shots/login.png`), which every frontend turns into image parts the same way.

use std::path::{Path, PathBuf};

use base64::Engine;
use hermes_protocol::Image;

/// The largest image given to a model: providers refuse bigger ones (OpenAI: 20 MB).
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// File name endings treated as images in `@path` references.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// Why an image could not be given to the model.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot read image {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("image {path} is {size} bytes; the limit is {MAX_IMAGE_BYTES}")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{path} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage { path: PathBuf },
}

/// The media type of image bytes, from their signature.
pub fn sniff_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Image bytes as an inline image; `None` when they are not an image we can send.
pub fn from_bytes(bytes: &[u8]) -> Option<Image> {
    let media_type = sniff_media_type(bytes)?;
    Some(Image::Data {
        media_type: media_type.to_string(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    })
}

/// Reads the image file at `path` (at most [`MAX_IMAGE_BYTES`]).
pub fn load(path: &Path) -> Result<Image, ImageError> {
    let read_err = |source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read_err)?.len();
    if size > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    let bytes = std::fs::read(path).map_err(read_err)?;
    from_bytes(&bytes).ok_or_else(|| ImageError::NotAnImage {
        path: path.to_path_buf(),
    })
}

/// The images a message references as `@path` (or `@file:path`) with an image file ending,
/// relative to `cwd` (`~/` is the home directory), each loaded; the message text is left as
/// it is. A reference that cannot be loaded is reported, not fatal.
pub fn referenced(message: &str, cwd: &Path) -> (Vec<Image>, Vec<ImageError>) {
    let mut images = Vec::new();
    let mut errors = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for path in reference_paths(message, cwd) {
        if seen.contains(&path) {
            continue;
        }
        match load(&path) {
            Ok(image) => images.push(image),
            Err(e) => errors.push(e),
        }
        seen.push(path);
    }
    (images, errors)
}

fn reference_paths(message: &str, cwd: &Path) -> Vec<PathBuf> {
    message
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|raw| raw.strip_prefix("file:").unwrap_or(raw))
        .map(|raw| raw.trim_end_matches([',', '.', ';', '!', '?', ')']))
        .map(|raw| raw.trim_matches(['"', '\'', '`']))
        .filter(|raw| {
            Path::new(raw)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        })
        .map(|raw| hermes_tools::paths::resolve(cwd, raw))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D, 0x49, 0x48, 0x44, 0x52,
    ];

    #[test]
    fn image_references_are_loaded_relative_to_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("shots")).unwrap();
        std::fs::write(dir.path().join("shots/a.png"), PNG_1X1).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "text").unwrap();
        std::fs::write(dir.path().join("fake.jpg"), "not a jpeg").unwrap();
        let (images, errors) = referenced(
            "compare @shots/a.png, @file:shots/a.png and @notes.txt with @fake.jpg or @gone.gif; mail me@x.org",
            dir.path(),
        );
        assert_eq!(
            images,
            vec![Image::Data {
                media_type: "image/png".into(),
                data: base64::engine::general_purpose::STANDARD.encode(PNG_1X1),
            }]
        );
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].ends_with("fake.jpg is not a PNG, JPEG, GIF or WebP image"));
        assert!(errors[1].starts_with("cannot read image"));
    }

    #[test]
    fn media_types_come_from_the_bytes() {
        assert_eq!(
            sniff_media_type(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some("image/jpeg")
        );
        assert_eq!(sniff_media_type(b"GIF89a...."), Some("image/gif"));
        assert_eq!(
            sniff_media_type(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(sniff_media_type(b"<svg"), None);
    }
}
