//! Repairing the tool calls models get slightly wrong, without ever guessing at what was cut
//! off: empty arguments become `{}`; JSON with trailing commas, raw control characters, code
//! fences or missing closing brackets is fixed; arguments that end inside a string (truncated)
//! are refused; a misspelled tool name is matched to the one registered name it clearly means.

use serde_json::Value;

/// Arguments that cannot be used, with what the model should do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidArguments(pub String);

/// A tool name that matches no registered tool (or several equally well).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Tool '{name}' does not exist. Available tools: {available}")]
pub struct UnknownTool {
    pub name: String,
    /// The registered names, comma-separated.
    pub available: String,
}

/// Parses tool-call arguments, repairing what can safely be repaired. Returns the object and
/// whether a repair was needed, or a message the model can act on.
pub fn parse_arguments(raw: &str) -> Result<(Value, bool), InvalidArguments> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Ok((Value::Object(Default::default()), raw != "{}"));
    }
    let parsed = if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        as_object(v).map(|v| (v, false))
    } else {
        repair_json(trimmed).and_then(|repaired| match serde_json::from_str::<Value>(&repaired) {
            Ok(v) => as_object(v).map(|v| (v, true)),
            Err(e) => Err(format!(
                "the arguments are not valid JSON ({e}); send the call again with a complete JSON object"
            )),
        })
    };
    parsed.map_err(InvalidArguments)
}

/// Objects pass; a string holding an object (double-encoded) is unwrapped.
fn as_object(v: Value) -> Result<Value, String> {
    match v {
        Value::Object(_) => Ok(v),
        Value::Null => Ok(Value::Object(Default::default())),
        Value::String(inner) => match serde_json::from_str::<Value>(&inner) {
            Ok(obj @ Value::Object(_)) => Ok(obj),
            _ => Err("the arguments must be a JSON object, not a string".into()),
        },
        other => Err(format!(
            "the arguments must be a JSON object, got {}",
            kind(&other)
        )),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "an array",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        _ => "a scalar",
    }
}

/// The mechanical repairs. Refuses input that ends inside a string: that is a truncated value,
/// and closing it would run a different command than the model meant.
fn repair_json(text: &str) -> Result<String, String> {
    let text = strip_code_fence(text);
    let mut out = String::with_capacity(text.len() + 8);
    let mut stack: Vec<char> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
                out.push(c);
            } else if c == '\\' {
                escaped = true;
                out.push(c);
            } else if c == '"' {
                in_string = false;
                out.push(c);
            } else if (c as u32) < 0x20 {
                // Raw control characters are invalid inside JSON strings.
                match c {
                    '\n' => out.push_str("\\n"),
                    '\t' => out.push_str("\\t"),
                    '\r' => out.push_str("\\r"),
                    other => out.push_str(&format!("\\u{:04x}", other as u32)),
                }
            } else {
                out.push(c);
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' => {
                stack.push('}');
                out.push(c);
            }
            '[' => {
                stack.push(']');
                out.push(c);
            }
            '}' | ']' => {
                remove_trailing_comma(&mut out);
                if stack.last() == Some(&c) {
                    stack.pop();
                    out.push(c);
                } else {
                    return Err(
                        "the arguments have unbalanced brackets; send a complete JSON object"
                            .into(),
                    );
                }
            }
            _ => out.push(c),
        }
    }
    if in_string {
        return Err(
            "the arguments were cut off inside a string value (possibly by the output limit), so the call was not run; send it again complete (split large content into smaller calls)"
                .into(),
        );
    }
    remove_trailing_comma(&mut out);
    while let Some(close) = stack.pop() {
        out.push(close);
    }
    Ok(out)
}

fn remove_trailing_comma(out: &mut String) {
    let trimmed_len = out.trim_end().len();
    if out[..trimmed_len].ends_with(',') {
        out.truncate(trimmed_len - 1);
    }
}

fn strip_code_fence(text: &str) -> &str {
    let t = text.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
    {
        let body = body.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        return body.trim();
    }
    t
}

