//! The holographic fact store: facts in SQLite with a trust score, an FTS5 index, the entity
//! graph (`entities`, `fact_entities`) and HRR vectors (`facts.hrr_vector`, per-category
//! `memory_banks`), in the table layout of Python's `plugins/memory/holographic/store.py` so
//! one `memory_store.db` serves both. Each fact carries a `scope` (the API server's
//! `X-Hermes-Session-Key`, empty elsewhere): a store sees and changes only its own scope's
//! facts. Entities are names shared by every scope; what a scope sees of them goes through
//! its own facts. The queries over all this are in `retrieval`.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::retrieval::Weights;
use super::{entities, hrr};

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
CREATE TABLE IF NOT EXISTS entities (
    entity_id   INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    entity_type TEXT DEFAULT 'unknown',
    aliases     TEXT DEFAULT '',
    created_at  TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE IF NOT EXISTS fact_entities (
    fact_id   INTEGER REFERENCES facts(fact_id),
    entity_id INTEGER REFERENCES entities(entity_id),
    PRIMARY KEY (fact_id, entity_id)
);
CREATE INDEX IF NOT EXISTS idx_facts_trust    ON facts(trust_score DESC);
CREATE INDEX IF NOT EXISTS idx_facts_category ON facts(category);
CREATE INDEX IF NOT EXISTS idx_entities_name  ON entities(name);
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
CREATE TABLE IF NOT EXISTS memory_banks (
    bank_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    bank_name  TEXT NOT NULL UNIQUE,
    vector     BLOB NOT NULL,
    dim        INTEGER NOT NULL,
    fact_count INTEGER DEFAULT 0,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
";

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
    /// Relevance × trust, in the results of search, probe, related and reason.
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

pub struct FactStore {
    pub(super) conn: Connection,
    default_trust: f64,
    pub(super) scope: String,
    pub(super) dim: usize,
    pub(super) weights: Weights,
}

pub(super) const COLUMNS: &str = "f.fact_id, f.content, f.category, f.tags, f.trust_score, \
    f.retrieval_count, f.helpful_count, f.created_at, f.updated_at";

/// Facts given vectors when a store is opened, at most: the rest on the next open, so
/// opening a large store written without vectors stays quick.
const BACKFILL_BATCH: i64 = 2000;

impl FactStore {
    /// Opens (creating when missing) the store at `path`, with vectors of
    /// [`hrr::DEFAULT_DIM`] phases.
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
        // Older Python stores lack the vector column; Python stores lack the scope.
        for (column, ddl) in [
            ("hrr_vector", "ALTER TABLE facts ADD COLUMN hrr_vector BLOB"),
            (
                "scope",
                "ALTER TABLE facts ADD COLUMN scope TEXT NOT NULL DEFAULT ''",
            ),
        ] {
            let present: bool = conn.query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('facts') WHERE name = ?1",
                [column],
                |r| r.get(0),
            )?;
            if !present {
                conn.execute_batch(ddl)?;
            }
        }
        conn.execute_batch("CREATE INDEX IF NOT EXISTS idx_facts_scope ON facts(scope)")?;
        Ok(FactStore {
            conn,
            default_trust: clamp(default_trust),
            scope: String::new(),
            dim: hrr::DEFAULT_DIM,
            weights: Weights::default(),
        })
    }

    /// The same store seeing only the facts of `scope` (empty: the unscoped facts).
    pub fn scoped(mut self, scope: &str) -> Self {
        self.scope = scope.to_string();
        self
    }

    /// The same store with vectors of `dim` phases (Python's `hrr_dim`), kept within
    /// 1..=[`hrr::MAX_DIM`].
    pub fn with_dim(mut self, dim: usize) -> Self {
        self.dim = dim.clamp(1, hrr::MAX_DIM);
        self
    }

    /// The same store weighing search results by `weights`.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// Stores `content`; a fact with the same content keeps its row and id. A new fact is
    /// linked to the entities in its text and gets its vector; its category's bank follows.
    pub fn add(&self, content: &str, category: &str, tags: &str) -> Result<i64, StoreError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(StoreError::EmptyContent);
        }
        let inserted = self.conn.execute(
            "INSERT OR IGNORE INTO facts (content, category, tags, trust_score, scope) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![content, category, tags, self.default_trust, self.scope],
        )?;
        if inserted == 0 {
            return self
                .conn
                .query_row(
                    "SELECT fact_id FROM facts WHERE content = ?1 AND scope = ?2",
                    params![content, self.scope],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or(StoreError::OtherScope);
        }
        let fact_id = self.conn.last_insert_rowid();
        self.link_entities(fact_id, content)?;
        self.compute_vector(fact_id, content)?;
        self.rebuild_bank(category)?;
        Ok(fact_id)
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

    /// Applies `update` to a fact; false when there is no such fact. New content is linked
    /// to its entities afresh and gets a new vector; the banks of the old and the new
    /// category follow.
    pub fn update(&self, fact_id: i64, update: &FactUpdate) -> Result<bool, StoreError> {
        let Some((trust, old_category)) = self
            .conn
            .query_row(
                "SELECT trust_score, category FROM facts WHERE fact_id = ?1 AND scope = ?2",
                params![fact_id, self.scope],
                |r| Ok((r.get::<_, Option<f64>>(0)?, r.get::<_, Option<String>>(1)?)),
            )
            .optional()?
        else {
            return Ok(false);
        };
        let new_trust = update.trust_delta.map(|d| clamp(trust.unwrap_or(0.0) + d));
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
        if let Some(content) = content {
            self.conn
                .execute("DELETE FROM fact_entities WHERE fact_id = ?1", [fact_id])?;
            self.link_entities(fact_id, content)?;
            self.compute_vector(fact_id, content)?;
        }
        let old_category = old_category.unwrap_or_default();
        self.rebuild_bank(&old_category)?;
        if let Some(category) = update.category.as_deref().filter(|c| *c != old_category) {
            self.rebuild_bank(category)?;
        }
        Ok(true)
    }

    /// Deletes a fact and its entity links; false when there was none.
    pub fn remove(&self, fact_id: i64) -> Result<bool, StoreError> {
        let Some(category) = self
            .conn
            .query_row(
                "SELECT category FROM facts WHERE fact_id = ?1 AND scope = ?2",
                params![fact_id, self.scope],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
        else {
            return Ok(false);
        };
        self.conn
            .execute("DELETE FROM fact_entities WHERE fact_id = ?1", [fact_id])?;
        self.conn
            .execute("DELETE FROM facts WHERE fact_id = ?1", [fact_id])?;
        self.rebuild_bank(&category.unwrap_or_default())?;
        Ok(true)
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

    /// The names of the entities a fact is linked to, in link order.
    pub fn entity_names(&self, fact_id: i64) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.name FROM entities e JOIN fact_entities fe ON fe.entity_id = e.entity_id
             WHERE fe.fact_id = ?1 ORDER BY fe.entity_id",
        )?;
        let rows = stmt.query_map([fact_id], |r| r.get(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    /// Gives vectors to facts stored without one (by a Python Hermes without numpy, or
    /// before this build kept them), a batch per call, and rebuilds the banks they change.
    /// Returns how many facts got one.
    pub fn backfill_vectors(&self) -> Result<usize, StoreError> {
        let missing: Vec<(i64, String, Option<String>)> = {
            let mut stmt = self.conn.prepare(
                "SELECT fact_id, content, category FROM facts WHERE hrr_vector IS NULL
                 ORDER BY fact_id LIMIT ?1",
            )?;
            let rows =
                stmt.query_map([BACKFILL_BATCH], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        let mut categories = std::collections::BTreeSet::new();
        for (fact_id, content, category) in &missing {
            self.compute_vector(*fact_id, content)?;
            categories.insert(category.clone().unwrap_or_default());
        }
        for category in categories {
            self.rebuild_bank(&category)?;
        }
        Ok(missing.len())
    }

    /// How many facts this store's scope holds.
    pub fn scope_count(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM facts WHERE scope = ?1",
            [&self.scope],
            |r| r.get(0),
        )?)
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

    /// Links a fact to the entities of its text, resolving each name as Python does: by
    /// name (`LIKE`, so case-insensitive), then by alias, else a new entity.
    fn link_entities(&self, fact_id: i64, content: &str) -> Result<(), StoreError> {
        for name in entities::extract(content) {
            let existing: Option<i64> = self
                .conn
                .query_row(
                    "SELECT entity_id FROM entities WHERE name LIKE ?1",
                    [&name],
                    |r| r.get(0),
                )
                .optional()?;
            let existing = match existing {
                Some(id) => Some(id),
                None => self
                    .conn
                    .query_row(
                        "SELECT entity_id FROM entities
                         WHERE ',' || aliases || ',' LIKE '%,' || ?1 || ',%'",
                        [&name],
                        |r| r.get(0),
                    )
                    .optional()?,
            };
            let entity_id = match existing {
                Some(id) => id,
                None => {
                    self.conn
                        .execute("INSERT INTO entities (name) VALUES (?1)", [&name])?;
                    self.conn.last_insert_rowid()
                }
            };
            self.conn.execute(
                "INSERT OR IGNORE INTO fact_entities (fact_id, entity_id) VALUES (?1, ?2)",
                params![fact_id, entity_id],
            )?;
        }
        Ok(())
    }

    /// Stores the fact's vector: its content and linked entities, encoded as Python does.
    fn compute_vector(&self, fact_id: i64, content: &str) -> Result<(), StoreError> {
        let names = self.entity_names(fact_id)?;
        let vector = hrr::encode_fact(content, &names, self.dim);
        self.conn.execute(
            "UPDATE facts SET hrr_vector = ?1 WHERE fact_id = ?2",
            params![hrr::to_bytes(&vector), fact_id],
        )?;
        Ok(())
    }

    /// Rebuilds the bank `cat:<category>` (the bundle of the category's fact vectors, every
    /// scope, as Python keeps it) so a Python Hermes reading this file finds it current.
    fn rebuild_bank(&self, category: &str) -> Result<(), StoreError> {
        let bank = format!("cat:{category}");
        let vectors: Vec<hrr::Phases> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT hrr_vector FROM facts WHERE category = ?1 AND hrr_vector IS NOT NULL",
            )?;
            let rows = stmt.query_map([category], |r| r.get::<_, Vec<u8>>(0))?;
            let mut vectors = Vec::new();
            for bytes in rows {
                vectors.extend(hrr::from_bytes(&bytes?, self.dim));
            }
            vectors
        };
        if vectors.is_empty() {
            self.conn
                .execute("DELETE FROM memory_banks WHERE bank_name = ?1", [&bank])?;
            return Ok(());
        }
        let refs: Vec<&[f64]> = vectors.iter().map(Vec::as_slice).collect();
        let bundled = hrr::bundle(&refs);
        self.conn.execute(
            "INSERT INTO memory_banks (bank_name, vector, dim, fact_count, updated_at)
             VALUES (?1, ?2, ?3, ?4, CURRENT_TIMESTAMP)
             ON CONFLICT(bank_name) DO UPDATE SET vector = excluded.vector, dim = excluded.dim,
                 fact_count = excluded.fact_count, updated_at = excluded.updated_at",
            params![
                bank,
                hrr::to_bytes(&bundled),
                self.dim as i64,
                vectors.len() as i64
            ],
        )?;
        Ok(())
    }
}

pub(super) fn row_to_fact(r: &rusqlite::Row<'_>) -> rusqlite::Result<Fact> {
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

#[cfg(test)]
mod tests {
    use super::super::retrieval::SearchQuery;
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
        for entity in ["\"(", "*", "", "%", "_"] {
            let probed = s.probe(entity, None, 5).unwrap();
            assert_eq!(probed.len(), 1, "scored, never an error: {entity:?}");
        }
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
        let names = |id| s.entity_names(id).unwrap();
        assert_eq!(names(a), ["Alice Smith"]);
        let tea = s.list(Some("user_pref"), 0.0, 10).unwrap()[0].fact_id;
        assert_eq!(names(tea), ["Alice Smith"], "one entity, resolved by name");
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
        assert!(
            s.update(
                a,
                &FactUpdate {
                    content: Some("Carol Jones owns billing".into()),
                    ..Default::default()
                }
            )
            .unwrap()
        );
        assert_eq!(names(a), ["Carol Jones"], "links follow the content");
        assert!(s.remove(a).unwrap());
        assert!(!s.remove(a).unwrap());
        assert!(!s.update(a, &FactUpdate::default()).unwrap());
        assert_eq!(s.list(Some("project"), 0.0, 10).unwrap().len(), 1);
    }
}
