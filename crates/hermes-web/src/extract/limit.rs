//! Keeping a page within the model's budget, as the Python Hermes does: inline base64 images
//! become `[IMAGE: alt]` placeholders; a page within the per-page character budget is returned
//! whole; a longer one is cut (no model summarises it, as in the Python Hermes 0.19) to a head
//! (75 %) and tail (25 %) on line boundaries with a footer saying how much was
//! shown and where the full text was saved (`$HERMES_HOME/cache/web/<host>-<hash>.md`, at most
//! 2,000,000 characters) so `read_file` can page through the middle.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use sha2::{Digest, Sha256};

/// The per-page budget when neither the call nor `web.extract_char_limit` sets one.
pub const DEFAULT_CHAR_LIMIT: usize = 15_000;
pub const MIN_CHAR_LIMIT: usize = 2_000;
pub const MAX_CHAR_LIMIT: usize = 500_000;
/// Largest copy of a page written to the cache.
const MAX_STORED_CHARS: usize = 2_000_000;

static MD_B64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"!\[(?P<alt>[^\]]*)\]\(\s*data:image/[^;]+;base64,[A-Za-z0-9+/=\s]+\)").ok()
});
static PAREN_B64: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\(\s*data:image/[^;]+;base64,[A-Za-z0-9+/=\s]+\)").ok());
static BARE_B64: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"data:image/[^;]+;base64,[A-Za-z0-9+/=]+").ok());

/// Inline base64 images (token bombs) replaced by placeholders keeping the alt text.
pub fn strip_inline_images(text: &str) -> String {
    let mut out = text.to_string();
    if let Some(re) = MD_B64.as_ref() {
        out = re
            .replace_all(&out, |c: &regex::Captures<'_>| {
                let alt = c.name("alt").map_or("", |m| m.as_str().trim());
                if alt.is_empty() {
                    "[IMAGE]".to_string()
                } else {
                    format!("[IMAGE: {alt}]")
                }
            })
            .into_owned();
    }
    for re in [PAREN_B64.as_ref(), BARE_B64.as_ref()]
        .into_iter()
        .flatten()
    {
        out = re.replace_all(&out, "[IMAGE]").into_owned();
    }
    out
}

/// `content` cut to `limit` characters with the footer, the full text saved under `cache_dir`.
/// Returns the text and whether it was cut.
pub fn truncate_with_footer(
    content: &str,
    url: &str,
    limit: usize,
    cache_dir: &Path,
) -> (String, bool) {
    let total = content.chars().count();
    if total <= limit {
        return (content.to_string(), false);
    }
    let head_budget = limit * 3 / 4;
    let tail_budget = limit - head_budget;
    let mut head: String = content.chars().take(head_budget).collect();
    let mut tail: String = content.chars().skip(total - tail_budget).collect();
    // Cut on line boundaries when that loses less than half of each part.
    if let Some(nl) = head.rfind('\n')
        && head[..nl].chars().count() > head_budget / 2
    {
        head.truncate(nl);
    }
    if let Some(nl) = tail.find('\n')
        && tail[..nl].chars().count() < tail_budget / 2
    {
        tail = tail[nl + 1..].to_string();
    }
    let stored = store(url, content, cache_dir);
    let rule = "─".repeat(8);
    let mut footer = vec![
        String::new(),
        format!("{rule} [TRUNCATED] {rule}"),
        format!(
            "Showing {} chars (head) + {} chars (tail) of {total} total characters.",
            head.chars().count(),
            tail.chars().count()
        ),
    ];
    match stored {
        Some(path) => {
            let middle_line = head.matches('\n').count() + 2;
            footer.push(format!("Full text saved to: {}", path.display()));
            footer.push(format!(
                "To read the omitted middle: read_file path=\"{}\" offset={middle_line} limit=200",
                path.display()
            ));
        }
        None => footer.push(
            "The full text could not be saved; extract a more specific URL or use the browser."
                .into(),
        ),
    }
    footer.push("─".repeat(29));
    (
        format!(
            "{head}\n\n[... middle omitted, see the footer ...]\n\n{tail}\n{}",
            footer.join("\n")
        ),
        true,
    )
}

/// Writes the page to the cache; `None` when it cannot (the truncated text is still useful).
fn store(url: &str, content: &str, cache_dir: &Path) -> Option<PathBuf> {
    std::fs::create_dir_all(cache_dir).ok()?;
    let host = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| "page".into());
    let slug: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(60)
        .collect();
    let slug = slug.trim_matches('-');
    let slug = if slug.is_empty() { "page" } else { slug };
    let digest = Sha256::digest(url.as_bytes());
    let hex: String = digest.iter().take(5).map(|b| format!("{b:02x}")).collect();
    let path = cache_dir.join(format!("{slug}-{hex}.md"));
    let total = content.chars().count();
    let text = if total > MAX_STORED_CHARS {
        let kept: String = content.chars().take(MAX_STORED_CHARS).collect();
        format!("{kept}\n\n[... stored copy cut at {MAX_STORED_CHARS} of {total} characters ...]")
    } else {
        content.to_string()
    };
    hermes_config::atomic_write(&path, text.as_bytes()).ok()?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_images_become_placeholders() {
        let t = "a ![chart](data:image/png;base64,iVBORw0KGgo=) b (data:image/gif;base64,R0lG) c data:image/jpeg;base64,/9j/4AAQ d ![x](https://e.com/i.png)";
        assert_eq!(
            strip_inline_images(t),
            "a [IMAGE: chart] b [IMAGE] c [IMAGE] d ![x](https://e.com/i.png)"
        );
    }

    #[test]
    fn long_pages_keep_head_and_tail_and_say_where_the_rest_is() {
        let dir = tempfile::tempdir().unwrap();
        let content: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let (short, cut) = truncate_with_footer("tiny", "https://e.com/", 2000, dir.path());
        assert_eq!((short.as_str(), cut), ("tiny", false));
        let (text, cut) =
            truncate_with_footer(&content, "https://docs.example.com/a", 2000, dir.path());
        assert!(cut);
        assert!(text.starts_with("line 0\nline 1\n"));
        assert!(text.contains("line 1999"));
        assert!(!text.contains("line 1000\n"));
        assert!(text.contains("[TRUNCATED]"));
        let saved = text
            .lines()
            .find_map(|l| l.strip_prefix("Full text saved to: "))
            .unwrap();
        assert!(saved.contains("docs.example.com-"), "{saved}");
        assert_eq!(std::fs::read_to_string(saved).unwrap(), content);
        assert!(text.contains("offset="));
    }
}
