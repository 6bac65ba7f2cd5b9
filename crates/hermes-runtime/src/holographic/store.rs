//! The holographic fact store: facts in SQLite with a trust score and an FTS5 index, in the
//! table layout of Python's `plugins/memory/holographic/store.py` (so one `memory_store.db`
//! serves both). Python's entity tables and HRR vectors are not kept: recall is FTS5 ranked,
//! reranked by word overlap and weighted by trust. Each fact carries a `scope` (the API
//! server's `X-Hermes-Session-Key`, empty elsewhere): a store sees and changes only its own
//! scope's facts.

use std::collections::HashSet;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

/// Trust gained when a fact is rated helpful (Python `_HELPFUL_DELTA`).
pub const HELPFUL_DELTA: f64 = 0.05;
/// Trust lost when a fact is rated unhelpful: bad facts sink faster than good ones rise.
pub const UNHELPFUL_DELTA: f64 = -0.10;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS facts (
    fact_id         INTEGER PRIMARY KEY AUTOINCREMENT,
    content         TEXT NOT NULL,
    category        TEXT DEFAULT 'general',
    tags            TEXT DEFAULT '',
    trust_score     REAL DEFAULT 0.5,
    retrieval_count INTEGER DEFAULT 0,
    helpful_count   INTEGER DEFAULT 0,
    created_at      TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at      TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    hrr_vector      BLOB,
    scope           TEXT NOT NULL DEFAULT '',
    UNIQUE (content, scope)
);
CREATE INDEX IF NOT EXISTS idx_facts_trust    ON facts(trust_score DESC);
CREATE INDEX IF NOT EXISTS idx_facts_category ON facts(category);
CREATE VIRTUAL TABLE IF NOT EXISTS facts_fts
    USING fts5(content, tags, content=facts, content_rowid=fact_id);
CREATE TRIGGER IF NOT EXISTS facts_ai AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, content, tags) VALUES (new.fact_id, new.content, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS facts_ad AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content, tags)
        VALUES ('delete', old.fact_id, old.content, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS facts_au AFTER UPDATE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, content, tags)
        VALUES ('delete', old.fact_id, old.content, old.tags);
    INSERT INTO facts_fts(rowid, content, tags) VALUES (new.fact_id, new.content, new.tags);
END;
";

/// Words dropped from a search: they match everything and carry no signal.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// At most this many words of a query reach FTS5: a pasted document must not become a
/// thousand-term OR expression.
const MAX_QUERY_TERMS: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("fact store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("fact store: cannot create {path}: {source}")]
    Dir {
        path: String,
        source: std::io::Error,
    },
    #[error("content must not be empty")]
    EmptyContent,
    #[error("no fact with id {0}")]
    NoSuchFact(i64),
    /// A store made by the Python Hermes keeps content unique across scopes.
    #[error("this fact is already stored for another session key")]
    OtherScope,
}

/// One stored fact as the tools report it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact {
    pub fact_id: i64,
    pub content: String,
    pub category: String,
    pub tags: String,
    pub trust_score: f64,
    pub retrieval_count: i64,
    pub helpful_count: i64,
    pub created_at: String,
    pub updated_at: String,
    /// Relevance × trust, for search results only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

/// The result of rating a fact.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Feedback {
    pub fact_id: i64,
    pub old_trust: f64,
    pub new_trust: f64,
    pub helpful_count: i64,
}

/// What `update` changes; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct FactUpdate {
    pub content: Option<String>,
    pub trust_delta: Option<f64>,
    pub tags: Option<String>,
    pub category: Option<String>,
}

/// What a search looks for.
#[derive(Debug, Clone)]
pub struct SearchQuery<'a> {
    pub text: &'a str,
    pub category: Option<&'a str>,
    pub min_trust: f64,
    pub limit: usize,
}

pub struct FactStore {
    conn: Connection,
    default_trust: f64,
    scope: String,
}

const COLUMNS: &str = "f.fact_id, f.content, f.category, f.tags, f.trust_score, \
    f.retrieval_count, f.helpful_count, f.created_at, f.updated_at";

