//! Full-text search over what was said (FTS5, BM25 ranking, snippets with the hits marked) and
//! the views that put a hit in context: the messages around it and the opening and closing
//! exchanges of its session.
//!
//! User queries are rewritten into safe FTS5 syntax ([`fts_query`]): every word becomes a
//! quoted term, so punctuation (`my-app.config`, `TODO:`) can never be a syntax error, while
//! balanced `"exact phrases"`, `prefix*` and the `AND` / `OR` / `NOT` operators keep working.
//!
//! Ranking is BM25, bounded so a search stays in milliseconds over 100,000 messages: only the
//! newest 1,000 matches are ranked, and a query with an exact phrase lists matches newest first.
//!
//! On PostgreSQL the same query becomes a `tsquery` (`Compiled::tsquery`: each term quoted,
//! its punctuation spaces as in the index, so `my-app.config` is the phrase `my app config`;
//! `AND`/`OR`/`NOT` as `&`/`|`/`& !`,
//! `prefix*` as `:*`), matched against the messages' generated `tsvector` (GIN index), ranked
//! with `ts_rank` and marked with `ts_headline`: the hits come back in the same shape.

use hermes_protocol::Role;
use hermes_sql::{Dialect, params};

use crate::messages::{MESSAGE_COLUMNS, StoredMessage, stored_message};
use crate::{Store, StoreError};

/// Longest query considered, in characters.
const MAX_QUERY_CHARS: usize = 2_048;

/// Tokens of context in a snippet.
const SNIPPET_TOKENS: i64 = 32;

/// Matches ranked at most. Ranking costs about a microsecond per match, so a word found in
/// half of 100,000 messages would take ~50 ms; past this many, only the most recent matches
/// are ranked (and a query that unspecific is best answered from recent conversations anyway).
const RANK_WINDOW: i64 = 1_000;

/// What to look for.
#[derive(Debug, Clone)]
pub struct SearchQuery<'a> {
    pub text: &'a str,
    /// Only messages of these roles; empty means every role.
    pub roles: &'a [Role],
    /// Only this session.
    pub session_id: Option<&'a str>,
    /// Never this session (the conversation already in context).
    pub exclude_session_id: Option<&'a str>,
    pub limit: usize,
    /// Marks put around each hit in the snippet.
    pub highlight: (&'a str, &'a str),
}

impl<'a> SearchQuery<'a> {
    /// A query for `text` over every role, 20 hits, hits marked `>>>like this<<<`.
    pub fn new(text: &'a str) -> SearchQuery<'a> {
        SearchQuery {
            text,
            roles: &[],
            session_id: None,
            exclude_session_id: None,
            limit: 20,
            highlight: (">>>", "<<<"),
        }
    }
}

/// One matching message.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub message_id: i64,
    pub session_id: String,
    pub role: String,
    /// The matching passage with the hits marked.
    pub snippet: String,
    pub timestamp: f64,
    pub session_title: Option<String>,
    pub session_source: String,
    pub session_model: Option<String>,
    pub session_started_at: f64,
}

/// Messages around an anchor, in order, and how many of the session's messages lie outside.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageWindow {
    pub messages: Vec<StoredMessage>,
    pub more_before: usize,
    pub more_after: usize,
}

