//! Queries over the holographic store, as Python's `retrieval.py` `FactRetriever` makes
//! them: `search` (FTS5 candidates reranked by word overlap and vector similarity, times
//! trust), `probe` / `related` / `reason` (HRR algebra over the fact vectors and the
//! entities bound into them) and `contradict` (facts sharing entities whose vectors
//! diverge). Python without numpy falls back to keyword search here; this build always has
//! the vectors, so it follows Python's numpy path.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashSet};

use rusqlite::params;
use serde::Serialize;

use super::hrr;
use super::store::{COLUMNS, Fact, FactStore, StoreError, row_to_fact};

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

/// Python's fixed weights of FTS5 rank and word overlap in a search's relevance; the HRR
/// weight is `plugins.hermes-memory-store.hrr_weight` (default [`DEFAULT_HRR_WEIGHT`]).
const FTS_WEIGHT: f64 = 0.4;
const JACCARD_WEIGHT: f64 = 0.3;
pub const DEFAULT_HRR_WEIGHT: f64 = 0.3;

/// `contradict` compares at most this many facts, the most recently updated (Python's
/// `_MAX_CONTRADICT_FACTS`): every pair is compared.
const MAX_CONTRADICT_FACTS: usize = 500;
/// `contradict` reports pairs scoring at least this (Python's default threshold).
const CONTRADICTION_THRESHOLD: f64 = 0.3;
/// Two facts must share at least this share of their entities to contradict.
const MIN_ENTITY_OVERLAP: f64 = 0.3;
/// `probe`, `related` and `reason` score at most this many facts, the newest.
const MAX_SCAN: i64 = 10_000;

/// Characters Python's retriever strips from both ends of a word before comparing words.
const WORD_PUNCTUATION: &[char] = &[
    '.', ',', ';', ':', '!', '?', '"', '\'', '(', ')', '[', ']', '{', '}', '#', '@', '<', '>',
];

/// What a search looks for.
#[derive(Debug, Clone)]
pub struct SearchQuery<'a> {
    pub text: &'a str,
    pub category: Option<&'a str>,
    pub min_trust: f64,
    pub limit: usize,
}

/// A fact as `contradict` reports it (Python leaves out the counters).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FactBrief {
    pub fact_id: i64,
    pub content: String,
    pub category: String,
    pub tags: String,
    pub trust_score: f64,
    pub created_at: String,
    pub updated_at: String,
}

/// Two facts about the same entities whose contents diverge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contradiction {
    pub fact_a: FactBrief,
    pub fact_b: FactBrief,
    /// Jaccard overlap of the two facts' entity names, to 3 decimals.
    pub entity_overlap: f64,
    /// Similarity of the two fact vectors, to 3 decimals.
    pub content_similarity: f64,
    /// overlap × (1 − (similarity + 1) / 2), to 3 decimals: higher is more contradictory.
    pub contradiction_score: f64,
    /// The shared entity names, lower-cased and sorted.
    pub shared_entities: Vec<String>,
}

/// How a search weighs the fact vectors and age.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    pub hrr_weight: f64,
    /// Half-life of a fact's score in days; 0 turns the decay off.
    pub half_life_days: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            hrr_weight: DEFAULT_HRR_WEIGHT,
            half_life_days: 0.0,
        }
    }
}