impl FactStore {
    /// Opens (creating when missing) the store at `path`.
    pub fn open(path: &Path, default_trust: f64) -> Result<Self, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Dir {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let conn = Connection::open(path)?;
        // Several sessions of one process (and a Python Hermes) may share the file.
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let _: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        conn.execute_batch(SCHEMA)?;
        // A store the Python Hermes created has no scope column yet.
        let has_scope: bool = conn.query_row(
            "SELECT COUNT(*) > 0 FROM pragma_table_info('facts') WHERE name = 'scope'",
            [],
            |r| r.get(0),
        )?;
        if !has_scope {
            conn.execute_batch("ALTER TABLE facts ADD COLUMN scope TEXT NOT NULL DEFAULT ''")?;
        }
        conn.execute_batch("CREATE INDEX IF NOT EXISTS idx_facts_scope ON facts(scope)")?;
        Ok(FactStore {
            conn,
            default_trust: clamp(default_trust),
            scope: String::new(),
        })
    }

    /// The same store seeing only the facts of `scope` (empty: the unscoped facts).
    pub fn scoped(mut self, scope: &str) -> Self {
        self.scope = scope.to_string();
        self
    }

    /// Stores `content`; a fact with the same content keeps its row and id.
    pub fn add(&self, content: &str, category: &str, tags: &str) -> Result<i64, StoreError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(StoreError::EmptyContent);
        }
        let inserted = self.conn.execute(
            "INSERT OR IGNORE INTO facts (content, category, tags, trust_score, scope) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![content, category, tags, self.default_trust, self.scope],
        )?;
        if inserted == 1 {
            return Ok(self.conn.last_insert_rowid());
        }
        self.conn
            .query_row(
                "SELECT fact_id FROM facts WHERE content = ?1 AND scope = ?2",
                params![content, self.scope],
                |r| r.get(0),
            )
            .optional()?
            .ok_or(StoreError::OtherScope)
    }

    /// Facts matching any content word of `query`, best first: FTS5 rank and word overlap
    /// make the relevance, multiplied by trust. Counts a retrieval for each fact returned.
    pub fn search(&self, query: &SearchQuery<'_>) -> Result<Vec<Fact>, StoreError> {
        let Some(expr) = fts_expression(query.text) else {
            return Ok(Vec::new());
        };
        let limit = query.limit.clamp(1, 100);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS}, bm25(facts_fts) FROM facts f
             JOIN facts_fts ON facts_fts.rowid = f.fact_id
             WHERE facts_fts MATCH ?1 AND f.trust_score >= ?2
               AND (?3 IS NULL OR f.category = ?3) AND f.scope = ?5
             ORDER BY bm25(facts_fts) LIMIT ?4"
        ))?;
        let rows = stmt.query_map(
            params![
                expr,
                query.min_trust,
                query.category,
                (limit * 3) as i64,
                self.scope
            ],
            |r| Ok((row_to_fact(r)?, r.get::<_, f64>(9)?)),
        )?;
        let candidates = rows.collect::<Result<Vec<_>, _>>()?;
        // bm25 is negative, more negative is better: scale to 0..1 against the best candidate.
        let best = candidates
            .iter()
            .map(|(_, rank)| -rank)
            .fold(f64::EPSILON, f64::max);
        let words = tokens(query.text);
        let mut scored: Vec<Fact> = candidates
            .into_iter()
            .map(|(mut fact, rank)| {
                let mut fact_words = tokens(&fact.content);
                fact_words.extend(tokens(&fact.tags));
                let relevance = 0.5 * (-rank / best).max(0.0) + 0.5 * jaccard(&words, &fact_words);
                fact.score = Some(relevance * fact.trust_score);
                fact
            })
            .collect();
        scored.sort_by(|a, b| {
            b.score
                .partial_cmp(&a.score)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        scored.truncate(limit);
        for fact in &scored {
            self.conn.execute(
                "UPDATE facts SET retrieval_count = retrieval_count + 1 WHERE fact_id = ?1",
                [fact.fact_id],
            )?;
        }
        Ok(scored)
    }

    /// Facts containing every one of `terms` (each as a phrase), by trust: Python's `probe`
    /// (one entity) and `reason` (several) without the entity graph.
    pub fn containing_all(
        &self,
        terms: &[String],
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let phrases: Vec<String> = terms
            .iter()
            .filter_map(|t| phrase(t))
            .take(MAX_QUERY_TERMS)
            .collect();
        if phrases.is_empty() {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM facts f JOIN facts_fts ON facts_fts.rowid = f.fact_id
             WHERE facts_fts MATCH ?1 AND (?2 IS NULL OR f.category = ?2) AND f.scope = ?4
             ORDER BY f.trust_score DESC, f.fact_id LIMIT ?3"
        ))?;
        let rows = stmt.query_map(
            params![
                phrases.join(" AND "),
                category,
                limit.clamp(1, 100) as i64,
                self.scope
            ],
            row_to_fact,
        )?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Facts by trust, highest first.
    pub fn list(
        &self,
        category: Option<&str>,
        min_trust: f64,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM facts f WHERE f.trust_score >= ?1
               AND (?2 IS NULL OR f.category = ?2) AND f.scope = ?4
             ORDER BY f.trust_score DESC, f.fact_id LIMIT ?3"
        ))?;
        let rows = stmt.query_map(
            params![min_trust, category, limit.clamp(1, 1000) as i64, self.scope],
            row_to_fact,
        )?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Applies `update` to a fact; false when there is no such fact.
    pub fn update(&self, fact_id: i64, update: &FactUpdate) -> Result<bool, StoreError> {
        let Some(trust) = self.trust(fact_id)? else {
            return Ok(false);
        };
        let new_trust = update.trust_delta.map(|d| clamp(trust + d));
        let content = update.content.as_deref().map(str::trim);
        if content == Some("") {
            return Err(StoreError::EmptyContent);
        }
        self.conn.execute(
            "UPDATE facts SET content = COALESCE(?1, content), trust_score = COALESCE(?2, trust_score),
                 tags = COALESCE(?3, tags), category = COALESCE(?4, category),
                 updated_at = CURRENT_TIMESTAMP
             WHERE fact_id = ?5 AND scope = ?6",
            params![content, new_trust, update.tags, update.category, fact_id, self.scope],
        )?;
        Ok(true)
    }

    /// Deletes a fact; false when there was none.
    pub fn remove(&self, fact_id: i64) -> Result<bool, StoreError> {
        Ok(self.conn.execute(
            "DELETE FROM facts WHERE fact_id = ?1 AND scope = ?2",
            params![fact_id, self.scope],
        )? == 1)
    }

    /// Rates a fact: helpful raises trust by [`HELPFUL_DELTA`], unhelpful lowers it by
    /// [`UNHELPFUL_DELTA`], both clamped to 0..1.
    pub fn feedback(&self, fact_id: i64, helpful: bool) -> Result<Feedback, StoreError> {
        let Some(old_trust) = self.trust(fact_id)? else {
            return Err(StoreError::NoSuchFact(fact_id));
        };
        let new_trust = clamp(
            old_trust
                + if helpful {
                    HELPFUL_DELTA
                } else {
                    UNHELPFUL_DELTA
                },
        );
        self.conn.execute(
            "UPDATE facts SET trust_score = ?1, helpful_count = helpful_count + ?2,
                 updated_at = CURRENT_TIMESTAMP WHERE fact_id = ?3 AND scope = ?4",
            params![new_trust, i64::from(helpful), fact_id, self.scope],
        )?;
        let helpful_count = self.conn.query_row(
            "SELECT helpful_count FROM facts WHERE fact_id = ?1",
            [fact_id],
            |r| r.get(0),
        )?;
        Ok(Feedback {
            fact_id,
            old_trust,
            new_trust,
            helpful_count,
        })
    }

    /// How many facts are stored, in every scope.
    pub fn count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM facts", [], |r| r.get(0))?)
    }

    fn trust(&self, fact_id: i64) -> Result<Option<f64>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT trust_score FROM facts WHERE fact_id = ?1 AND scope = ?2",
                params![fact_id, self.scope],
                |r| r.get(0),
            )
            .optional()?)
    }
}

