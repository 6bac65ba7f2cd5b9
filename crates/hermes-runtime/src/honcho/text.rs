//! The Honcho provider's text rules, Python's exactly: which prompts are too trivial to
//! recall for, how long messages are chunked, how recall is cut to the token budget, the
//! dialectic's per-pass prompts and reasoning levels, how ids and session names are made.

use std::path::Path;

use super::config::{HonchoConfig, LEVELS, SessionStrategy};

/// Honcho's id pattern is `^[a-zA-Z0-9_-]+$`: anything else becomes `-`.
pub fn sanitize_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Runs of other characters become one `-`, trimmed (session titles, gateway keys).
fn slug(text: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
            dash = false;
        } else if !dash {
            out.push('-');
            dash = true;
        }
    }
    out.trim_matches('-').to_string()
}

/// Honcho refuses session ids over 100 characters: a longer one keeps a prefix and gets a
/// hash of the original key, so two long keys sharing a prefix stay apart.
fn limit_session_id(sanitized: String, original: &str) -> String {
    const MAX: usize = 100;
    const HASH: usize = 8;
    if sanitized.len() <= MAX {
        return sanitized;
    }
    let digest = sha256_hex(original.as_bytes());
    let prefix = sanitized[..MAX - HASH - 1].trim_end_matches('-');
    format!("{prefix}-{}", &digest[..HASH])
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    use std::fmt::Write;
    sha2::Sha256::digest(bytes)
        .iter()
        .fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Where a session's conversation comes from, for naming its Honcho session.
#[derive(Debug, Clone)]
pub struct SessionOrigin<'a> {
    pub cwd: &'a Path,
    /// The Hermes session id.
    pub session_id: &'a str,
    /// The gateway's key of the chat (`agent:main:telegram:dm:42`), or an API client's key.
    pub chat_key: Option<&'a str>,
}

/// The Honcho session name (Python's `resolve_session_name`): a chat's key, else by
/// `sessionStrategy`; the `sessions` map names directories by hand.
pub fn session_name(cfg: &HonchoConfig, origin: &SessionOrigin<'_>) -> String {
    let prefixed = |base: String| match (&cfg.peer_name, cfg.session_peer_prefix) {
        (Some(peer), true) => format!("{peer}-{base}"),
        _ => base,
    };
    if let Some(key) = origin.chat_key {
        let s = slug(key);
        if !s.is_empty() {
            return limit_session_id(s, key);
        }
    }
    if cfg.session_strategy == SessionStrategy::PerSession && !origin.session_id.is_empty() {
        return prefixed(origin.session_id.to_string());
    }
    let cwd = origin.cwd.display().to_string();
    if let Some(name) = cfg.sessions.get(&cwd) {
        return name.clone();
    }
    let dir_name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into())
    };
    match cfg.session_strategy {
        SessionStrategy::PerRepo => {
            let root = origin
                .cwd
                .ancestors()
                .find(|a| a.join(".git").exists())
                .unwrap_or(origin.cwd);
            prefixed(dir_name(root))
        }
        SessionStrategy::PerDirectory | SessionStrategy::PerSession => {
            prefixed(dir_name(origin.cwd))
        }
        SessionStrategy::Global => cfg.workspace.clone(),
    }
}

/// The user's peer id (Python's `_resolve_user_peer_id`): pinned to `peerName`, else the
/// chat user's alias, prefixed runtime id or raw id, else `peerName`, else one made from
/// the session key.
pub fn user_peer(cfg: &HonchoConfig, runtime_user: Option<&str>, key: &str) -> String {
    if cfg.pin_user_peer
        && let Some(name) = &cfg.peer_name
    {
        return sanitize_id(name);
    }
    if let Some(user) = runtime_user.map(str::trim).filter(|u| !u.is_empty()) {
        if let Some(alias) = cfg.user_peer_aliases.get(user) {
            return sanitize_id(alias);
        }
        if !cfg.runtime_peer_prefix.is_empty() {
            let raw = format!("{}{user}", cfg.runtime_peer_prefix);
            let sanitized = sanitize_id(&raw);
            let explicit: Vec<String> = cfg
                .peer_name
                .iter()
                .chain(cfg.user_peer_aliases.values())
                .map(|p| sanitize_id(p.trim()))
                .collect();
            if sanitized != raw || explicit.contains(&sanitized) {
                let digest = sha256_hex(raw.as_bytes());
                for len in [8, 12, 16, 24, 32] {
                    let candidate = format!("{sanitized}-{}", &digest[..len]);
                    if !explicit.contains(&candidate) {
                        return candidate;
                    }
                }
                return format!("{sanitized}-{digest}");
            }
            return sanitized;
        }
        return sanitize_id(user);
    }
    if let Some(name) = &cfg.peer_name {
        return sanitize_id(name);
    }
    let (channel, chat) = key.split_once(':').unwrap_or(("default", key));
    sanitize_id(&format!("user-{channel}-{chat}"))
}

