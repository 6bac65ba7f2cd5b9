//! Recovery from a context overflow the ordinary pass cannot fix. When everything sits in the
//! protected head and tail (two huge `read_file` results right after the user's question),
//! pruning and summarising the middle change nothing; the request must still shrink. So,
//! until the request fits the window (the one the provider's error named, remembered for the
//! session): the largest tool results are cut to their head and tail around a marker, then any
//! other message is, each time to the same size (the largest first), and the full text of
//! every cut message is kept in a file under `$HERMES_HOME/cache/tool_results/` that the marker
//! names, so the agent can `read_file` the part it needs.

use std::path::{Path, PathBuf};

use hermes_protocol::{Message, Role, ToolSchema};
use serde_json::Value;

use super::tokens;

/// Characters of a message that are always kept when cutting.
const MIN_KEEP: usize = 600;
/// Spilled results older than this are removed when new ones are written.
const SPILL_MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 86_400);
/// Opens the marker of a cut message; also how a cut one is recognised.
pub const CUT_MARK: &str = "[... cut to fit the context window:";

/// Tokens of a request, never under-counted: the larger of the byte estimate and o200k.
pub fn request_tokens(system: &str, tools: &[ToolSchema], messages: &[Message]) -> u64 {
    tokens::rough_request(system, tools, messages)
        .max(tokens::exact_request(system, tools, messages))
}

/// The prompt size a window leaves room for: a quarter is kept for the answer (at most 8,192
/// tokens, at least 256).
pub fn prompt_budget(window: u64) -> u64 {
    window.saturating_sub((window / 4).clamp(256, 8_192))
}

/// What cutting did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Cuts {
    pub messages: usize,
    pub spilled: Vec<PathBuf>,
}

/// Cuts messages until the request is at most `target` tokens, tool results first: each pass
/// lowers one common size limit (a water level) so the largest messages lose the most.
/// Returns what was cut; the request may still be too large when even the minimum does not
/// fit (the system prompt and tools alone, say).
pub fn cut_to_fit(
    system: &str,
    tools: &[ToolSchema],
    messages: &mut [Message],
    target: u64,
    spill_dir: Option<&Path>,
) -> Cuts {
    let mut cuts = Cuts::default();
    for tool_results_only in [true, false] {
        for _ in 0..8 {
            let size = request_tokens(system, tools, messages);
            if size <= target {
                return cuts;
            }
            // Bytes to remove, with a margin for the markers and the estimate's slack.
            let excess = ((size - target) as usize).saturating_mul(4) + 1_024;
            let eligible: Vec<usize> = messages
                .iter()
                .enumerate()
                .filter(|(_, m)| {
                    m.role != Role::System
                        && (!tool_results_only || m.role == Role::Tool)
                        && m.content.chars().count() > MIN_KEEP
                })
                .map(|(i, _)| i)
                .collect();
            if eligible.is_empty() {
                break;
            }
            let sizes: Vec<usize> = eligible
                .iter()
                .map(|&i| messages[i].content.chars().count())
                .collect();
            let level = water_level(&sizes, excess).max(MIN_KEEP);
            let mut cut_any = false;
            for &i in &eligible {
                if messages[i].content.chars().count() > level {
                    let spilled = cut(&mut messages[i], level, spill_dir);
                    cuts.messages += 1;
                    cuts.spilled.extend(spilled);
                    cut_any = true;
                }
            }
            if !cut_any {
                break;
            }
        }
    }
    cuts.spilled.sort();
    cuts.spilled.dedup();
    cuts
}

/// The size limit `L` such that cutting every size above `L` down to `L` removes at least
/// `excess` characters (0 when even that is not enough).
fn water_level(sizes: &[usize], excess: usize) -> usize {
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let mut removed_above = 0usize;
    for (k, window) in sorted.windows(2).enumerate() {
        // Lowering the level from sorted[k] to sorted[k + 1] removes this from the k+1 largest.
        let step = (window[0] - window[1]) * (k + 1);
        if removed_above + step >= excess {
            let need = excess - removed_above;
            return window[0] - need.div_ceil(k + 1);
        }
        removed_above += step;
    }
    let n = sorted.len();
    let last = sorted.last().copied().unwrap_or(0);
    let need = excess.saturating_sub(removed_above);
    last.saturating_sub(need.div_ceil(n.max(1)))
}

