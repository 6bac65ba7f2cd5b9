//! Reading Matrix message events: relations (`m.thread` roots, `m.in_reply_to`, `m.replace`
//! edits), the reply fallback some clients still put in `body`, mentions of the bot as the
//! Python Hermes detects them (`m.mentions.user_ids` first, then the full user id, the
//! localpart as a word, or a `matrix.to` pill in `formatted_body`), and attachments
//! (`m.image`, `m.file`, `m.audio`, `m.video` with an `mxc://` URL).

use serde_json::Value;

use crate::platform::types::{Attachment, AttachmentKind, FileSource};

/// How a message relates to others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Relation {
    /// The thread's root event (`rel_type: m.thread`).
    pub thread_root: Option<String>,
    /// The event answered (`m.in_reply_to`), unless it is only a thread's fallback.
    pub reply_to: Option<String>,
    /// `rel_type: m.replace`: an edit of an earlier message.
    pub is_edit: bool,
}

pub(crate) fn relation(content: &Value) -> Relation {
    let rel = &content["m.relates_to"];
    let rel_type = rel["rel_type"].as_str();
    let thread_root = (rel_type == Some("m.thread"))
        .then(|| rel["event_id"].as_str().map(str::to_string))
        .flatten();
    let falling_back = rel["is_falling_back"].as_bool().unwrap_or(false);
    let reply_to = rel["m.in_reply_to"]["event_id"]
        .as_str()
        .filter(|_| !(thread_root.is_some() && falling_back))
        .map(str::to_string);
    Relation {
        thread_root,
        reply_to,
        is_edit: rel_type == Some("m.replace"),
    }
}

/// `body` without the quoted reply fallback (`> <@user> text` lines and the blank line after).
pub(crate) fn strip_reply_fallback(body: &str) -> &str {
    if !body.starts_with("> ") {
        return body;
    }
    let mut rest = body;
    while rest.starts_with('>') {
        match rest.find('\n') {
            Some(i) => rest = &rest[i + 1..],
            None => return "",
        }
    }
    rest.strip_prefix('\n').unwrap_or(rest)
}

/// The bot's localpart (`@hermes:server` → `hermes`).
fn localpart(me: &str) -> Option<&str> {
    let (local, _) = me.split_once(':')?;
    Some(local.trim_start_matches('@')).filter(|l| !l.is_empty())
}