impl FactStore {
    /// Facts matching any content word of `query`, best first (Python's
    /// `FactRetriever.search`): FTS5 rank (0.4), word overlap (0.3) and the similarity of
    /// the query's vector to the fact's (`hrr_weight`, 0.5 without a vector) make the
    /// relevance, multiplied by trust and by the age decay when a half-life is set. Counts a
    /// retrieval for each fact returned.
    pub fn search(&self, query: &SearchQuery<'_>) -> Result<Vec<Fact>, StoreError> {
        let Some(expr) = fts_expression(query.text) else {
            return Ok(Vec::new());
        };
        let limit = query.limit.clamp(1, 100);
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS}, bm25(facts_fts), f.hrr_vector,
                    julianday('now') - julianday(COALESCE(f.updated_at, f.created_at))
             FROM facts f
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
            |r| {
                Ok((
                    row_to_fact(r)?,
                    r.get::<_, f64>(9)?,
                    r.get::<_, Option<Vec<u8>>>(10)?,
                    r.get::<_, Option<f64>>(11)?,
                ))
            },
        )?;
        let candidates = rows.collect::<Result<Vec<_>, _>>()?;
        // bm25 is negative, more negative is better: scale to 0..1 against the best candidate.
        let best = candidates
            .iter()
            .map(|(_, rank, _, _)| rank.abs())
            .fold(1e-6, f64::max);
        let words = tokens(query.text);
        let query_vector =
            (self.weights.hrr_weight > 0.0).then(|| hrr::encode_text(query.text, self.dim));
        let mut scored: Vec<Fact> = candidates
            .into_iter()
            .map(|(mut fact, rank, vector, age_days)| {
                let mut fact_words = tokens(&fact.content);
                fact_words.extend(tokens(&fact.tags));
                let hrr_sim = match (
                    &query_vector,
                    vector.and_then(|b| hrr::from_bytes(&b, self.dim)),
                ) {
                    (Some(q), Some(v)) => (hrr::similarity(q, &v) + 1.0) / 2.0,
                    _ => 0.5,
                };
                let relevance = FTS_WEIGHT * (rank.abs() / best)
                    + JACCARD_WEIGHT * jaccard(&words, &fact_words)
                    + self.weights.hrr_weight * hrr_sim;
                let mut score = relevance * fact.trust_score;
                if self.weights.half_life_days > 0.0 {
                    score *= decay(age_days, self.weights.half_life_days);
                }
                fact.score = Some(score);
                fact
            })
            .collect();
        sort_by_score(&mut scored);
        scored.truncate(limit);
        for fact in &scored {
            self.conn.execute(
                "UPDATE facts SET retrieval_count = retrieval_count + 1 WHERE fact_id = ?1",
                [fact.fact_id],
            )?;
        }
        Ok(scored)
    }

    /// Facts about `entity` by HRR algebra (Python's `probe`): unbinding the entity's
    /// role-bound atom from a fact about it leaves the fact's bound content. With a
    /// category, the category's bank is probed and facts scored against what it yields.
    /// Without vectors to score, a keyword search for the entity.
    pub fn probe(
        &self,
        entity: &str,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let role_entity = hrr::encode_atom(hrr::ROLE_ENTITY, self.dim);
        let key = hrr::bind(
            &hrr::encode_atom(&entity.to_lowercase(), self.dim),
            &role_entity,
        );
        let facts = self.vector_facts(category)?;
        if facts.is_empty() {
            return self.keyword_fallback(entity, category, limit);
        }
        let scored = if category.is_some() {
            // The bank of this scope's facts in the category: Python's persisted
            // `cat:<category>` bank when one scope holds them all.
            let refs: Vec<&[f64]> = facts.iter().map(|(_, v)| v.as_slice()).collect();
            let extracted = hrr::unbind(&hrr::bundle(&refs), &key);
            score(facts, |_, v| hrr::similarity(&extracted, v))
        } else {
            let role_content = hrr::encode_atom(hrr::ROLE_CONTENT, self.dim);
            score(facts, |fact, v| {
                let content = hrr::bind(&hrr::encode_text(&fact.content, self.dim), &role_content);
                hrr::similarity(&hrr::unbind(v, &key), &content)
            })
        };
        Ok(top(scored, limit))
    }

    /// Facts structurally connected to `entity` (Python's `related`): the entity's bare
    /// atom is unbound from each fact and the rest compared with both role atoms, so it
    /// counts as an entity or as a content word.
    pub fn related(
        &self,
        entity: &str,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let facts = self.vector_facts(category)?;
        if facts.is_empty() {
            return self.keyword_fallback(entity, category, limit);
        }
        let atom = hrr::encode_atom(&entity.to_lowercase(), self.dim);
        let role_entity = hrr::encode_atom(hrr::ROLE_ENTITY, self.dim);
        let role_content = hrr::encode_atom(hrr::ROLE_CONTENT, self.dim);
        let scored = score(facts, |_, v| {
            let residual = hrr::unbind(v, &atom);
            hrr::similarity(&residual, &role_entity).max(hrr::similarity(&residual, &role_content))
        });
        Ok(top(scored, limit))
    }

    /// Facts about all of `entities` at once (Python's `reason`): each fact scores by its
    /// weakest entity, the residual of that entity's role-bound atom compared with the
    /// content role. Without vectors, a keyword search for all the names.
    pub fn reason(
        &self,
        entities: &[String],
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        let facts = if entities.is_empty() {
            Vec::new()
        } else {
            self.vector_facts(category)?
        };
        if facts.is_empty() {
            return self.keyword_fallback(&entities.join(" "), category, limit);
        }
        let role_entity = hrr::encode_atom(hrr::ROLE_ENTITY, self.dim);
        let role_content = hrr::encode_atom(hrr::ROLE_CONTENT, self.dim);
        let keys: Vec<hrr::Phases> = entities
            .iter()
            .map(|e| hrr::bind(&hrr::encode_atom(&e.to_lowercase(), self.dim), &role_entity))
            .collect();
        let scored = score(facts, |_, v| {
            keys.iter()
                .map(|k| hrr::similarity(&hrr::unbind(v, k), &role_content))
                .fold(f64::INFINITY, f64::min)
        });
        Ok(top(scored, limit))
    }

    /// Pairs of facts that share entities but whose vectors diverge (Python's
    /// `contradict`), most contradictory first.
    pub fn contradict(
        &self,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Contradiction>, StoreError> {
        let mut facts = self.vector_facts(category)?;
        if facts.len() < 2 {
            return Ok(Vec::new());
        }
        if facts.len() > MAX_CONTRADICT_FACTS {
            facts.sort_by(|(a, _), (b, _)| {
                let key = |f: &Fact| {
                    if f.updated_at.is_empty() {
                        f.created_at.clone()
                    } else {
                        f.updated_at.clone()
                    }
                };
                key(b).cmp(&key(a))
            });
            facts.truncate(MAX_CONTRADICT_FACTS);
        }
        let mut names = Vec::with_capacity(facts.len());
        for (fact, _) in &facts {
            let set: BTreeSet<String> = self
                .entity_names(fact.fact_id)?
                .iter()
                .map(|n| n.to_lowercase())
                .collect();
            names.push(set);
        }
        let mut found = Vec::new();
        for i in 0..facts.len() {
            for j in i + 1..facts.len() {
                let (a, b) = (&names[i], &names[j]);
                if a.is_empty() || b.is_empty() {
                    continue;
                }
                let shared: Vec<String> = a.intersection(b).cloned().collect();
                let overlap = shared.len() as f64 / a.union(b).count() as f64;
                if overlap < MIN_ENTITY_OVERLAP {
                    continue;
                }
                let similarity = hrr::similarity(&facts[i].1, &facts[j].1);
                let contradiction = overlap * (1.0 - (similarity + 1.0) / 2.0);
                if contradiction >= CONTRADICTION_THRESHOLD {
                    found.push(Contradiction {
                        fact_a: brief(&facts[i].0),
                        fact_b: brief(&facts[j].0),
                        entity_overlap: round3(overlap),
                        content_similarity: round3(similarity),
                        contradiction_score: round3(contradiction),
                        shared_entities: shared,
                    });
                }
            }
        }
        found.sort_by(|a, b| {
            b.contradiction_score
                .partial_cmp(&a.contradiction_score)
                .unwrap_or(Ordering::Equal)
        });
        found.truncate(limit.clamp(1, 100));
        Ok(found)
    }

    /// This scope's facts (of `category`) that have a vector of this store's size, oldest
    /// first, the newest [`MAX_SCAN`] at most.
    fn vector_facts(&self, category: Option<&str>) -> Result<Vec<(Fact, hrr::Phases)>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT * FROM (SELECT {COLUMNS}, f.hrr_vector FROM facts f
                 WHERE f.hrr_vector IS NOT NULL AND (?1 IS NULL OR f.category = ?1) AND f.scope = ?2
                 ORDER BY f.fact_id DESC LIMIT ?3)
             ORDER BY fact_id"
        ))?;
        let rows = stmt.query_map(params![category, self.scope, MAX_SCAN], |r| {
            Ok((row_to_fact(r)?, r.get::<_, Vec<u8>>(9)?))
        })?;
        let mut facts = Vec::new();
        for row in rows {
            let (fact, bytes) = row?;
            if let Some(vector) = hrr::from_bytes(&bytes, self.dim) {
                facts.push((fact, vector));
            }
        }
        Ok(facts)
    }

    /// Python's fallback when there are no vectors to score: a keyword search at the
    /// default minimum trust.
    fn keyword_fallback(
        &self,
        text: &str,
        category: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Fact>, StoreError> {
        self.search(&SearchQuery {
            text,
            category,
            min_trust: 0.3,
            limit,
        })
    }
}

