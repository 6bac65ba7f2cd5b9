//! Rendering a model's own Jinja chat template the way Hugging Face's `apply_chat_template`
//! does: OpenAI-style `messages` (assistant `tool_calls` with their arguments as objects,
//! `tool` results), `tools` as `{"type": "function", "function": {...}}`,
//! `add_generation_prompt`, `bos_token` / `eos_token`, blocks trimmed (`trim_blocks`,
//! `lstrip_blocks`), Python's string methods, `raise_exception`, `strftime_now`, and a `tojson`
//! that writes JSON as Python's `json.dumps` does (`", "` and `": "`), the text the model saw in
//! training. A template comes from a model file, so it is untrusted: rendering is bounded by
//! fuel and recursion limits and fails with an error instead of running away.

use hermes_protocol::{Message, Role, ToolCall, ToolSchema};
use minijinja::value::{Kwargs, Serde, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind};
use serde::Serialize;

use super::ToolFormat;

/// Instructions a template may run per render: far above what real templates need for a long
/// conversation, far below a runaway loop.
const FUEL: u64 = 5_000_000;
/// Output a render may produce (bytes): a context window of text many times over.
const MAX_OUTPUT: usize = 8 << 20;

/// Why a template could not be rendered.
#[derive(Debug, thiserror::Error)]
#[error("the model's chat template failed: {0}")]
pub struct RenderError(String);

/// A Jinja chat template and the special tokens it may print.
#[derive(Debug, Clone)]
pub struct JinjaTemplate {
    source: String,
    bos_token: String,
    eos_token: String,
    format: ToolFormat,
}

/// One message as the template sees it.
#[derive(Debug, Serialize)]
struct TemplateMessage {
    role: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<TemplateCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Debug, Serialize)]
struct TemplateCall {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    function: TemplateFunction,
}

#[derive(Debug, Serialize)]
struct TemplateFunction {
    name: String,
    arguments: serde_json::Value,
}

#[derive(Debug, Serialize)]
struct TemplateTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: TemplateToolFunction<'a>,
}

#[derive(Debug, Serialize)]
struct TemplateToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: serde_json::Value,
}

impl JinjaTemplate {
    pub fn new(
        source: impl Into<String>,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
        format: ToolFormat,
    ) -> Self {
        JinjaTemplate {
            source: source.into(),
            bos_token: bos_token.into(),
            eos_token: eos_token.into(),
            format,
        }
    }

    pub fn format(&self) -> ToolFormat {
        self.format
    }

    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    /// The prompt for a conversation, ending where the assistant's reply begins.
    pub fn render(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSchema],
    ) -> Result<String, RenderError> {
        self.render_with(system, messages, tools, true)
    }

    /// The part of every prompt of a session that comes before the conversation: the system
    /// prompt and the tools section (what the KV-state cache keeps).
    pub fn render_prefix(&self, system: &str, tools: &[ToolSchema]) -> Result<String, RenderError> {
        self.render_with(system, &[], tools, false)
    }

    fn render_with(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolSchema],
        add_generation_prompt: bool,
    ) -> Result<String, RenderError> {
        let env = environment();
        let template = env
            .template_from_str(&self.source)
            .map_err(|e| RenderError(describe(&e)))?;
        let mut listed = Vec::with_capacity(messages.len() + 1);
        if !system.trim().is_empty() {
            listed.push(TemplateMessage {
                role: "system",
                content: system.to_string(),
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
            });
        }
        listed.extend(messages.iter().map(|m| self.message(m)));
        let tools: Vec<TemplateTool<'_>> = tools
            .iter()
            .map(|t| TemplateTool {
                kind: "function",
                function: TemplateToolFunction {
                    name: &t.name,
                    description: &t.description,
                    // Sorted keys: the same prompt whatever serde_json's features.
                    parameters: hermes_protocol::json_order::sorted_keys(&t.parameters),
                },
            })
            .collect();
        // No tools: `none`, so both `{% if tools %}` and `{% if tools is not none %}` skip the
        // section.
        let tools_value = if tools.is_empty() {
            Value::from(())
        } else {
            Value::from(Serde(&tools))
        };
        let ctx = minijinja::context! {
            messages => Value::from(Serde(&listed)),
            tools => tools_value,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
            date_string => today("%d %b %Y"),
        };
        let out = template
            .render(ctx)
            .map_err(|e| RenderError(describe(&e)))?;
        if out.len() > MAX_OUTPUT {
            return Err(RenderError(format!(
                "it produced {} bytes, more than the {MAX_OUTPUT} allowed",
                out.len()
            )));
        }
        Ok(out)
    }

    fn message(&self, message: &Message) -> TemplateMessage {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        TemplateMessage {
            role,
            content: message.content.clone(),
            tool_calls: message.tool_calls.iter().map(|c| self.call(c)).collect(),
            tool_call_id: message.tool_call_id.as_deref().map(|id| self.call_id(id)),
            name: message.name.clone(),
        }
    }

    fn call(&self, call: &ToolCall) -> TemplateCall {
        // Templates print the arguments with `tojson`: they must be an object, not JSON text.
        let arguments = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .filter(serde_json::Value::is_object)
            .map(|a| hermes_protocol::json_order::sorted_keys(&a))
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()));
        TemplateCall {
            id: self.call_id(&call.id),
            kind: "function",
            function: TemplateFunction {
                name: call.name.clone(),
                arguments,
            },
        }
    }

    /// Mistral's templates refuse call ids that are not 9 letters or digits: ours are mapped
    /// to such an id (the same one for the call and its result).
    fn call_id(&self, id: &str) -> String {
        if self.format != ToolFormat::Mistral {
            return id.to_string();
        }
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        // FNV-1a: stable across runs, so a conversation renders the same every time.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        (0..9)
            .map(|i| {
                let index = (hash >> (i * 6)) % ALPHABET.len() as u64;
                char::from(ALPHABET[index as usize])
            })
            .collect()
    }
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
    {
        env.set_syntax(syntax);
    }
    env.set_fuel(Some(FUEL));
    env.set_recursion_limit(64);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", tojson);
    env.add_function(
        "raise_exception",
        |message: String| -> Result<Value, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, message))
        },
    );
    env.add_function("strftime_now", |format: String| today(&format));
    env
}