/// Acknowledgements, slash commands and empty input carry nothing to recall for.
pub fn is_trivial(prompt: &str) -> bool {
    const TRIVIAL: &[&str] = &[
        "yes",
        "no",
        "ok",
        "okay",
        "sure",
        "thanks",
        "thank you",
        "y",
        "n",
        "yep",
        "nope",
        "yeah",
        "nah",
        "continue",
        "go ahead",
        "do it",
        "proceed",
        "got it",
        "cool",
        "nice",
        "great",
        "done",
        "next",
        "lgtm",
        "k",
    ];
    let p = prompt.trim();
    p.is_empty() || p.starts_with('/') || TRIVIAL.iter().any(|t| p.eq_ignore_ascii_case(t))
}

/// Splits `content` into messages of at most `limit` characters at paragraph, sentence or
/// word boundaries; continuation chunks start with `[continued] `.
pub fn chunk_message(content: &str, limit: usize) -> Vec<String> {
    const PREFIX: &str = "[continued] ";
    let chars: Vec<char> = content.chars().collect();
    if chars.len() <= limit {
        return vec![content.to_string()];
    }
    let mut chunks = Vec::new();
    let mut rest: &[char] = &chars;
    let mut first = true;
    while !rest.is_empty() {
        let room = if first { limit } else { limit - PREFIX.len() };
        if rest.len() <= room {
            let tail: String = rest.iter().collect();
            chunks.push(if first {
                tail
            } else {
                format!("{PREFIX}{tail}")
            });
            break;
        }
        let segment = &rest[..room];
        let floor = room as f64 * 0.3;
        let rfind = |pat: &[char]| {
            (0..=segment.len().saturating_sub(pat.len()))
                .rev()
                .find(|&i| segment[i..].starts_with(pat))
        };
        let mut cut = rfind(&['\n', '\n']).map_or(-1, |i| i as i64);
        if (cut as f64) < floor {
            cut = rfind(&['.', ' ']).map_or(-1, |i| i as i64 + 2);
        }
        if (cut as f64) < floor {
            cut = rfind(&[' ']).map_or(-1, |i| i as i64);
        }
        if (cut as f64) < floor {
            cut = room as i64;
        }
        let cut = cut as usize;
        let chunk: String = rest[..cut]
            .iter()
            .collect::<String>()
            .trim_end()
            .to_string();
        let mut next = &rest[cut..];
        while next.first().is_some_and(|c| c.is_whitespace()) {
            next = &next[1..];
        }
        rest = next;
        chunks.push(if first {
            chunk
        } else {
            format!("{PREFIX}{chunk}")
        });
        first = false;
    }
    chunks
}

/// Cuts `text` to `tokens` × 4 characters, at a word boundary when one is near the end.
/// Without `contextTokens` Python injects whatever Honcho returns; we stop at this many
/// tokens, so a server answering megabytes cannot flood the prompt.
pub const MAX_RECALL_TOKENS: u64 = 16_000;

pub fn truncate_to_budget(text: &str, tokens: Option<u64>) -> String {
    let tokens = tokens.filter(|t| *t > 0).unwrap_or(MAX_RECALL_TOKENS);
    let budget = (tokens * 4) as usize;
    if text.chars().count() <= budget {
        return text.to_string();
    }
    let truncated: String = text.chars().take(budget).collect();
    let cut = match truncated.rfind(' ') {
        Some(i) if truncated[..i].chars().count() as f64 > budget as f64 * 0.8 => &truncated[..i],
        _ => &truncated[..],
    };
    format!("{cut} …")
}

/// Cuts a dialectic answer to `max` characters at a word boundary (automatic injection only).
pub fn cap_chars(text: &str, max: usize) -> String {
    if max == 0 || text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    let cut = head.rsplit_once(' ').map_or(head.as_str(), |(h, _)| h);
    format!("{cut} …")
}