/// Each fact scored (similarity shifted to 0..1) × trust.
fn score(facts: Vec<(Fact, hrr::Phases)>, similarity: impl Fn(&Fact, &[f64]) -> f64) -> Vec<Fact> {
    facts
        .into_iter()
        .map(|(mut fact, vector)| {
            let sim = similarity(&fact, &vector);
            fact.score = Some((sim + 1.0) / 2.0 * fact.trust_score);
            fact
        })
        .collect()
}

/// The best `limit` facts, best first; equal scores keep their order.
fn top(mut facts: Vec<Fact>, limit: usize) -> Vec<Fact> {
    sort_by_score(&mut facts);
    facts.truncate(limit.clamp(1, 100));
    facts
}

fn sort_by_score(facts: &mut [Fact]) {
    facts.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal));
}

fn brief(fact: &Fact) -> FactBrief {
    FactBrief {
        fact_id: fact.fact_id,
        content: fact.content.clone(),
        category: fact.category.clone(),
        tags: fact.tags.clone(),
        trust_score: fact.trust_score,
        created_at: fact.created_at.clone(),
        updated_at: fact.updated_at.clone(),
    }
}

/// Python's `round(x, 3)`: the decimal nearest the exact binary value.
fn round3(x: f64) -> f64 {
    format!("{x:.3}").parse().unwrap_or(x)
}