/// Cuts one message to about `keep` characters (two thirds head, one third tail) around a
/// marker naming the file that keeps the whole text. Returns the file, if one was written.
fn cut(message: &mut Message, keep: usize, spill_dir: Option<&Path>) -> Option<PathBuf> {
    let original = std::mem::take(&mut message.content);
    // A message cut before keeps pointing at the file of its first cut.
    let previous_file = original
        .find(CUT_MARK)
        .and_then(|i| original[i..].split("saved in ").nth(1))
        .and_then(|rest| rest.split(" (read_file").next())
        .map(PathBuf::from);
    let spilled = match previous_file {
        Some(p) => Some(p),
        None => spill_dir.and_then(|dir| spill(dir, message, &original)),
    };
    let total = original.chars().count();
    let head_len = keep * 2 / 3;
    let tail_len = keep - head_len;
    let head: String = original.chars().take(head_len).collect();
    let tail: String = original
        .chars()
        .skip(total.saturating_sub(tail_len))
        .collect();
    let whole = match &spilled {
        Some(p) => format!(
            "the whole text is saved in {} (read_file it with offset and limit for the part you need)",
            p.display()
        ),
        None => "the whole text could not be saved".to_string(),
    };
    message.content = format!(
        "{head}\n{CUT_MARK} {} of {total} characters left out; {whole} ...]\n{tail}",
        total - head.chars().count() - tail.chars().count()
    );
    spilled
}

/// Writes the text of a message to `dir` (read_file and terminal results as their plain
/// text, so the file has lines to page through). Old files there are removed first.
fn spill(dir: &Path, message: &Message, content: &str) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    remove_old(dir);
    let text = match serde_json::from_str::<Value>(content) {
        Ok(Value::Object(map)) => ["content", "output"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| content.to_string()),
        _ => content.to_string(),
    };
    let id: String = message
        .tool_call_id
        .as_deref()
        .unwrap_or(message.role.as_str())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = dir.join(format!("{stamp:x}-{id}.txt"));
    hermes_config::atomic_write(&path, text.as_bytes()).ok()?;
    Some(path)
}

fn remove_old(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > SPILL_MAX_AGE);
        if old {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_protocol::ToolCall;

    fn lines(n: usize, width: usize) -> String {
        (1..=n)
            .map(|i| {
                format!(
                    "{i}|{}\n",
                    "lorem ipsum dolor sit amet ".repeat(width / 27 + 1)
                )
            })
            .collect()
    }

    fn read(id: &str, content: &str) -> [Message; 2] {
        [
            Message::assistant_with_tools(
                "",
                vec![ToolCall {
                    id: id.into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            ),
            Message::tool_result(
                id,
                "read_file",
                serde_json::json!({"content": content}).to_string(),
            ),
        ]
    }

    #[test]
    fn water_levels_remove_what_is_needed_from_the_largest() {
        assert_eq!(water_level(&[100, 50], 30), 70);
        assert_eq!(water_level(&[100, 50], 60), 45);
        assert_eq!(water_level(&[100, 100], 40), 80);
        assert_eq!(water_level(&[10], 100), 0);
    }

    #[test]
    fn two_large_results_are_cut_to_fit_and_kept_in_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut messages = vec![Message::user("Compare a.txt and b.txt")];
        messages.extend(read("a", &lines(400, 150)));
        messages.extend(read("b", &lines(400, 150)));
        let before = request_tokens("sys", &[], &messages);
        assert!(before > 30_000, "{before}");
        let target = prompt_budget(16_384);
        let cuts = cut_to_fit("sys", &[], &mut messages, target, Some(dir.path()));
        let after = request_tokens("sys", &[], &messages);
        assert!(after <= target, "{after} > {target}");
        assert_eq!((cuts.messages, cuts.spilled.len()), (2, 2));
        assert_eq!(messages[0].content, "Compare a.txt and b.txt");
        for (m, file) in [
            (&messages[2], &cuts.spilled[0]),
            (&messages[4], &cuts.spilled[1]),
        ] {
            assert!(m.content.contains(CUT_MARK), "{}", m.content);
            let kept = std::fs::read_to_string(file).unwrap();
            assert!(kept.starts_with("1|lorem") && kept.lines().count() == 400);
            assert!(m.content.contains(&file.display().to_string()));
        }
        // Cutting again keeps pointing at the same files.
        let again = cut_to_fit("sys", &[], &mut messages, target / 2, Some(dir.path()));
        assert!(again.spilled.iter().all(|p| cuts.spilled.contains(p)));
        assert!(request_tokens("sys", &[], &messages) <= target / 2);
    }

    #[test]
    fn other_messages_are_cut_when_tool_results_are_not_enough() {
        let mut messages = vec![Message::user(lines(300, 150))];
        let cuts = cut_to_fit("sys", &[], &mut messages, 2_000, None);
        assert_eq!(cuts.messages, 1);
        assert!(messages[0].content.contains("could not be saved"));
        assert!(request_tokens("sys", &[], &messages) <= 2_000);
        // Nothing can make the system prompt smaller.
        let mut none: Vec<Message> = Vec::new();
        let huge = "word ".repeat(50_000);
        assert_eq!(
            cut_to_fit(&huge, &[], &mut none, 1_000, None),
            Cuts::default()
        );
    }
}