fn row_to_fact(r: &rusqlite::Row<'_>) -> rusqlite::Result<Fact> {
    Ok(Fact {
        fact_id: r.get(0)?,
        content: r.get(1)?,
        category: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
        tags: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
        trust_score: r.get::<_, Option<f64>>(4)?.unwrap_or(0.0),
        retrieval_count: r.get::<_, Option<i64>>(5)?.unwrap_or(0),
        helpful_count: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
        created_at: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
        updated_at: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
        score: None,
    })
}

fn clamp(trust: f64) -> f64 {
    if trust.is_nan() {
        0.0
    } else {
        trust.clamp(0.0, 1.0)
    }
}

/// Lower-cased words, surrounding punctuation stripped.
fn tokens(text: &str) -> HashSet<String> {
    text.split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// `text` as one FTS5 phrase: only letters, digits and spaces survive, so no quote or
/// operator can change the query's meaning. `None` when nothing is left.
fn phrase(text: &str) -> Option<String> {
    let cleaned: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(MAX_QUERY_TERMS)
        .map(str::to_lowercase)
        .collect();
    (!cleaned.is_empty()).then(|| format!("\"{}\"", cleaned.join(" ")))
}

/// A prose query as an FTS5 OR of its content words, each a quoted phrase (FTS5 would AND
/// bare words and read `-`, `*`, `:` ... as operators). `None` when no content word is left.
pub(crate) fn fts_expression(query: &str) -> Option<String> {
    let mut seen = HashSet::new();
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 2 && !STOPWORDS.contains(&w.as_str()))
        .filter(|w| seen.insert(w.clone()))
        .take(MAX_QUERY_TERMS)
        .map(|w| format!("\"{w}\""))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, FactStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = FactStore::open(&dir.path().join("m.db"), 0.5).unwrap();
        (dir, store)
    }

    fn search(store: &FactStore, text: &str) -> Vec<Fact> {
        store
            .search(&SearchQuery {
                text,
                category: None,
                min_trust: 0.3,
                limit: 10,
            })
            .unwrap()
    }

    #[test]
    fn add_deduplicates_and_search_finds_by_any_content_word() {
        let (_d, s) = store();
        let id = s
            .add("The user's editor is Helix", "user_pref", "editor")
            .unwrap();
        assert_eq!(
            s.add("  The user's editor is Helix ", "general", "")
                .unwrap(),
            id
        );
        s.add("Deploys go through ArgoCD", "project", "").unwrap();
        let hits = search(&s, "which editor does the user like?");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].fact_id, id);
        assert_eq!(s.list(None, 0.0, 10).unwrap()[0].retrieval_count, 1);
        assert_eq!(s.count().unwrap(), 2);
    }

    #[test]
    fn hostile_queries_never_reach_sqlite_as_syntax() {
        let (_d, s) = store();
        s.add("alpha beta gamma", "general", "").unwrap();
        let huge = "alpha ".repeat(100_000);
        for q in [
            "\"",
            "\"alpha",
            "alpha\" OR \"",
            "NEAR(alpha beta)",
            "alpha AND",
            "OR",
            "-alpha",
            "alpha*",
            "content:alpha",
            "^alpha",
            "'; DROP TABLE facts; --",
            "((((",
            "",
            "   ",
            "\u{0}alpha",
            huge.as_str(),
        ] {
            let hits = search(&s, q);
            assert!(hits.len() <= 1, "{q:?}");
        }
        assert_eq!(search(&s, "alpha\" OR \"")[0].content, "alpha beta gamma");
        assert!(
            s.containing_all(&["\"(".into(), "*".into()], None, 5)
                .unwrap()
                .is_empty()
        );
        assert_eq!(s.count().unwrap(), 1);
    }

    #[test]
    fn feedback_moves_trust_asymmetrically_and_reorders_search() {
        let (_d, s) = store();
        let a = s.add("coffee order: flat white", "general", "").unwrap();
        let b = s.add("coffee order: cortado", "general", "").unwrap();
        let fb = s.feedback(a, false).unwrap();
        assert_eq!((fb.old_trust, fb.new_trust), (0.5, 0.4));
        let fb = s.feedback(b, true).unwrap();
        assert!((fb.new_trust - 0.55).abs() < 1e-9);
        assert_eq!(fb.helpful_count, 1);
        let hits = search(&s, "coffee order");
        assert_eq!(hits[0].fact_id, b);
        assert!(matches!(
            s.feedback(99, true),
            Err(StoreError::NoSuchFact(99))
        ));
        for _ in 0..20 {
            s.feedback(a, false).unwrap();
        }
        assert_eq!(s.list(None, 0.0, 10).unwrap()[1].trust_score, 0.0);
        assert!(search(&s, "flat white").is_empty(), "below min trust");
    }

    #[test]
    fn scopes_keep_their_facts_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let a = FactStore::open(&path, 0.5).unwrap().scoped("alice");
        let b = FactStore::open(&path, 0.5).unwrap().scoped("bob");
        let plain = FactStore::open(&path, 0.5).unwrap();
        let id = a.add("favourite colour is green", "general", "").unwrap();
        let other = b.add("favourite colour is green", "general", "").unwrap();
        assert_ne!(id, other, "the same content is a separate fact per scope");
        b.add("favourite colour is red", "general", "").unwrap();
        assert_eq!(search(&a, "favourite colour").len(), 1);
        assert_eq!(search(&b, "favourite colour").len(), 2);
        assert!(search(&plain, "favourite colour").is_empty());
        assert!(!b.remove(id).unwrap(), "bob cannot remove alice's fact");
        assert!(matches!(
            b.feedback(id, false),
            Err(StoreError::NoSuchFact(_))
        ));
        assert!(!b.update(id, &FactUpdate::default()).unwrap());
        assert_eq!(plain.count().unwrap(), 3);
    }

    #[test]
    fn a_python_store_without_scopes_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let conn = Connection::open(&path).unwrap();
        let python_schema = SCHEMA
            .replace(
                "content         TEXT NOT NULL,",
                "content         TEXT NOT NULL UNIQUE,",
            )
            .replace(
                ",\n    scope           TEXT NOT NULL DEFAULT '',\n    UNIQUE (content, scope)",
                "",
            );
        assert!(!python_schema.contains("scope"));
        conn.execute_batch(&python_schema).unwrap();
        conn.execute(
            "INSERT INTO facts (content) VALUES ('old fact from python')",
            [],
        )
        .unwrap();
        drop(conn);
        let s = FactStore::open(&path, 0.5).unwrap();
        assert_eq!(search(&s, "python fact").len(), 1);
        let scoped = FactStore::open(&path, 0.5).unwrap().scoped("k");
        assert!(matches!(
            scoped.add("old fact from python", "general", ""),
            Err(StoreError::OtherScope)
        ));
    }

    #[test]
    fn update_remove_and_entity_lookup() {
        let (_d, s) = store();
        let a = s
            .add("Alice Smith works on the billing service", "project", "")
            .unwrap();
        s.add("Alice Smith likes tea", "user_pref", "").unwrap();
        s.add("Bob runs billing", "project", "").unwrap();
        let both = s
            .containing_all(&["alice smith".into(), "billing".into()], None, 10)
            .unwrap();
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].fact_id, a);
        assert_eq!(
            s.containing_all(&["Alice Smith".into()], None, 10)
                .unwrap()
                .len(),
            2
        );
        assert!(
            s.update(
                a,
                &FactUpdate {
                    content: Some("Alice Smith owns billing".into()),
                    trust_delta: Some(0.3),
                    ..Default::default()
                }
            )
            .unwrap()
        );
        let listed = s.list(None, 0.0, 10).unwrap();
        assert_eq!(listed[0].content, "Alice Smith owns billing");
        assert!((listed[0].trust_score - 0.8).abs() < 1e-9);
        assert!(search(&s, "works").is_empty(), "index follows updates");
        assert!(s.remove(a).unwrap());
        assert!(!s.remove(a).unwrap());
        assert!(!s.update(a, &FactUpdate::default()).unwrap());
        assert_eq!(s.list(Some("project"), 0.0, 10).unwrap().len(), 1);
    }
}
