//! Holographic reduced representations with phase encoding, as Python's
//! `plugins/memory/holographic/holographic.py` computes them: a concept is a vector of angles
//! in [0, 2π); `bind` adds phases, `unbind` subtracts them, `bundle` is the circular mean and
//! `similarity` the mean cosine of the differences. Atoms come from SHA-256 counter blocks,
//! so a vector stored by the Python Hermes (float64, little-endian, `hrr_vector` column) is
//! the one this build computes for the same text, and the other way round.

use std::collections::HashMap;
use std::f64::consts::PI;

use sha2::{Digest, Sha256};

const TWO_PI: f64 = 2.0 * PI;

/// Python's default `hrr_dim`.
pub const DEFAULT_DIM: usize = 1024;
/// The largest `hrr_dim` accepted: 64 KiB vectors per fact are already far past any use.
pub const MAX_DIM: usize = 8192;

/// Tokens of a text that are encoded, at most: a pasted document as a query must not cost
/// seconds of hashing (Python encodes every token; texts this long are not facts).
pub const MAX_TEXT_TOKENS: usize = 4096;

/// The reserved atoms Python binds content and entities to.
pub const ROLE_CONTENT: &str = "__hrr_role_content__";
pub const ROLE_ENTITY: &str = "__hrr_role_entity__";
const EMPTY: &str = "__hrr_empty__";

/// Characters Python strips from both ends of a token in `encode_text`.
const TOKEN_PUNCTUATION: &[char] = &[
    '.', ',', '!', '?', ';', ':', '"', '\'', '(', ')', '[', ']', '{', '}',
];

pub type Phases = Vec<f64>;

/// `word`'s atom: SHA-256 of `"{word}:{i}"` for i = 0, 1, ..., read as little-endian u16s,
/// scaled to [0, 2π) and cut to `dim`.
pub fn encode_atom(word: &str, dim: usize) -> Phases {
    let mut phases = Vec::with_capacity(dim);
    let mut block = 0usize;
    while phases.len() < dim {
        let digest = Sha256::digest(format!("{word}:{block}").as_bytes());
        for pair in digest.chunks_exact(2) {
            if phases.len() == dim {
                break;
            }
            let value = u16::from_le_bytes([pair[0], pair[1]]);
            phases.push(f64::from(value) * (TWO_PI / 65536.0));
        }
        block += 1;
    }
    phases
}

/// Associates two vectors: the phases add.
pub fn bind(a: &[f64], b: &[f64]) -> Phases {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x + y).rem_euclid(TWO_PI))
        .collect()
}

/// Takes `key` back out of `memory`: the phases subtract.
pub fn unbind(memory: &[f64], key: &[f64]) -> Phases {
    memory
        .iter()
        .zip(key)
        .map(|(m, k)| (m - k).rem_euclid(TWO_PI))
        .collect()
}

/// Superposition: per element, the angle of the sum of the unit phasors (summed in order,
/// as numpy sums along the stacked axis).
pub fn bundle(vectors: &[&[f64]]) -> Phases {
    let Some(dim) = vectors.iter().map(|v| v.len()).min() else {
        return Vec::new();
    };
    (0..dim)
        .map(|i| {
            let (mut re, mut im) = (0.0f64, 0.0f64);
            for v in vectors {
                re += v[i].cos();
                im += v[i].sin();
            }
            im.atan2(re).rem_euclid(TWO_PI)
        })
        .collect()
}

/// The mean cosine of the phase differences: 1 for equal vectors, about 0 for unrelated
/// ones, -1 for opposite ones.
pub fn similarity(a: &[f64], b: &[f64]) -> f64 {
    let cosines: Vec<f64> = a.iter().zip(b).map(|(x, y)| (x - y).cos()).collect();
    if cosines.is_empty() {
        return 0.0;
    }
    pairwise_sum(&cosines) / cosines.len() as f64
}