enum Item {
    Term { text: String, prefix: bool },
    Phrase(String),
    Op(&'static str),
}

/// Rewrites a user's query into FTS5 syntax that cannot fail to parse; `None` when nothing
/// searchable is left.
pub fn fts_query(raw: &str) -> Option<String> {
    compile(raw).map(|c| c.expr)
}

/// A query ready for FTS5, and the same query for PostgreSQL.
struct Compiled {
    expr: String,
    tsquery: String,
    /// It holds an exact phrase: matches are listed newest first instead of by BM25, whose
    /// phrase statistics would cost a pass over the whole index.
    has_phrase: bool,
}

fn compile(raw: &str) -> Option<Compiled> {
    let raw: String = raw.chars().take(MAX_QUERY_CHARS).collect();
    let mut items = Vec::new();
    let mut rest = raw.as_str();
    while let Some(open) = rest.find('"') {
        bare_words(&rest[..open], &mut items);
        let after = &rest[open + 1..];
        match after.find('"') {
            Some(close) => {
                let phrase = &after[..close];
                if phrase.chars().any(char::is_alphanumeric) {
                    items.push(Item::Phrase(phrase.to_string()));
                }
                rest = &after[close + 1..];
            }
            None => {
                rest = after;
                break;
            }
        }
    }
    bare_words(rest, &mut items);

    // Operators need an operand on each side: drop leading, trailing and repeated ones.
    let mut out: Vec<String> = Vec::new();
    let mut ts: Vec<String> = Vec::new();
    let mut has_phrase = false;
    let mut pending_op: Option<&str> = None;
    for item in items {
        match item {
            Item::Op(op) => {
                if !out.is_empty() && pending_op.is_none() {
                    pending_op = Some(op);
                }
            }
            Item::Term { text, prefix } => {
                push_operator(&mut out, &mut ts, pending_op.take());
                out.push(format!("\"{text}\"{}", if prefix { "*" } else { "" }));
                ts.push(format!(
                    "{}{}",
                    ts_operand(&text),
                    if prefix { ":*" } else { "" }
                ));
            }
            Item::Phrase(p) => {
                push_operator(&mut out, &mut ts, pending_op.take());
                has_phrase |= p.split_whitespace().nth(1).is_some();
                out.push(format!("\"{p}\""));
                ts.push(ts_operand(&p));
            }
        }
    }
    if out.is_empty() {
        None
    } else {
        Some(Compiled {
            expr: out.join(" "),
            tsquery: ts.join(" "),
            has_phrase,
        })
    }
}

/// The operator before an operand: FTS5's as written (implicit AND between terms); in the
/// tsquery `&`, `|`, or `& !` (FTS5's binary NOT is "and not").
fn push_operator(out: &mut Vec<String>, ts: &mut Vec<String>, op: Option<&str>) {
    if ts.is_empty() {
        return;
    }
    if let Some(op) = op {
        out.push(op.to_string());
    }
    ts.push(
        match op {
            Some("OR") => "|",
            Some("NOT") => "& !",
            _ => "&",
        }
        .to_string(),
    );
}

/// A quoted tsquery operand: punctuation becomes spaces as in the indexed text (so quotes
/// and backslashes, which could end the operand, never reach it), and several words become a
/// phrase.
fn ts_operand(text: &str) -> String {
    let words: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    format!("'{}'", words.join(" "))
}

/// `ts_headline`'s options: the caller's marks, about as many words as an FTS5 snippet.
fn headline_options(marks: (&str, &str)) -> String {
    let quote = |m: &str| m.replace('"', "'");
    format!(
        "StartSel=\"{}\", StopSel=\"{}\", MaxWords={SNIPPET_TOKENS}, MinWords=8, \
         ShortWord=0, MaxFragments=1, FragmentDelimiter=\"…\"",
        quote(marks.0),
        quote(marks.1)
    )
}

/// The text a message is indexed by on PostgreSQL (the same as the FTS5 table holds).
const PG_BODY: &str =
    "m.content || ' ' || COALESCE(m.tool_name, '') || ' ' || COALESCE(m.tool_calls, '')";

fn bare_words(text: &str, items: &mut Vec<Item>) {
    for word in text.split_whitespace() {
        match word {
            "AND" => items.push(Item::Op("AND")),
            "OR" => items.push(Item::Op("OR")),
            "NOT" => items.push(Item::Op("NOT")),
            _ => {
                let prefix = word.ends_with('*');
                let text = word.trim_end_matches('*').replace('*', " ");
                if text.chars().any(char::is_alphanumeric) {
                    items.push(Item::Term { text, prefix });
                }
            }
        }
    }
}

/// `,user,assistant,` for an `instr` test; empty for every role.
fn role_list(roles: &[Role]) -> String {
    if roles.is_empty() {
        return String::new();
    }
    let mut list = String::from(",");
    for r in roles {
        list.push_str(r.as_str());
        list.push(',');
    }
    list
}

impl Store {
    /// Matching messages, best first (BM25) among the [`RANK_WINDOW`] most recent matches; a
    /// search inside one session ranks all of its matches. Queries with an exact phrase list
    /// their matches newest first.
    pub fn search(&self, q: &SearchQuery<'_>) -> Result<Vec<SearchHit>, StoreError> {
        self.find(q, true)
    }

