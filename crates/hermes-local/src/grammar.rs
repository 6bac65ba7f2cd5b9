//! Grammars that constrain a local model's reply: either plain text, or one JSON tool call
//! `{"tool": "<name>", "arguments": {...}}` naming a registered tool with arguments that match
//! its JSON schema. Output is GBNF, the grammar language of llama.cpp's sampler.
//!
//! The schema subset covers what tool schemas use: objects with properties (required ones in
//! order, optional ones optional), strings (with `enum`/`const`), numbers, integers, booleans,
//! null, arrays, type lists and `anyOf`/`oneOf`. Anything else (`$ref`, patterns, nesting
//! deeper than [`MAX_DEPTH`]) accepts any JSON value, so a tool is never made uncallable.

use std::fmt::Write as _;

use hermes_protocol::ToolSchema;
use serde_json::Value;

/// Nesting depth past which a schema accepts any JSON value.
pub const MAX_DEPTH: usize = 8;

/// The shared rules: JSON primitives, any JSON value, and the whitespace allowed between
/// tokens. Whitespace is at most one space so a tiny model cannot loop on blanks.
pub(crate) const BASE_RULES: &str = r#"ws ::= " "?
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
json-integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-number ::= json-integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws ( json-string ws ":" ws json-value ( "," ws json-string ws ":" ws json-value )* )? ws "}"
json-array ::= "[" ws ( json-value ( "," ws json-value )* )? ws "]"
"#;

/// A grammar accepting one tool call to one of `tools` or, when `text_allowed`, plain text
/// (anything that does not start with `{`). With no tools, returns `None`: the reply is
/// unconstrained.
pub fn tool_call_grammar(tools: &[ToolSchema], text_allowed: bool) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut g = GrammarBuilder::default();
    let calls: Vec<String> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let args = g.value(&format!("tool{i}-args"), &tool.parameters, 0);
            let rule = format!("tool{i}");
            g.add(
                &rule,
                format!(
                    "{} ws \",\" ws \"\\\"arguments\\\"\" ws \":\" ws {args}",
                    literal(&json_text(&Value::String(tool.name.clone())))
                ),
            );
            rule
        })
        .collect();
    let mut out = String::new();
    if text_allowed {
        out.push_str("root ::= tool-call | text\n");
        // Plain text may not open with `{` (that would be a tool call) or a blank (which could
        // hide one); after the first character anything goes.
        out.push_str("text ::= [^{ \\t\\n\\r] .*\n");
    } else {
        out.push_str("root ::= tool-call\n");
    }
    let _ = writeln!(
        out,
        "tool-call ::= \"{{\" ws \"\\\"tool\\\"\" ws \":\" ws ( {} ) ws \"}}\"",
        calls.join(" | ")
    );
    out.push_str(&g.rules);
    out.push_str(BASE_RULES);
    Some(out)
}

#[derive(Default)]
pub(crate) struct GrammarBuilder {
    pub(crate) rules: String,
}

impl GrammarBuilder {
    pub(crate) fn add(&mut self, name: &str, body: String) {
        let _ = writeln!(self.rules, "{name} ::= {body}");
    }

    /// The rule (or inline expression) matching values of `schema`; `name` is the rule name to
    /// use when one is needed.
    pub(crate) fn value(&mut self, name: &str, schema: &Value, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "json-value".into();
        }
        let Some(obj) = schema.as_object() else {
            // `true` or a non-object schema: anything.
            return "json-value".into();
        };
        if let Some(constant) = obj.get("const") {
            return literal(&json_text(constant));
        }
        if let Some(Value::Array(options)) = obj.get("enum")
            && !options.is_empty()
        {
            let alts: Vec<String> = options.iter().map(|v| literal(&json_text(v))).collect();
            return format!("( {} )", alts.join(" | "));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = obj.get(key)
                && !options.is_empty()
            {
                let alts: Vec<String> = options
                    .iter()
                    .enumerate()
                    .map(|(i, s)| self.value(&format!("{name}-{i}"), s, depth + 1))
                    .collect();
                return format!("( {} )", alts.join(" | "));
            }
        }
        match obj.get("type") {
            Some(Value::String(t)) => self.typed(name, t, obj, depth),
            Some(Value::Array(types)) => {
                let alts: Vec<String> = types
                    .iter()
                    .filter_map(Value::as_str)
                    .enumerate()
                    .map(|(i, t)| self.typed(&format!("{name}-{i}"), t, obj, depth))
                    .collect();
                if alts.is_empty() {
                    "json-value".into()
                } else {
                    format!("( {} )", alts.join(" | "))
                }
            }
            // No type but properties: an object.
            _ if obj.contains_key("properties") => self.typed(name, "object", obj, depth),
            _ => "json-value".into(),
        }
    }

    fn typed(
        &mut self,
        name: &str,
        kind: &str,
        schema: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> String {
        match kind {
            "string" => "json-string".into(),
            "integer" => "json-integer".into(),
            "number" => "json-number".into(),
            "boolean" => "json-boolean".into(),
            "null" => "json-null".into(),
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.value(&format!("{name}-item"), items, depth + 1),
                    None => "json-value".into(),
                };
                self.add(
                    name,
                    format!("\"[\" ws ( {item} ( \",\" ws {item} )* )? ws \"]\""),
                );
                name.to_string()
            }
            "object" => self.object(name, schema, depth),
            _ => "json-value".into(),
        }
    }

    fn object(
        &mut self,
        name: &str,
        schema: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> String {
        let Some(Value::Object(props)) = schema.get("properties") else {
            return "json-object".into();
        };
        if props.is_empty() {
            self.add(name, "\"{\" ws \"}\"".into());
            return name.to_string();
        }
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut required_pairs = Vec::new();
        let mut optional_pairs = Vec::new();
        for (i, (key, prop)) in props.iter().enumerate() {
            let value = self.value(&format!("{name}-p{i}"), prop, depth + 1);
            let pair = format!(
                "{} ws \":\" ws {value}",
                literal(&json_text(&Value::String(key.clone())))
            );
            if required.contains(&key.as_str()) {
                required_pairs.push(pair);
            } else {
                optional_pairs.push(pair);
            }
        }
        let body = if required_pairs.is_empty() {
            // Any ordered subset of the optional properties, commas only between them.
            let alts: Vec<String> = (0..optional_pairs.len())
                .map(|first| {
                    let mut alt = format!("( {} )", optional_pairs[first]);
                    for later in &optional_pairs[first + 1..] {
                        let _ = write!(alt, " ( \",\" ws {later} )?");
                    }
                    alt
                })
                .collect();
            format!("( {} )?", alts.join(" | "))
        } else {
            let mut body = required_pairs.join(" \",\" ws ");
            for pair in &optional_pairs {
                let _ = write!(body, " ( \",\" ws {pair} )?");
            }
            body
        };
        self.add(name, format!("\"{{\" ws {body} ws \"}}\""));
        name.to_string()
    }
}