fn describe(error: &Error) -> String {
    match error.detail() {
        Some(detail) => format!("{} ({detail})", error.kind()),
        None => error.to_string(),
    }
}

/// `tojson` as Hugging Face defines it: `json.dumps(value, ensure_ascii=False, indent=...)`.
fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    // Accepted for compatibility; keys keep their order either way.
    let _: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let mut out = String::new();
    write_json(&mut out, value, indent, 0)?;
    Ok(Value::from_safe_string(out))
}

fn write_json(
    out: &mut String,
    value: &Value,
    indent: Option<usize>,
    level: usize,
) -> Result<(), Error> {
    if level > 64 {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "tojson: value nested too deeply",
        ));
    }
    let newline = |out: &mut String, level: usize| {
        if let Some(width) = indent {
            out.push('\n');
            out.push_str(&" ".repeat(width * level));
        }
    };
    // Python: ", " between items without indent, "," (then a newline) with it.
    let separator = if indent.is_some() { "," } else { ", " };
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => out.push_str("null"),
        ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::Number => match value.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => {
                let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
                if f.is_finite() {
                    out.push_str(&python_float(f));
                } else {
                    out.push_str("NaN");
                }
            }
        },
        ValueKind::String => write_string(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, level + 1);
                write_json(out, item, indent, level + 1)?;
            }
            if !items.is_empty() {
                newline(out, level);
            }
            out.push(']');
        }
        ValueKind::Map => {
            let keys: Vec<Value> = value.try_iter()?.collect();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(separator);
                }
                newline(out, level + 1);
                match key.as_str() {
                    Some(k) => write_string(out, k),
                    None => write_string(out, &key.to_string()),
                }
                out.push_str(": ");
                write_json(out, &value.get_item(key)?, indent, level + 1)?;
            }
            if !keys.is_empty() {
                newline(out, level);
            }
            out.push('}');
        }
        _ => write_string(out, &value.to_string()),
    }
    Ok(())
}

/// Python's `repr` of a float for the values schemas hold (`1.0`, `0.5`, `1e-05`).
fn python_float(f: f64) -> String {
    let s = format!("{f:?}");
    if s.contains('e') {
        // Rust writes `1e-5`, Python `1e-05`.
        match s.split_once('e') {
            Some((mantissa, exp)) => {
                let (sign, digits) = match exp.strip_prefix('-') {
                    Some(d) => ("-", d),
                    None => ("+", exp),
                };
                format!("{mantissa}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        s
    }
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Today's date (UTC) in the few `strftime` forms chat templates use: `%d`, `%m`, `%Y`, `%b`,
/// `%B`, `%y`, `%%`; anything else is kept as written.
fn today(format: &str) -> String {
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let name = MONTHS[(month as usize).saturating_sub(1).min(11)];
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str(&format!("{day:02}")),
            Some('m') => out.push_str(&format!("{month:02}")),
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            Some('b') => out.push_str(&name[..3]),
            Some('B') => out.push_str(name),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