    /// [`Store::search`], with the snippets left empty unless `snippets` (making one reads and
    /// tokenizes the whole message, so callers that keep few of many hits make them later).
    fn find(&self, q: &SearchQuery<'_>, snippets: bool) -> Result<Vec<SearchHit>, StoreError> {
        let Some(compiled) = compile(q.text) else {
            return Ok(Vec::new());
        };
        if self.db.dialect() == Dialect::Postgres {
            return self.find_postgres(q, &compiled, snippets);
        }
        let Compiled {
            expr, has_phrase, ..
        } = compiled;
        let snippet = if snippets {
            "snippet(messages_fts, 0, ?2, ?3, '…', ?4)"
        } else {
            "substr(?2 || ?3 || ?4, 1, 0)"
        };
        let oldest_ranked = match (q.session_id, has_phrase) {
            (Some(_), _) | (None, true) => 0,
            (None, false) => self.rank_window_start(&expr)?,
        };
        let order = if has_phrase {
            "messages_fts.rowid DESC"
        } else {
            "rank"
        };
        self.read_rows(
            &format!(
                "SELECT m.id, m.session_id, m.role, {snippet}, m.timestamp, \
                     s.title, s.source, s.model, s.started_at \
                 FROM messages_fts \
                 JOIN messages m ON m.id = messages_fts.rowid \
                 JOIN sessions s ON s.id = m.session_id \
                 WHERE messages_fts MATCH ?1 AND messages_fts.rowid >= ?9 \
                   AND (?5 IS NULL OR m.session_id = ?5) \
                   AND (?6 IS NULL OR m.session_id != ?6) \
                   AND (?7 = '' OR instr(?7, ',' || m.role || ',') > 0) \
                 ORDER BY {order} LIMIT ?8"
            ),
            &params![
                expr,
                q.highlight.0,
                q.highlight.1,
                SNIPPET_TOKENS,
                q.session_id,
                q.exclude_session_id,
                role_list(q.roles),
                q.limit as i64,
                oldest_ranked
            ],
            hit,
        )
    }

    /// [`Store::find`] on PostgreSQL: the tsquery against the generated `tsvector`, final
    /// rows only, best `ts_rank` first (length-normalised, ties oldest first, as FTS5 lists
    /// equal BM25 scores; newest first with an exact phrase).
    fn find_postgres(
        &self,
        q: &SearchQuery<'_>,
        compiled: &Compiled,
        snippets: bool,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let snippet = if snippets {
            format!("ts_headline('simple', {PG_BODY}, q, ?2)")
        } else {
            "substr(?2, 1, 0)".to_string()
        };
        let order = if compiled.has_phrase {
            "m.id DESC"
        } else {
            // Normalised by the log of the length, like BM25 shorter matches rank higher.
            "ts_rank(m.search_body, q, 1) DESC, m.id"
        };
        self.read_rows(
            &format!(
                "SELECT m.id, m.session_id, m.role, {snippet}, m.timestamp, \
                     s.title, s.source, s.model, s.started_at \
                 FROM to_tsquery('simple', ?1) q, messages m \
                 JOIN sessions s ON s.id = m.session_id \
                 WHERE m.search_body @@ q AND m.partial = 0 \
                   AND (m.session_id = ?3 OR ?3 IS NULL) \
                   AND (m.session_id != ?4 OR ?4 IS NULL) \
                   AND (?5 = '' OR strpos(?5, ',' || m.role || ',') > 0) \
                 ORDER BY {order} LIMIT ?6"
            ),
            &params![
                compiled.tsquery,
                headline_options(q.highlight),
                q.session_id,
                q.exclude_session_id,
                role_list(q.roles),
                q.limit as i64
            ],
            hit,
        )
    }

