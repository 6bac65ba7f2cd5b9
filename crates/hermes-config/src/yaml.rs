//! YAML text to a JSON value tree, with `${VAR}` substituted in every string value. Syntax
//! errors name the file, line and column.

use std::path::Path;

use serde_json::Value;

use crate::{ConfigError, Environment};

/// Parses YAML into a value tree; an empty document is `Null`.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Value, ConfigError> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_saphyr::from_str::<Value>(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        ConfigError::Yaml {
            path: path.to_path_buf(),
            line,
            column,
            message: first_line(&e.without_snippet().to_string()),
        }
    })
}

/// Substitutes `${VAR}` in string values (keys, numbers and booleans are left alone).
pub(crate) fn substitute(value: &mut Value, env: &Environment) {
    match value {
        Value::String(s) if s.contains("${") => *s = env.substitute(s),
        Value::Array(items) => items.iter_mut().for_each(|v| substitute(v, env)),
        Value::Object(map) => map.values_mut().for_each(|v| substitute(v, env)),
        _ => {}
    }
}

/// The first line of the parser's message, without the position it repeats.
fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or(s).trim();
    match line.rfind(" at line ") {
        Some(i) => line[..i].trim_end_matches(',').to_string(),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_line_and_column() {
        let err = parse(
            Path::new("/h/config.yaml"),
            "model:\n  default: [unclosed\n",
        )
        .unwrap_err();
        match err {
            ConfigError::Yaml { line, path, .. } => {
                assert!(line >= 2, "line {line}");
                assert_eq!(path, Path::new("/h/config.yaml"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn substitution_reaches_nested_strings_only() {
        let env = Environment::isolated([("K", "secret")]);
        let mut v = parse(Path::new("c"), "a:\n  b: ${K}\n  n: 3\nl: [\"x${K}\"]\n").unwrap();
        substitute(&mut v, &env);
        assert_eq!(v["a"]["b"], "secret");
        assert_eq!(v["a"]["n"], 3);
        assert_eq!(v["l"][0], "xsecret");
    }
}