/// numpy's pairwise summation (`np.mean` over one contiguous axis), so a similarity comes
/// out the same to the last bits when the cosines do.
fn pairwise_sum(values: &[f64]) -> f64 {
    const BLOCK: usize = 128;
    let n = values.len();
    if n < 8 {
        return values.iter().fold(0.0, |acc, v| acc + v);
    }
    if n <= BLOCK {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&values[..8]);
        let mut i = 8;
        while i + 8 <= n {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += values[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &values[i..] {
            res += v;
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
}

/// Python's `encode_text` tokens: lower-cased, split on whitespace, punctuation stripped
/// from both ends, empty ones dropped.
fn text_tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split_whitespace()
        .map(|t| t.trim_matches(TOKEN_PUNCTUATION).to_string())
        .filter(|t| !t.is_empty())
        .collect()
}

/// A bag of words: the bundle of each token's atom (the reserved empty atom for no tokens).
/// Only the first [`MAX_TEXT_TOKENS`] tokens count; each distinct token is hashed once.
pub fn encode_text(text: &str, dim: usize) -> Phases {
    let tokens = text_tokens(text);
    let mut atoms: HashMap<&str, Phases> = HashMap::new();
    for token in tokens.iter().take(MAX_TEXT_TOKENS) {
        atoms
            .entry(token.as_str())
            .or_insert_with(|| encode_atom(token, dim));
    }
    let refs: Vec<&[f64]> = tokens
        .iter()
        .take(MAX_TEXT_TOKENS)
        .filter_map(|t| atoms.get(t.as_str()).map(Vec::as_slice))
        .collect();
    if refs.is_empty() {
        return encode_atom(EMPTY, dim);
    }
    bundle(&refs)
}

/// A fact: its text bound to the content role and each entity (lower-cased) bound to the
/// entity role, all bundled, so unbinding an entity's role-bound atom leaves the content.
pub fn encode_fact(content: &str, entities: &[String], dim: usize) -> Phases {
    let role_content = encode_atom(ROLE_CONTENT, dim);
    let role_entity = encode_atom(ROLE_ENTITY, dim);
    let mut components = vec![bind(&encode_text(content, dim), &role_content)];
    for entity in entities {
        components.push(bind(
            &encode_atom(&entity.to_lowercase(), dim),
            &role_entity,
        ));
    }
    let refs: Vec<&[f64]> = components.iter().map(Vec::as_slice).collect();
    bundle(&refs)
}

/// The stored form: float64 little-endian, 8 bytes a phase (numpy's `tobytes` on x86/ARM).
pub fn to_bytes(phases: &[f64]) -> Vec<u8> {
    phases.iter().flat_map(|p| p.to_le_bytes()).collect()
}

/// A stored vector, `None` unless it holds exactly `dim` phases (a vector of another
/// `hrr_dim` cannot be compared, and Python would fail on it).
pub fn from_bytes(bytes: &[u8], dim: usize) -> Option<Phases> {
    if bytes.len() != dim * 8 {
        return None;
    }
    Some(
        bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by Python's holographic.py (numpy 2.4) for the same inputs.
    #[test]
    fn atoms_match_python_bit_for_bit() {
        let alice = encode_atom("alice", 8);
        let python = [
            6.1921052, 3.59929417, 2.21947845, 5.64226896, 3.8703294, 1.77797961, 4.85811716,
            6.20255544,
        ];
        for (ours, theirs) in alice.iter().zip(python) {
            assert!((ours - theirs).abs() < 1e-7, "{ours} vs {theirs}");
        }
        // 17 values span two SHA-256 blocks.
        assert_eq!(encode_atom("alice", 17)[..8], alice[..]);
        assert_eq!(encode_atom("alice", 17).len(), 17);
    }

    #[test]
    fn algebra_recovers_bound_values() {
        let dim = DEFAULT_DIM;
        let a = encode_atom("a", dim);
        let b = encode_atom("b", dim);
        let c = encode_atom("c", dim);
        assert!((similarity(&a, &a) - 1.0).abs() < 1e-12);
        assert!(similarity(&a, &b).abs() < 0.1, "atoms are quasi-orthogonal");
        let bound = bind(&a, &b);
        assert!(similarity(&unbind(&bound, &a), &b) > 0.999_999);
        let both = bundle(&[&a, &c]);
        assert!(similarity(&both, &a) > 0.5 && similarity(&both, &c) > 0.5);
        assert!(similarity(&both, &b).abs() < 0.1);
        assert_eq!(from_bytes(&to_bytes(&bound), dim).unwrap(), bound);
        assert!(from_bytes(&to_bytes(&bound), 512).is_none());
        assert_eq!(encode_text(" ,;! ", 16), encode_atom(EMPTY, 16));
        assert_eq!(text_tokens("Hello, World! (x)"), ["hello", "world", "x"]);
    }

    #[test]
    fn pairwise_sum_is_numpys_order() {
        let values: Vec<f64> = (0..1000).map(|i| 1.0 / f64::from(i + 1)).collect();
        let straight: f64 = values.iter().sum();
        assert!((pairwise_sum(&values) - straight).abs() < 1e-12);
        assert_eq!(pairwise_sum(&[1.0, 2.0]), 3.0);
    }
}