/// Whether `word` occurs in `text` as a whole word (ASCII case-insensitive).
fn has_word(text: &str, word: &str) -> bool {
    let lower = text.to_lowercase();
    let word = word.to_lowercase();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    lower.match_indices(&word).any(|(i, _)| {
        let before = lower[..i].chars().next_back();
        let after = lower[i + word.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// Whether the message addresses the bot `me`.
pub(crate) fn mentions(me: &str, content: &Value, body: &str) -> bool {
    if content["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(me)))
    {
        return true;
    }
    if body.contains(me) {
        return true;
    }
    if let Some(local) = localpart(me)
        && has_word(body, local)
    {
        return true;
    }
    content["formatted_body"]
        .as_str()
        .is_some_and(|html| html.contains(&format!("matrix.to/#/{me}")))
}

/// `body` without explicit mentions of the bot (`@bot:server`, `@bot`, a leading `bot:`):
/// a bare word equal to the localpart stays ("Hermes Agent" keeps its first word).
pub(crate) fn strip_mention(me: &str, body: &str) -> String {
    let mut text = body.replace(me, "");
    if let Some(local) = localpart(me) {
        let at = format!("@{local}");
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(i) = rest.to_ascii_lowercase().find(&at.to_ascii_lowercase()) {
            let after = rest[i + at.len()..].chars().next();
            out.push_str(&rest[..i]);
            if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push_str(&rest[i..i + at.len()]);
            }
            rest = &rest[i + at.len()..];
        }
        out.push_str(rest);
        text = out;
        // A display-name style address at the start ("hermes: do this").
        let trimmed = text.trim_start();
        for sep in [':', ','] {
            let prefix = format!("{local}{sep}");
            if trimmed.len() >= prefix.len()
                && trimmed.is_char_boundary(prefix.len())
                && trimmed[..prefix.len()].eq_ignore_ascii_case(&prefix)
            {
                text = trimmed[prefix.len()..].to_string();
                break;
            }
        }
    }
    let text = text.trim();
    let text = text
        .strip_prefix(':')
        .or_else(|| text.strip_prefix(','))
        .unwrap_or(text);
    text.trim().to_string()
}

/// The attachment of a media message, if it is one.
pub(crate) fn attachment(content: &Value) -> Option<Attachment> {
    let kind = match content["msgtype"].as_str()? {
        "m.image" => AttachmentKind::Image,
        "m.audio" if content.get("org.matrix.msc3245.voice").is_some() => AttachmentKind::Voice,
        "m.audio" => AttachmentKind::Audio,
        "m.video" => AttachmentKind::Video,
        "m.file" => AttachmentKind::Document,
        _ => return None,
    };
    let url = content["url"]
        .as_str()
        .filter(|u| u.starts_with("mxc://"))?;
    let info = &content["info"];
    Some(Attachment {
        kind,
        file_name: content["filename"]
            .as_str()
            .or_else(|| content["body"].as_str())
            .map(str::to_string),
        mime: info["mimetype"].as_str().map(str::to_string),
        size: info["size"].as_u64(),
        source: FileSource::Url(url.to_string()),
    })
}

/// `mxc://server/media` → `(server, media)`, both plain segments.
pub(crate) fn parse_mxc(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("mxc://")?;
    let (server, media) = rest.split_once('/')?;
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 255
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:[]".contains(&b))
    };
    (ok(server) && ok(media)).then_some((server, media))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ME: &str = "@hermes:localhost";

    #[test]
    fn relations_of_threads_replies_and_edits() {
        let r = relation(
            &json!({"m.relates_to": {"rel_type": "m.thread", "event_id": "$root",
            "is_falling_back": true, "m.in_reply_to": {"event_id": "$last"}}}),
        );
        assert_eq!(r.thread_root.as_deref(), Some("$root"));
        assert_eq!(r.reply_to, None);
        let r = relation(&json!({"m.relates_to": {"m.in_reply_to": {"event_id": "$x"}}}));
        assert_eq!(r.reply_to.as_deref(), Some("$x"));
        assert!(
            relation(&json!({"m.relates_to": {"rel_type": "m.replace", "event_id": "$e"}})).is_edit
        );
        assert_eq!(relation(&json!({"body": "x"})), Relation::default());
    }

    #[test]
    fn reply_fallback_is_removed() {
        assert_eq!(
            strip_reply_fallback("> <@a:b> hi\n> more\n\nmy answer"),
            "my answer"
        );
        assert_eq!(strip_reply_fallback("plain > text"), "plain > text");
        assert_eq!(strip_reply_fallback("> only quote"), "");
    }

    #[test]
    fn mentions_follow_python() {
        assert!(mentions(
            ME,
            &json!({"m.mentions": {"user_ids": [ME]}}),
            "hi"
        ));
        assert!(mentions(ME, &json!({}), "hey @hermes:localhost what"));
        assert!(mentions(ME, &json!({}), "Hermes, what time is it"));
        assert!(!mentions(ME, &json!({}), "hermesian thoughts"));
        assert!(mentions(
            ME,
            &json!({"formatted_body": "<a href=\"https://matrix.to/#/@hermes:localhost\">H</a>"}),
            "H: hi"
        ));
        assert!(!mentions(ME, &json!({}), "hello everyone"));
    }

    #[test]
    fn explicit_mentions_are_stripped_and_words_kept() {
        assert_eq!(
            strip_mention(ME, "@hermes:localhost: what is 2+2?"),
            "what is 2+2?"
        );
        assert_eq!(strip_mention(ME, "hermes: do it"), "do it");
        assert_eq!(strip_mention(ME, "ask @hermes now"), "ask  now");
        assert_eq!(
            strip_mention(ME, "Hermes Agent rocks"),
            "Hermes Agent rocks"
        );
        assert_eq!(strip_mention(ME, "@hermesbot hi"), "@hermesbot hi");
    }

    #[test]
    fn media_messages_become_attachments() {
        let a = attachment(&json!({"msgtype": "m.image", "body": "cat.png",
            "url": "mxc://localhost/abc", "info": {"mimetype": "image/png", "size": 12}}))
        .unwrap();
        assert_eq!(a.kind, AttachmentKind::Image);
        assert_eq!(a.file_name.as_deref(), Some("cat.png"));
        assert_eq!(a.size, Some(12));
        assert!(attachment(&json!({"msgtype": "m.file", "url": "https://evil"})).is_none());
        assert!(attachment(&json!({"msgtype": "m.text", "body": "x"})).is_none());
        assert_eq!(parse_mxc("mxc://localhost/abc"), Some(("localhost", "abc")));
        assert_eq!(parse_mxc("mxc://localhost/../x"), None);
        assert_eq!(parse_mxc("mxc://a/b/c"), None);
    }
}