    /// The oldest message id inside the ranking window of `expr` (0 when it has fewer matches).
    fn rank_window_start(&self, expr: &str) -> Result<i64, StoreError> {
        Ok(self
            .read_row(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 \
                 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
                &params![expr, RANK_WINDOW - 1],
                |r| r.get(0),
            )?
            .unwrap_or_default())
    }

    /// The best hit of each of the `sessions` best-matching sessions (considering the 300 best
    /// hits), best first.
    pub fn search_sessions(
        &self,
        q: &SearchQuery<'_>,
        sessions: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let wide = SearchQuery {
            limit: 300,
            ..q.clone()
        };
        let mut best: Vec<SearchHit> = Vec::new();
        for hit in self.find(&wide, false)? {
            if best.len() >= sessions {
                break;
            }
            if !best.iter().any(|b| b.session_id == hit.session_id) {
                best.push(hit);
            }
        }
        if let Some(compiled) = compile(q.text) {
            for hit in &mut best {
                hit.snippet = self.snippet(&compiled, hit.message_id, q.highlight)?;
            }
        }
        Ok(best)
    }

    /// The snippet of one matching message.
    fn snippet(&self, q: &Compiled, id: i64, marks: (&str, &str)) -> Result<String, StoreError> {
        let found = match self.db.dialect() {
            Dialect::Sqlite => self.read_row(
                "SELECT snippet(messages_fts, 0, ?2, ?3, '…', ?4) FROM messages_fts \
                 WHERE messages_fts MATCH ?1 AND rowid = ?5",
                &params![q.expr, marks.0, marks.1, SNIPPET_TOKENS, id],
                |r| r.get(0),
            )?,
            Dialect::Postgres => self.read_row(
                &format!(
                    "SELECT ts_headline('simple', {PG_BODY}, q, ?2) \
                     FROM to_tsquery('simple', ?1) q, messages m WHERE m.id = ?3"
                ),
                &params![q.tsquery, headline_options(marks), id],
                |r| r.get(0),
            )?,
        };
        Ok(found.unwrap_or_default())
    }

