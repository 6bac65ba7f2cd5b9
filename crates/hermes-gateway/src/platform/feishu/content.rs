//! What the gateway sends, as Feishu's `msg_type` and `content` (a JSON document in a
//! string, <https://open.feishu.cn/document/server-docs/im-v1/message-content-description/create_json>),
//! following Python: plain text as `text` (`{"text"}`); text with markdown as `post` with
//! `md` elements (`{"zh_cn": {"content": [[{"tag": "md", "text"}]]}}`), fenced code blocks
//! in rows of their own (Feishu's `md` renderer swallows what follows a fence otherwise), the
//! choice made once per answer so every part of a split answer renders alike; buttons as an
//! `interactive` card: the text as a `markdown` element over an `action` element of buttons,
//! each carrying `{"hermes_data": <data>}` as its value (it comes back in the
//! `card.action.trigger` callback).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use crate::platform::types::{Button, ButtonStyle};

/// Python's `_MARKDOWN_HINT_RE`: a table, a heading, a list, a rule, code, emphasis, a link
/// or a quote makes the answer a `post`.
static MARKDOWN_HINT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(^\|.*\|\s*\n\|[-:|\s]+\|)|(^#{1,6}\s)|(^\s*[-*]\s)|(^\s*\d+\.\s)|(^\s*---+\s*$)|(```)|(`[^`\n]+`)|(\*\*[^*\n].+?\*\*)|(~~[^~\n].+?~~)|(<u>.+?</u>)|(\*[^*\n]+\*)|(\[[^\]]+\]\([^)]+\))|(^>\s)",
    )
    .ok()
});

/// Whether `text` reads as markdown.
pub(crate) fn is_markdown(text: &str) -> bool {
    MARKDOWN_HINT.as_ref().is_some_and(|re| re.is_match(text))
}

/// Whether a line opens or closes a fence.
fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// The `post` rows of `text`: prose and each fenced block in rows of their own.
fn post_rows(text: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |current: &mut Vec<&str>, rows: &mut Vec<Value>| {
        let segment = current.join("\n");
        if !segment.trim().is_empty() {
            rows.push(json!([{"tag": "md", "text": segment}]));
        }
        current.clear();
    };
    for line in text.lines() {
        if is_fence(line) {
            if !in_code {
                flush(&mut current, &mut rows);
            }
            current.push(line);
            in_code = !in_code;
            if !in_code {
                flush(&mut current, &mut rows);
            }
            continue;
        }
        current.push(line);
    }
    flush(&mut current, &mut rows);
    if rows.is_empty() {
        rows.push(json!([{"tag": "md", "text": text}]));
    }
    rows
}

/// `(msg_type, content)` for a part of an answer.
pub(crate) fn text_or_post(part: &str, as_post: bool) -> (&'static str, String) {
    if as_post {
        let content = json!({"zh_cn": {"content": post_rows(part)}});
        ("post", content.to_string())
    } else {
        ("text", json!({"text": part}).to_string())
    }
}

fn button(b: &Button) -> Value {
    let kind = match b.style {
        ButtonStyle::Primary => "primary",
        ButtonStyle::Danger => "danger",
        ButtonStyle::Default => "default",
    };
    json!({
        "tag": "button",
        "text": {"tag": "plain_text", "content": b.label},
        "type": kind,
        "value": {"hermes_data": b.data},
    })
}

/// An interactive card: `text` as markdown, the buttons under it (none: the card of an
/// edited message, its question answered).
pub(crate) fn card(text: &str, buttons: &[Button]) -> Value {
    let mut elements = vec![json!({"tag": "markdown", "content": text})];
    if !buttons.is_empty() {
        let actions: Vec<Value> = buttons.iter().map(button).collect();
        elements.push(json!({"tag": "action", "actions": actions}));
    }
    json!({"config": {"wide_screen_mode": true}, "elements": elements})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_stays_text_and_markdown_becomes_a_post() {
        assert!(!is_markdown("Hello Ann, how are you?"));
        for md in [
            "**bold** here",
            "# Title",
            "- item",
            "1. first",
            "see `x`",
            "[a](https://b)",
            "> quote",
        ] {
            assert!(is_markdown(md), "{md}");
        }
        let (kind, content) = text_or_post("hi \"you\"", false);
        assert_eq!(kind, "text");
        assert_eq!(
            serde_json::from_str::<Value>(&content).unwrap(),
            json!({"text": "hi \"you\""})
        );
    }

    #[test]
    fn fenced_code_gets_its_own_row() {
        let (kind, content) = text_or_post("Run this:\n```sh\nls\n```\nThen **look**.", true);
        assert_eq!(kind, "post");
        let v: Value = serde_json::from_str(&content).unwrap();
        let rows = v["zh_cn"]["content"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{v}");
        assert_eq!(rows[0][0]["text"], "Run this:");
        assert_eq!(rows[1][0]["text"], "```sh\nls\n```");
        assert_eq!(rows[2][0]["text"], "Then **look**.");
        assert_eq!(rows[2][0]["tag"], "md");
    }

    #[test]
    fn buttons_become_a_card() {
        let c = card(
            "Run `rm`?",
            &[
                Button::new("Approve once", "g:a:1:once").styled(ButtonStyle::Primary),
                Button::new("Deny", "g:a:1:deny").styled(ButtonStyle::Danger),
            ],
        );
        assert_eq!(
            c["elements"][0],
            json!({"tag": "markdown", "content": "Run `rm`?"})
        );
        let actions = &c["elements"][1]["actions"];
        assert_eq!(actions[0]["value"], json!({"hermes_data": "g:a:1:once"}));
        assert_eq!(actions[0]["type"], "primary");
        assert_eq!(actions[1]["text"]["content"], "Deny");
        assert_eq!(card("done", &[])["elements"].as_array().unwrap().len(), 1);
    }
}