/// Cuts a dialectic query to Honcho's input limit at a word boundary.
pub fn cap_query(query: &str, max: usize) -> String {
    if query.chars().count() <= max {
        return query.to_string();
    }
    let head: String = query.chars().take(max).collect();
    head.rsplit_once(' ')
        .map_or(head.clone(), |(h, _)| h.to_string())
}

/// Pass `pass`'s prompt: the cold or warm question, then a self-audit, then a reconciliation.
pub fn dialectic_prompt(pass: usize, prior: &[String], cold: bool) -> String {
    match pass {
        0 if cold => "Who is this person? What are their preferences, goals, and working style? \
                      Focus on facts that would help an AI assistant be immediately useful."
            .to_string(),
        0 => "Given what's been discussed in this session so far, what context about this user \
              is most relevant to the current conversation? Prioritize active context over \
              biographical facts."
            .to_string(),
        1 => format!(
            "Given this initial assessment:\n\n{}\n\nWhat gaps remain in your understanding that \
             would help going forward? Synthesize what you actually know about the user's current \
             state and immediate needs, grounded in evidence from recent sessions.",
            prior.last().map(String::as_str).unwrap_or("")
        ),
        _ => format!(
            "Prior passes produced:\n\nPass 1:\n{}\n\nPass 2:\n{}\n\nDo these assessments cohere? \
             Reconcile any contradictions and produce a final, concise synthesis of what matters \
             most for the current conversation.",
            prior.first().map_or("(empty)", String::as_str),
            prior.get(1).map_or("(empty)", String::as_str)
        ),
    }
}

/// Whether a pass answered well enough to skip the next (structured and over 100
/// characters, or over 300).
pub fn signal_sufficient(result: &str) -> bool {
    let t = result.trim();
    if t.chars().count() < 100 {
        return false;
    }
    let structured = result.contains('\n')
        && (result.contains("##")
            || result.contains('•')
            || result
                .lines()
                .any(|l| l.starts_with("* ") || l.starts_with("- "))
            || result.lines().any(|l| {
                let l = l.trim_start();
                let digits = l.chars().take_while(char::is_ascii_digit).count();
                digits > 0 && l[digits..].starts_with(". ")
            }));
    structured || t.chars().count() > 300
}

/// The reasoning level of pass `pass` (Python's `_resolve_pass_level`).
pub fn pass_level(cfg: &HonchoConfig, pass: usize, query: &str) -> String {
    if let Some(levels) = &cfg.dialectic_depth_levels
        && let Some(level) = levels.get(pass)
    {
        return level.clone();
    }
    let mapped = match (cfg.dialectic_depth, pass) {
        (2, 0) | (3, 0) => Some("minimal"),
        (3, 2) => Some("low"),
        _ => None,
    };
    match mapped {
        Some(level) => level.to_string(),
        None => heuristic_level(cfg, &cfg.dialectic_reasoning_level, query),
    }
}

/// `base` raised one level for a query of 120+ characters and two for 400+, at most the cap.
fn heuristic_level(cfg: &HonchoConfig, base: &str, query: &str) -> String {
    let Some(base_idx) = LEVELS.iter().position(|l| *l == base) else {
        return base.to_string();
    };
    if !cfg.reasoning_heuristic || query.is_empty() {
        return base.to_string();
    }
    let n = query.chars().count();
    let bump = if n < 120 {
        0
    } else if n < 400 {
        1
    } else {
        2
    };
    let cap = LEVELS
        .iter()
        .position(|l| *l == cfg.reasoning_level_cap)
        .unwrap_or(3);
    LEVELS[(base_idx + bump).min(cap)].to_string()
}