pub(crate) fn json_text(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// A GBNF string literal matching exactly `text`.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, parameters: Value) -> ToolSchema {
        ToolSchema {
            name: name.into(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn no_tools_means_no_constraint() {
        assert_eq!(tool_call_grammar(&[], true), None);
    }

    #[test]
    fn each_tool_is_an_alternative_with_its_own_arguments_rule() {
        let g = tool_call_grammar(&[
            tool(
                "terminal",
                json!({"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}}, "required": ["command"]}),
            ),
            tool("todo", json!({"type": "object", "properties": {}})),
        ], true)
        .unwrap();
        assert!(g.starts_with("root ::= tool-call | text\n"), "{g}");
        assert!(g.contains("( tool0 | tool1 )"), "{g}");
        assert!(
            g.contains(
                r#"tool0 ::= "\"terminal\"" ws "," ws "\"arguments\"" ws ":" ws tool0-args"#
            ),
            "{g}"
        );
        assert!(
            g.contains(r#"tool0-args ::= "{" ws "\"command\"" ws ":" ws json-string ( "," ws "\"timeout\"" ws ":" ws json-integer )? ws "}""#),
            "{g}"
        );
        assert!(g.contains(r#"tool1-args ::= "{" ws "}""#), "{g}");
        assert!(g.contains("text ::= "), "{g}");
    }

    #[test]
    fn a_required_call_leaves_no_text_alternative() {
        let g = tool_call_grammar(&[tool("todo", json!({}))], false).unwrap();
        assert!(g.starts_with("root ::= tool-call\n"), "{g}");
        assert!(!g.contains("text ::="), "{g}");
    }

    #[test]
    fn optional_only_objects_allow_any_ordered_subset() {
        let mut b = GrammarBuilder::default();
        let rule = b.value(
            "o",
            &json!({"properties": {"a": {"type": "boolean"}, "b": {"type": "null"}}}),
            0,
        );
        assert_eq!(rule, "o");
        assert_eq!(
            b.rules,
            "o ::= \"{\" ws ( ( \"\\\"a\\\"\" ws \":\" ws json-boolean ) ( \",\" ws \"\\\"b\\\"\" ws \":\" ws json-null )? | ( \"\\\"b\\\"\" ws \":\" ws json-null ) )? ws \"}\"\n"
        );
    }

    #[test]
    fn enums_arrays_and_type_lists() {
        let mut b = GrammarBuilder::default();
        assert_eq!(
            b.value("e", &json!({"type": "string", "enum": ["list", "kill"]}), 0),
            r#"( "\"list\"" | "\"kill\"" )"#
        );
        assert_eq!(
            b.value("t", &json!({"type": ["string", "null"]}), 0),
            "( json-string | json-null )"
        );
        assert_eq!(
            b.value(
                "a",
                &json!({"type": "array", "items": {"type": "number"}}),
                0
            ),
            "a"
        );
        assert!(
            b.rules
                .contains(r#"a ::= "[" ws ( json-number ( "," ws json-number )* )? ws "]""#),
            "{}",
            b.rules
        );
    }

    #[test]
    fn unknown_or_too_deep_schemas_accept_any_value() {
        let mut b = GrammarBuilder::default();
        assert_eq!(b.value("r", &json!({"$ref": "#/x"}), 0), "json-value");
        assert_eq!(b.value("r", &json!(true), 0), "json-value");
        assert_eq!(
            b.value("r", &json!({"type": "string"}), MAX_DEPTH + 1),
            "json-value"
        );
    }

    #[test]
    fn literals_escape_quotes_backslashes_and_control_characters() {
        assert_eq!(literal("a\"b\\c\nd\u{1}"), r#""a\"b\\c\nd\x01""#);
    }
}
