//! The system prompt, assembled from layers in a fixed order so that the stable part stays
//! byte-identical across a session (prompt caches stay warm): identity, how to use tools, the
//! platform's display rules, and the environment (working directory, date, model).

use std::path::Path;

/// What the prompt describes about this session.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    /// Replaces the built-in identity (the content of `$HERMES_HOME/SOUL.md`).
    pub identity: Option<&'a str>,
    pub cwd: &'a Path,
    pub model: &'a str,
    pub provider: &'a str,
    /// `YYYY-MM-DD`, fixed for the session.
    pub date: &'a str,
    /// Names of the tools the model has.
    pub tool_names: &'a [&'a str],
    /// Where replies are shown (`cli`, ...).
    pub platform: &'a str,
}

const IDENTITY: &str = "You are Hermes, an AI agent that gets real work done for the user. You are direct, accurate and brief, and you say plainly when you are unsure or something failed.";

const TOOL_RULES: &str = "# Using tools
- When the task needs action, act: call the tools in this reply instead of describing what you would do.
- Call independent read-only tools (reading files, searching) together in one reply.
- Check your work: run the test, read the file back, look at the command's output.
- When you are done, reply without tool calls: a short summary of what you did and what you found.";

const CLI_HINT: &str = "# Output
Your reply is shown in a terminal. Use plain text or light markdown; keep it short.";

/// Builds the system prompt.
pub fn build(inputs: &PromptInputs<'_>) -> String {
    let mut layers: Vec<String> = Vec::with_capacity(4);
    layers.push(
        inputs
            .identity
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .unwrap_or(IDENTITY)
            .to_string(),
    );
    if !inputs.tool_names.is_empty() {
        layers.push(TOOL_RULES.to_string());
    }
    if inputs.platform == "cli" {
        layers.push(CLI_HINT.to_string());
    }
    layers.push(format!(
        "# Environment\nWorking directory: {}\nDate: {}\nModel: {} ({})",
        inputs.cwd.display(),
        inputs.date,
        inputs.model,
        inputs.provider
    ));
    layers.join("\n\n")
}

/// Today's date in UTC as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_convert() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn layers_in_order_and_soul_replaces_identity() {
        let tools = ["terminal"];
        let inputs = PromptInputs {
            cwd: Path::new("/w"),
            model: "m",
            provider: "p",
            date: "2026-11-30",
            tool_names: &tools,
            platform: "cli",
            identity: None,
        };
        let p = build(&inputs);
        let a = p.find("You are Hermes").unwrap();
        let b = p.find("# Using tools").unwrap();
        let c = p.find("# Environment").unwrap();
        assert!(a < b && b < c);
        assert!(p.contains("Working directory: /w\nDate: 2026-11-30\nModel: m (p)"));
        let p2 = build(&PromptInputs {
            identity: Some("You are Ares."),
            ..inputs.clone()
        });
        assert!(p2.starts_with("You are Ares.") && !p2.contains("You are Hermes"));
        assert_eq!(build(&inputs), p, "deterministic");
    }
}