    /// Up to `window` messages on each side of message `anchor` of the session, the anchor
    /// included. `None` when the session has no such message.
    pub fn messages_around(
        &self,
        session_id: &str,
        anchor: i64,
        window: usize,
    ) -> Result<Option<MessageWindow>, StoreError> {
        let select = |cmp: &str, order: &str, limit: usize| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND id {cmp} ?2 \
                 ORDER BY id {order} LIMIT ?3"
            );
            let rows = self.read_rows(
                &sql,
                &params![session_id, anchor, limit as i64],
                stored_message,
            )?;
            Ok::<_, StoreError>(rows.into_iter().flatten().collect::<Vec<_>>())
        };
        let mut before = select("<=", "DESC", window + 1)?;
        if before.first().map(|m| m.id) != Some(anchor) {
            return Ok(None);
        }
        before.reverse();
        let after = select(">", "ASC", window)?;
        let first = before.first().map_or(anchor, |m| m.id);
        let last = after.last().map_or(anchor, |m| m.id);
        let outside = |cmp: &str, edge: i64| -> Result<usize, StoreError> {
            let n: i64 = self
                .read_row(
                    &format!("SELECT count(*) FROM messages WHERE session_id = ?1 AND id {cmp} ?2"),
                    &params![session_id, edge],
                    |r| r.get(0),
                )?
                .unwrap_or(0);
            Ok(n as usize)
        };
        let more_before = outside("<", first)?;
        let more_after = outside(">", last)?;
        before.extend(after);
        Ok(Some(MessageWindow {
            messages: before,
            more_before,
            more_after,
        }))
    }

    /// The first `n` user and assistant messages with text before message `first`, and the
    /// last `n` after message `last`: how the session began and how it ended.
    pub fn bookends(
        &self,
        session_id: &str,
        first: i64,
        last: i64,
        n: usize,
    ) -> Result<(Vec<StoredMessage>, Vec<StoredMessage>), StoreError> {
        let select = |cmp: &str, order: &str, edge: i64| {
            let sql = format!(
                "SELECT {MESSAGE_COLUMNS} FROM messages WHERE session_id = ?1 AND id {cmp} ?2 \
                 AND role IN ('user', 'assistant') AND content != '' AND partial = 0 \
                 ORDER BY id {order} LIMIT ?3"
            );
            let rows =
                self.read_rows(&sql, &params![session_id, edge, n as i64], stored_message)?;
            Ok::<_, StoreError>(rows.into_iter().flatten().collect::<Vec<_>>())
        };
        let start = select("<", "ASC", first)?;
        let mut end = select(">", "DESC", last)?;
        end.reverse();
        Ok((start, end))
    }
}

/// One search hit of a row selected as `find` selects.
fn hit(r: &hermes_sql::Row) -> hermes_sql::Result<SearchHit> {
    Ok(SearchHit {
        message_id: r.get(0)?,
        session_id: r.get(1)?,
        role: r.get(2)?,
        snippet: r.get(3)?,
        timestamp: r.get(4)?,
        session_title: r.get(5)?,
        session_source: r.get(6)?,
        session_model: r.get(7)?,
        session_started_at: r.get(8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_become_tsqueries() {
        let ts = |q: &str| compile(q).map(|c| c.tsquery);
        assert_eq!(
            ts("docker networking").as_deref(),
            Some("'docker' & 'networking'")
        );
        assert_eq!(
            ts("\"exact phrase\" deploy* OR kube").as_deref(),
            Some("'exact phrase' & 'deploy':* | 'kube'")
        );
        assert_eq!(
            ts("python NOT java").as_deref(),
            Some("'python' & ! 'java'")
        );
        assert_eq!(ts("it's a\\b").as_deref(), Some("'it s' & 'a b'"));
        assert_eq!(ts("nginx.conf").as_deref(), Some("'nginx conf'"));
        assert_eq!(ts("OR hello AND").as_deref(), Some("'hello'"));
    }

    #[test]
    fn words_become_quoted_terms() {
        assert_eq!(
            fts_query("docker networking").as_deref(),
            Some("\"docker\" \"networking\"")
        );
        assert_eq!(
            fts_query("my-app.config TODO: fix").as_deref(),
            Some("\"my-app.config\" \"TODO:\" \"fix\"")
        );
    }

    #[test]
    fn phrases_prefixes_and_operators_survive() {
        assert_eq!(
            fts_query("\"exact phrase\" deploy* OR kube").as_deref(),
            Some("\"exact phrase\" \"deploy\"* OR \"kube\"")
        );
        assert_eq!(
            fts_query("python NOT java").as_deref(),
            Some("\"python\" NOT \"java\"")
        );
    }

    #[test]
    fn dangling_operators_and_quotes_are_dropped() {
        assert_eq!(fts_query("OR hello AND").as_deref(), Some("\"hello\""));
        assert_eq!(fts_query("a AND OR b").as_deref(), Some("\"a\" AND \"b\""));
        assert_eq!(
            fts_query("say \"unclosed").as_deref(),
            Some("\"say\" \"unclosed\"")
        );
        assert_eq!(fts_query("*** ( ) :"), None);
        assert_eq!(fts_query(""), None);
    }
}
