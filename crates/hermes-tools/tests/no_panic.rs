//! Property tests: the parsers that read model output never panic, whatever they are given.
//! Inputs are both arbitrary Unicode and texts assembled from the syntax each parser knows
//! (patch headers, hunk prefixes, shell quotes and operators), so the interesting paths are
//! reached. The case count is bounded to keep the suite fast, and the seed is fixed so CI is
//! deterministic; explore further with `PROPTEST_RNG_SEED=<n> PROPTEST_CASES=<n>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hermes_tools::approval::CommandChecker;
use hermes_tools::patch::{fuzzy, v4a};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    hermes_testkit::proptest_config(400)
}

/// Lines mixing V4A syntax with noise.
fn patch_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        Just("*** Begin Patch".to_string()),
        Just("*** End Patch".to_string()),
        Just("*** End of File".to_string()),
        "[a-z./é]{0,8}".prop_map(|p| format!("*** Add File: {p}")),
        "[a-z./é]{0,8}".prop_map(|p| format!("*** Update File: {p}")),
        "[a-z./]{0,8}".prop_map(|p| format!("*** Delete File: {p}")),
        "[a-z./]{0,8}".prop_map(|p| format!("*** Move to: {p}")),
        "[a-z ->]{0,12}".prop_map(|p| format!("*** Move File: {p}")),
        ".{0,12}".prop_map(|h| format!("@@ {h}")),
        ".{0,20}".prop_map(|t| format!("+{t}")),
        ".{0,20}".prop_map(|t| format!("-{t}")),
        ".{0,20}".prop_map(|t| format!(" {t}")),
        ".{0,20}",
        Just(String::new()),
    ];
    prop::collection::vec(line, 0..24).prop_map(|lines| lines.join("\n"))
}

/// Commands mixing shell syntax with noise.
fn shell_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("rm -rf /".to_string()),
        Just("sudo".to_string()),
        Just("bash -c \"".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("$(".to_string()),
        Just(")".to_string()),
        Just("`".to_string()),
        Just("<<EOF\n".to_string()),
        Just("\nEOF\n".to_string()),
        Just("<<<".to_string()),
        Just("| ".to_string()),
        Just("; ".to_string()),
        Just("&& ".to_string()),
        Just("$'\\x".to_string()),
        Just("${IFS}".to_string()),
        Just("2>&".to_string()),
        Just(":(){ :|:& };:".to_string()),
        Just("find . -exec ".to_string()),
        Just("xargs ".to_string()),
        Just("kill -".to_string()),
        ".{0,10}",
    ];
    prop::collection::vec(piece, 0..20).prop_map(|p| p.join(" "))
}

/// A text of short lines and a pattern cut from it, then perturbed.
fn text_and_pattern() -> impl Strategy<Value = (String, String)> {
    let line = prop_oneof!["[ \t]{0,4}[a-z(){};=“”—…]{0,12}", ".{0,16}"];
    (
        prop::collection::vec(line, 1..40),
        any::<prop::sample::Index>(),
        1usize..6,
        any::<u8>(),
    )
        .prop_map(|(lines, at, len, noise)| {
            let text = lines.join("\n");
            let start = at.index(lines.len());
            let end = (start + len).min(lines.len());
            let mut pattern = lines[start..end].join("\n");
            match noise % 4 {
                0 => pattern = pattern.replace(' ', "  "),
                1 => pattern = pattern.trim().to_string(),
                2 => pattern.push('x'),
                _ => {}
            }
            (text, pattern)
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn v4a_parser_never_panics(text in patch_text()) {
        let _ = v4a::parse(&text);
        let _ = v4a::touched_paths(&text);
    }

    #[test]
    fn v4a_parser_never_panics_on_anything(text in ".{0,300}") {
        let _ = v4a::parse(&text);
    }

    #[test]
    fn v4a_plans_never_panic(text in patch_text()) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a"), "alpha\nbeta\n").unwrap();
        if let Ok(ops) = v4a::parse(&text) {
            let _ = hermes_tools::patch::apply::plan(&ops, tmp.path(), &Default::default());
        }
    }

    #[test]
    fn fuzzy_matching_never_panics((text, pattern) in text_and_pattern(), new in ".{0,30}") {
        if let Some(found) = fuzzy::locate(&text, &pattern) {
            for &(s, e) in &found.ranges {
                prop_assert!(s < e && e <= text.len());
                prop_assert!(text.is_char_boundary(s) && text.is_char_boundary(e));
            }
            let _ = fuzzy::replace(&text, &found, &pattern, &new);
        }
    }

    #[test]
    fn fuzzy_matching_never_panics_on_anything(text in ".{0,200}", pattern in ".{1,40}") {
        if let Some(found) = fuzzy::locate(&text, &pattern) {
            let _ = fuzzy::replace(&text, &found, &pattern, "x");
        }
    }

    #[test]
    fn the_command_checker_never_panics(command in shell_text()) {
        let c = CommandChecker::new(Some(Path::new("/home/u")), Some(Path::new("/home/u/.hermes")));
        let _ = c.classify(&command);
    }

    #[test]
    fn the_command_checker_never_panics_on_anything(command in ".{0,200}") {
        let _ = CommandChecker::default().classify(&command);
    }
}