/// 0.5^(age / half-life); 1 for a fact from the future or without a readable time.
fn decay(age_days: Option<f64>, half_life_days: f64) -> f64 {
    match age_days {
        Some(age) if age >= 0.0 => 0.5f64.powf(age / half_life_days),
        _ => 1.0,
    }
}

/// Lower-cased words, Python's punctuation stripped from both ends.
fn tokens(text: &str) -> HashSet<String> {
    text.to_lowercase()
        .split_whitespace()
        .map(|w| w.trim_matches(WORD_PUNCTUATION).to_string())
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

    fn store(dir: &tempfile::TempDir, scope: &str) -> FactStore {
        FactStore::open(&dir.path().join("m.db"), 0.5)
            .unwrap()
            .scoped(scope)
    }

    fn ids(facts: &[Fact]) -> Vec<i64> {
        facts.iter().map(|f| f.fact_id).collect()
    }

    /// Python's threshold needs vectors further apart than two natural sentences about the
    /// same entity ever are (their similarity stays near 0.5); a vector turned half a turn
    /// against another is as far apart as two can be.
    #[test]
    fn contradict_reports_shared_entities_with_diverging_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir, "");
        let a = s.add("Alice Smith lives in Berlin", "general", "").unwrap();
        let b = s.add("Alice Smith lives in Paris", "general", "").unwrap();
        s.add("Bob Jones lives in Paris", "general", "").unwrap();
        s.add("nobody in particular", "general", "").unwrap();
        assert!(s.contradict(None, 10).unwrap().is_empty());
        let turned: Vec<f64> = s.vector_facts(None).unwrap()[0]
            .1
            .iter()
            .map(|p| (p + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI))
            .collect();
        s.conn
            .execute(
                "UPDATE facts SET hrr_vector = ?1 WHERE fact_id = ?2",
                params![hrr::to_bytes(&turned), b],
            )
            .unwrap();
        let found = s.contradict(None, 10).unwrap();
        assert_eq!(found.len(), 1);
        let c = &found[0];
        assert_eq!((c.fact_a.fact_id, c.fact_b.fact_id), (a, b));
        assert_eq!(
            (
                c.entity_overlap,
                c.content_similarity,
                c.contradiction_score
            ),
            (1.0, -1.0, 1.0)
        );
        assert_eq!(c.shared_entities, ["alice smith"]);
        let json = serde_json::to_value(c).unwrap();
        assert!(json["fact_a"].get("retrieval_count").is_none(), "{json}");
        assert!(s.contradict(Some("project"), 10).unwrap().is_empty());
    }

    #[test]
    fn hrr_queries_stay_in_their_scope() {
        let dir = tempfile::tempdir().unwrap();
        let alice = store(&dir, "alice");
        let bob = store(&dir, "bob");
        let mine = alice.add("Alice Smith likes tea", "general", "").unwrap();
        bob.add("Alice Smith likes coffee", "general", "").unwrap();
        bob.add("Bob Jones likes coffee", "general", "").unwrap();
        assert_eq!(ids(&alice.probe("Alice Smith", None, 10).unwrap()), [mine]);
        assert_eq!(
            ids(&alice.probe("Alice Smith", Some("general"), 10).unwrap()),
            [mine]
        );
        assert_eq!(ids(&alice.related("tea", None, 10).unwrap()), [mine]);
        assert_eq!(
            ids(&alice.reason(&["Alice Smith".into()], None, 10).unwrap()),
            [mine]
        );
        assert_eq!(bob.probe("Alice Smith", None, 10).unwrap().len(), 2);
        assert!(
            store(&dir, "carol")
                .contradict(None, 10)
                .unwrap()
                .is_empty()
        );
        // No vectors in scope: Python's keyword fallback, which finds nothing here.
        assert!(
            store(&dir, "carol")
                .probe("Alice", None, 10)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn facts_without_vectors_get_them_and_other_sizes_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir, "");
        let a = s.add("Alice Smith likes tea", "general", "").unwrap();
        s.conn
            .execute("UPDATE facts SET hrr_vector = NULL", [])
            .unwrap();
        s.conn.execute("DELETE FROM memory_banks", []).unwrap();
        assert!(s.vector_facts(None).unwrap().is_empty());
        assert_eq!(s.backfill_vectors().unwrap(), 1);
        assert_eq!(s.backfill_vectors().unwrap(), 0);
        assert_eq!(ids(&s.probe("Alice Smith", None, 10).unwrap()), [a]);
        let banks: i64 = s
            .conn
            .query_row(
                "SELECT fact_count FROM memory_banks WHERE bank_name = 'cat:general'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(banks, 1);
        // A store configured for another hrr_dim cannot compare these vectors.
        let small = store(&dir, "").with_dim(256);
        assert!(small.vector_facts(None).unwrap().is_empty());
        assert_eq!(
            small.probe("Alice Smith", None, 10).unwrap().len(),
            1,
            "keyword fallback"
        );
    }

    #[test]
    fn search_weighs_vectors_and_decays_with_age() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(&dir, "");
        let old = s.add("deploys use ArgoCD", "project", "").unwrap();
        let new = s.add("deploys use Flux", "project", "").unwrap();
        s.conn
            .execute(
                "UPDATE facts SET updated_at = datetime('now', '-30 days') WHERE fact_id = ?1",
                [old],
            )
            .unwrap();
        let q = SearchQuery {
            text: "deploys",
            category: None,
            min_trust: 0.0,
            limit: 10,
        };
        let plain = s.search(&q).unwrap();
        let decayed = store(&dir, "")
            .with_weights(Weights {
                hrr_weight: DEFAULT_HRR_WEIGHT,
                half_life_days: 30.0,
            })
            .search(&q)
            .unwrap();
        let score = |facts: &[Fact], id| {
            facts
                .iter()
                .find(|f| f.fact_id == id)
                .unwrap()
                .score
                .unwrap()
        };
        assert!((score(&decayed, old) - score(&plain, old) / 2.0).abs() < 1e-3);
        assert!((score(&decayed, new) - score(&plain, new)).abs() < 1e-6);
        assert_eq!(decayed[0].fact_id, new);
        let no_hrr = store(&dir, "")
            .with_weights(Weights {
                hrr_weight: 0.0,
                half_life_days: 0.0,
            })
            .search(&q)
            .unwrap();
        assert!(
            score(&no_hrr, new) < score(&plain, new),
            "the vector term adds to relevance"
        );
    }
}
