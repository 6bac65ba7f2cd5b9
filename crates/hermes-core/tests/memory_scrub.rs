//! Property tests of the streaming memory-fence scrubber: however an answer is cut into
//! deltas, the visible result is the same as scrubbing it whole; an echoed block never leaks,
//! and text without fences passes through untouched.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hermes_core::memory::FenceScrubber;
use proptest::prelude::*;

/// Pieces that make tags, partial tags and near-misses likely.
const PIECES: &[&str] = &[
    "<memory-context>",
    "</memory-context>",
    "<MEMORY-CONTEXT>",
    "<memory-con",
    "text>",
    "</memory",
    "-context>",
    "<",
    "/",
    ">",
    "\n",
    "\r\n",
    " ",
    "a",
    "é",
    "🦀",
    "memory",
];

fn text_from(indices: &[usize]) -> String {
    indices.iter().map(|&i| PIECES[i % PIECES.len()]).collect()
}

/// Cuts `text` at the given (clamped, char-aligned) positions.
fn chunks(text: &str, cuts: &[usize]) -> Vec<String> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|&c| {
            let mut p = c % (text.len() + 1);
            while !text.is_char_boundary(p) {
                p -= 1;
            }
            p
        })
        .collect();
    points.push(0);
    points.push(text.len());
    points.sort_unstable();
    points.dedup();
    points
        .windows(2)
        .map(|w| text[w[0]..w[1]].to_string())
        .collect()
}

fn stream(parts: &[String]) -> String {
    let mut s = FenceScrubber::new();
    let mut out: String = parts.iter().map(|p| s.push(p)).collect();
    out.push_str(&s.finish());
    out
}

proptest! {
    #![proptest_config(hermes_testkit::proptest_config(2000))]

    #[test]
    fn chunking_never_changes_the_result(
        indices in proptest::collection::vec(0usize..64, 0..40),
        cuts in proptest::collection::vec(0usize..400, 0..12),
    ) {
        let text = text_from(&indices);
        prop_assert_eq!(stream(&chunks(&text, &cuts)), FenceScrubber::scrub(&text));
    }

    #[test]
    fn an_echoed_block_never_leaks(
        before in "[a-z .\n]{0,30}",
        secret in "[A-Z ]{1,30}",
        after in "[a-z .\n]{0,30}",
        cuts in proptest::collection::vec(0usize..200, 0..10),
    ) {
        let text = format!("{before}\n<memory-context>\n{secret}\n</memory-context>\n{after}");
        let shown = stream(&chunks(&text, &cuts));
        prop_assert_eq!(&shown, &format!("{before}\n\n{after}"));
        prop_assert!(!shown.chars().any(|c| c.is_ascii_uppercase()));
    }

    #[test]
    fn text_without_fences_passes_untouched(
        text in "[a-z<>/ \n-]{0,80}",
        cuts in proptest::collection::vec(0usize..100, 0..10),
    ) {
        prop_assume!(!text.contains("<memory-context>"));
        prop_assert_eq!(stream(&chunks(&text, &cuts)), text);
    }
}
