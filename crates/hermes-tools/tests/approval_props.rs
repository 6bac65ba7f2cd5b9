//! Property tests of the command checker's fail-closed guarantee: a refused command stays
//! refused whatever it is wrapped in (wrappers that run their arguments, shells and `eval`
//! with any quoting, substitutions, pipes into a shell, encodings piped to a decoder,
//! here-documents, chains, groups, background jobs), to any depth; and arbitrary shell text
//! never makes the checker panic. Cases are bounded and the seed fixed
//! (`hermes_testkit::proptest_config`); explore further with `PROPTEST_RNG_SEED=<n>
//! PROPTEST_CASES=<n>`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hermes_tools::approval::{CommandChecker, Verdict};
use proptest::prelude::*;

fn config() -> ProptestConfig {
    hermes_testkit::proptest_config(300)
}

fn checker() -> CommandChecker {
    CommandChecker::new(
        Some(Path::new("/home/alice")),
        Some(Path::new("/home/alice/.hermes")),
    )
}

/// Commands refused in every mode.
const HARDLINE: &[&str] = &[
    "rm -rf /",
    "rm -rf ~",
    "rm -rf /etc",
    "reboot",
    "shutdown -h now",
    "mkfs.ext4 /dev/sda1",
    "dd if=/dev/zero of=/dev/sda",
    "kill -9 -1",
    "wipefs -a /dev/sda",
    ":(){ :|:& };:",
    "echo b > /proc/sysrq-trigger",
    "systemctl poweroff",
];

/// `'text'` for the shell.
fn single(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `"text"` for the shell.
fn double(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether `cmd` is one simple command, which a prefix such as `sudo` can wrap as it is.
fn simple(cmd: &str) -> bool {
    !cmd.contains([';', '|', '&', '(', ')', '{', '}', '\n', '<', '>', '`', '$'])
}

/// A wrapper prefix applied to `cmd`: directly when it is a simple command, else through
/// `bash -c` (as a user would have to).
fn prefixed(prefix: &str, cmd: &str) -> String {
    if simple(cmd) {
        format!("{prefix} {cmd}")
    } else {
        format!("{prefix} bash -c {}", single(cmd))
    }
}

/// One way of running `cmd` that bash would really run.
fn wrap(kind: u8, cmd: &str) -> String {
    match kind % 34 {
        0 => prefixed("sudo", cmd),
        1 => prefixed("env", cmd),
        2 => prefixed("nohup", cmd),
        3 => prefixed("timeout 10", cmd),
        4 => prefixed("nice -n 5", cmd),
        5 => prefixed("taskset 1", cmd),
        6 => prefixed("chrt -f 1", cmd),
        7 => prefixed("setsid", cmd),
        8 => prefixed("unshare -r", cmd),
        9 => prefixed("stdbuf -oL", cmd),
        10 => format!("bash -c {}", single(cmd)),
        11 => format!("sh -c {}", double(cmd)),
        12 => format!("eval {}", single(cmd)),
        // `$( (...) )`: without the space `$((` would be arithmetic.
        13 => format!("echo $( {cmd} )"),
        // Backquotes nest only with their inner backslashes and backquotes escaped.
        14 => format!("`{}`", cmd.replace('\\', "\\\\").replace('`', "\\`")),
        15 => format!("{{ {cmd}; }}"),
        // `( (...) )`: without the spaces `((` would be arithmetic.
        16 => format!("( {cmd} )"),
        17 => format!("true && {cmd}"),
        18 => format!("false || {cmd}"),
        19 => format!("x=1; {cmd}"),
        20 => format!("{cmd} &"),
        21 => format!("echo {} | sh", single(cmd)),
        22 => format!("echo {} | base64 -d | bash", base64(cmd.as_bytes())),
        23 => format!("bash <<< {}", single(cmd)),
        24 => format!("bash <<'EOF'\n{cmd}\nEOF"),
        25 => format!("script -qc {} /dev/null", single(cmd)),
        26 => format!("flock /tmp/l -c {}", single(cmd)),
        27 => format!(": $(( $( {cmd} ) ))"),
        28 => format!("echo ${{x:-$( {cmd} )}}"),
        29 => format!("source <(echo {})", single(cmd)),
        30 => format!("env -S {}", single(cmd)),
        31 => format!("echo {} > /tmp/x.sh; sh /tmp/x.sh", single(cmd)),
        32 => format!("busybox sh -c {}", single(cmd)),
        _ => format!(
            "python3 -c {}",
            single(&format!("import os; os.system({})", double(cmd)))
        ),
    }
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
        Just("$((".to_string()),
        Just("${x:-".to_string()),
        Just("}".to_string()),
        Just(")".to_string()),
        Just("`".to_string()),
        Just("<<EOF\n".to_string()),
        Just("\nEOF\n".to_string()),
        Just("<<<".to_string()),
        Just("| ".to_string()),
        Just("; ".to_string()),
        Just("&& ".to_string()),
        Just("& ".to_string()),
        Just("$'\\x".to_string()),
        Just("${IFS}".to_string()),
        Just("{a,b}".to_string()),
        Just("{1..9999}".to_string()),
        Just("case x in".to_string()),
        Just("[[".to_string()),
        Just("((".to_string()),
        Just("f(){ f & };".to_string()),
        Just("X=rm;".to_string()),
        Just("$X".to_string()),
        Just("base64 -d".to_string()),
        Just("xargs ".to_string()),
        Just("find . -exec ".to_string()),
        Just("awk 'BEGIN{system(\"".to_string()),
        Just("sed '1e ".to_string()),
        Just("\u{1b}[".to_string()),
        Just("\u{ff03}".to_string()),
        Just("\u{200b}".to_string()),
        ".{0,10}",
    ];
    prop::collection::vec(piece, 0..24).prop_map(|p| p.join(" "))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn wrapping_a_refused_command_never_makes_it_allowed(
        index in 0..HARDLINE.len(),
        wrappers in prop::collection::vec(any::<u8>(), 1..4),
    ) {
        let c = checker();
        let mut cmd = HARDLINE[index].to_string();
        prop_assert!(matches!(c.classify(&cmd), Verdict::Hardline(_)), "{cmd}");
        for w in wrappers {
            cmd = wrap(w, &cmd);
            let verdict = c.classify(&cmd);
            prop_assert!(
                matches!(verdict, Verdict::Hardline(_)),
                "{cmd:?} became {verdict:?}"
            );
        }
    }

    #[test]
    fn random_shell_text_never_panics_and_is_analysed_in_bounds(command in shell_text()) {
        let a = checker().analyse(&command);
        prop_assert!(a.commands.len() <= 512);
    }

    #[test]
    fn arbitrary_unicode_never_panics(command in ".{0,300}") {
        let _ = checker().analyse(&command);
    }
}

#[test]
fn every_wrapper_keeps_every_hardline_command_refused() {
    let c = checker();
    let mut wrong = Vec::new();
    for cmd in HARDLINE {
        for kind in 0..34u8 {
            let wrapped = wrap(kind, cmd);
            if !matches!(c.classify(&wrapped), Verdict::Hardline(_)) {
                wrong.push(format!("{wrapped:?}: {:?}", c.analyse(&wrapped)));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