/// How sure a fuzzy name match must be.
const NAME_SIMILARITY: f64 = 0.8;

/// The registered tool a (possibly misspelled) name means: exact, then case/separator
/// insensitive, then the single close match. Otherwise an error naming the valid tools.
pub fn match_tool_name(name: &str, registered: &[&str]) -> Result<String, UnknownTool> {
    if registered.contains(&name) {
        return Ok(name.to_string());
    }
    let normal = normalize(name);
    let same: Vec<&&str> = registered
        .iter()
        .filter(|r| normalize(r) == normal)
        .collect();
    if let [only] = same.as_slice() {
        return Ok(only.to_string());
    }
    let mut scored: Vec<(f64, &str)> = registered
        .iter()
        .map(|r| {
            (
                strsim::normalized_damerau_levenshtein(&normal, &normalize(r)),
                *r,
            )
        })
        .filter(|(s, _)| *s >= NAME_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    match scored.as_slice() {
        [(_, best)] => Ok(best.to_string()),
        [(a, best), (b, _), ..] if a - b > 0.1 => Ok(best.to_string()),
        _ => Err(UnknownTool {
            name: name.to_string(),
            available: registered.join(", "),
        }),
    }
}

fn normalize(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    let lower = lower.strip_prefix("functions.").unwrap_or(&lower);
    lower
        .chars()
        .map(|c| {
            if c == '-' || c == ' ' || c == '.' {
                '_'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_and_empty_arguments() {
        assert_eq!(
            parse_arguments("{\"a\":1}").unwrap(),
            (json!({"a": 1}), false)
        );
        assert_eq!(parse_arguments("").unwrap().0, json!({}));
        assert_eq!(parse_arguments("null").unwrap().0, json!({}));
        assert_eq!(
            parse_arguments("\"{\\\"a\\\":2}\"").unwrap().0,
            json!({"a": 2})
        );
    }

    #[test]
    fn repairable_mistakes_are_repaired() {
        assert_eq!(
            parse_arguments("{\"command\": \"echo repaired\"").unwrap(),
            (json!({"command": "echo repaired"}), true)
        );
        assert_eq!(
            parse_arguments("{\"a\": [1, 2,],}").unwrap().0,
            json!({"a": [1, 2]})
        );
        assert_eq!(
            parse_arguments("{\"s\": \"line1\nline2\"}").unwrap().0,
            json!({"s": "line1\nline2"})
        );
        assert_eq!(
            parse_arguments("```json\n{\"a\": 1}\n```").unwrap().0,
            json!({"a": 1})
        );
        assert_eq!(
            parse_arguments("{\"a\": {\"b\": 1").unwrap().0,
            json!({"a": {"b": 1}})
        );
    }

    #[test]
    fn truncated_strings_are_never_completed() {
        let err = parse_arguments("{\"command\": \"echo hel").unwrap_err();
        assert!(err.0.contains("cut off"), "{err}");
        assert!(parse_arguments("{\"a\": 1]").is_err());
        assert!(
            parse_arguments("[1, 2]")
                .unwrap_err()
                .0
                .contains("an array")
        );
        assert!(parse_arguments("{\"a\" 1}").is_err());
    }

    #[test]
    fn names_are_matched_when_unambiguous() {
        let tools = ["terminal", "read_file", "write_file"];
        assert_eq!(match_tool_name("terminal", &tools).unwrap(), "terminal");
        assert_eq!(match_tool_name("termnal", &tools).unwrap(), "terminal");
        assert_eq!(match_tool_name("Read-File", &tools).unwrap(), "read_file");
        assert_eq!(
            match_tool_name("functions.read_file", &tools).unwrap(),
            "read_file"
        );
        let err = match_tool_name("frobnicate", &tools).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Tool 'frobnicate' does not exist. Available tools: terminal, read_file, write_file"
        );
        // "rite_file" is close to write_file only; "_file" is ambiguous.
        assert_eq!(match_tool_name("rite_file", &tools).unwrap(), "write_file");
        assert!(match_tool_name("file", &tools).is_err());
    }
}