/// Removes whole `<memory-context>` blocks (a recall that came back inside a stored message)
/// before a message is sent to Honcho.
pub fn strip_memory_context(text: &str) -> String {
    const OPEN: &str = "<memory-context>";
    const CLOSE: &str = "</memory-context>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        match rest[start..].find(CLOSE) {
            Some(end) => rest = &rest[start + end + CLOSE.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    hermes_core::injection::strip_fence_tags(&out)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_standard_vectors() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn long_messages_are_chunked_with_continuation_markers() {
        let text = format!("{}\n\n{}", "a".repeat(60), "b ".repeat(40));
        let chunks = chunk_message(&text, 70);
        assert_eq!(chunks[0], "a".repeat(60));
        assert!(chunks[1].starts_with("[continued] b b"));
        assert!(chunks.iter().all(|c| c.chars().count() <= 70));
        assert_eq!(chunk_message("short", 70), vec!["short".to_string()]);
    }

    #[test]
    fn trivial_prompts_and_budgets() {
        assert!(is_trivial(" OK ") && is_trivial("/help") && is_trivial(""));
        let flood = "word ".repeat(100_000);
        let cut = truncate_to_budget(&flood, None);
        assert!(
            cut.len() <= (MAX_RECALL_TOKENS * 4) as usize + 4,
            "bounded without a budget"
        );
        assert!(!is_trivial("what did I say about rust?"));
        assert_eq!(
            truncate_to_budget("one two three four five", Some(4)),
            "one two three …"
        );
        assert_eq!(
            truncate_to_budget("one two three four five", Some(3)),
            "one two thre …"
        );
        assert_eq!(cap_chars("alpha beta gamma", 12), "alpha beta …");
        assert!(signal_sufficient(&format!(
            "## Facts\n- {}",
            "x".repeat(120)
        )));
        assert!(!signal_sufficient("short"));
    }

    fn cfg(raw: serde_json::Value) -> HonchoConfig {
        let dir = tempfile::tempdir().unwrap();
        let home = hermes_config::HermesHome::at(dir.path().to_path_buf());
        let env = hermes_config::Environment::isolated([("HONCHO_API_KEY", "k")]);
        let serde_json::Value::Object(map) = raw else {
            panic!("an object")
        };
        HonchoConfig::from_raw(None, &map, &home, &env)
    }

    #[test]
    fn session_names_follow_the_strategy_and_chat_keys_win() {
        let origin = SessionOrigin {
            cwd: Path::new("/src/app/sub"),
            session_id: "20261203_abc",
            chat_key: None,
        };
        let c = cfg(serde_json::json!({}));
        assert_eq!(session_name(&c, &origin), "sub");
        let c = cfg(
            serde_json::json!({"sessionStrategy": "per-session", "peerName": "ann", "sessionPeerPrefix": true}),
        );
        assert_eq!(session_name(&c, &origin), "ann-20261203_abc");
        let c = cfg(
            serde_json::json!({"sessionStrategy": "global", "workspace": "w", "sessions": {"/src/app/sub": "mapped"}}),
        );
        assert_eq!(session_name(&c, &origin), "mapped");
        let chat = SessionOrigin {
            chat_key: Some("agent:main:telegram:dm:42"),
            ..origin.clone()
        };
        assert_eq!(session_name(&c, &chat), "agent-main-telegram-dm-42");
        let long = "x".repeat(150);
        let named = session_name(
            &c,
            &SessionOrigin {
                chat_key: Some(&long),
                ..origin
            },
        );
        assert_eq!(named.len(), 100);
    }

    #[test]
    fn user_peers_follow_python_resolution() {
        let c = cfg(
            serde_json::json!({"peerName": "ann", "userPeerAliases": {"42": "ann"}, "runtimePeerPrefix": "tg_"}),
        );
        assert_eq!(user_peer(&c, Some("42"), "k"), "ann");
        assert_eq!(user_peer(&c, Some("77"), "k"), "tg_77");
        assert_eq!(user_peer(&c, None, "k"), "ann");
        let pinned = cfg(serde_json::json!({"peerName": "ann", "pinUserPeer": true}));
        assert_eq!(user_peer(&pinned, Some("77"), "k"), "ann");
        let bare = cfg(serde_json::json!({}));
        assert_eq!(user_peer(&bare, None, "work"), "user-default-work");
        assert_eq!(user_peer(&bare, Some("a@b.c"), "k"), "a-b-c");
        let dotted = cfg(serde_json::json!({"runtimePeerPrefix": "x."}));
        let hashed = user_peer(&dotted, Some("1"), "k");
        assert!(
            hashed.starts_with("x-1-") && hashed.len() == 12,
            "hashed when sanitised: {hashed}"
        );
    }

    #[test]
    fn memory_context_blocks_are_removed_before_sending() {
        assert_eq!(
            strip_memory_context("hi\n<memory-context>secret</memory-context>\nthere"),
            "hi\n\nthere"
        );
    }
}
