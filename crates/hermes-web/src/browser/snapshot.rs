//! The page as the model reads it: Chromium's accessibility tree (CDP
//! `Accessibility.getFullAXTree`, as JSON) rendered one node per line, `- role "name"`, with a
//! ref (`[ref=e3]`) on every element the model can act on and the state that matters (value,
//! checked, disabled, expanded, heading level). Compact mode keeps interactive elements,
//! headings, images and alerts; full mode adds the text. Refs map to DOM nodes
//! (`backendDOMNodeId`) for the click and type tools; they are valid until the next snapshot.

use std::collections::HashMap;

use serde_json::Value;

/// Roles the model can act on: each gets a ref.
const INTERACTIVE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "treeitem",
];
/// Shown in compact mode besides the interactive roles.
const STRUCTURE: &[&str] = &[
    "heading",
    "img",
    "image",
    "alert",
    "status",
    "dialog",
    "alertdialog",
];
/// Containers that indent what they hold (so the model sees which form a field is in).
const LANDMARKS: &[&str] = &[
    "form",
    "navigation",
    "main",
    "dialog",
    "alertdialog",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "region",
];
/// Never shown (their text reaches the model through their parent).
const HIDDEN: &[&str] = &["InlineTextBox", "LineBreak", "none", "presentation"];
/// Longest name shown.
const MAX_NAME: usize = 120;

/// One rendered snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub text: String,
    /// `e1`, `e2`, ... to the backend DOM node id of the element.
    pub refs: HashMap<String, i64>,
}

struct Node<'a> {
    role: &'a str,
    name: String,
    ignored: bool,
    props: Vec<(&'a str, &'a Value)>,
    value: Option<&'a Value>,
    children: Vec<&'a str>,
    backend: Option<i64>,
}

fn ax_value(v: Option<&Value>) -> Option<&Value> {
    v.and_then(|v| v.get("value"))
}

fn parse(node: &Value) -> Option<(&str, Node<'_>)> {
    let id = node.get("nodeId")?.as_str()?;
    let role = ax_value(node.get("role"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = ax_value(node.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let props = node
        .get("properties")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| Some((p.get("name")?.as_str()?, ax_value(p.get("value"))?)))
                .collect()
        })
        .unwrap_or_default();
    let children = node
        .get("childIds")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Some((
        id,
        Node {
            role,
            name,
            ignored: node
                .get("ignored")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            props,
            value: ax_value(node.get("value")),
            children,
            backend: node.get("backendDOMNodeId").and_then(Value::as_i64),
        },
    ))
}

fn shorten(s: &str) -> String {
    if s.chars().count() > MAX_NAME {
        format!("{}…", s.chars().take(MAX_NAME - 1).collect::<String>())
    } else {
        s.to_string()
    }
}

/// Renders the AX tree `nodes` (the `nodes` array of `getFullAXTree`).
pub fn render(nodes: &[Value], full: bool) -> Snapshot {
    let mut by_id: HashMap<&str, Node<'_>> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    let mut is_child: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for n in nodes {
        if let Some((id, node)) = parse(n) {
            is_child.extend(node.children.iter().copied());
            order.push(id);
            by_id.insert(id, node);
        }
    }
    let mut out = Snapshot {
        text: String::new(),
        refs: HashMap::new(),
    };
    let roots: Vec<&str> = order
        .iter()
        .copied()
        .filter(|id| !is_child.contains(id))
        .collect();
    // Iterative depth-first walk: (node id, indent).
    let mut stack: Vec<(&str, usize)> = roots.into_iter().rev().map(|r| (r, 0)).collect();
    let mut visited = std::collections::HashSet::new();
    while let Some((id, indent)) = stack.pop() {
        if !visited.insert(id) {
            continue;
        }
        let Some(node) = by_id.get(id) else { continue };
        let mut child_indent = indent;
        if !node.ignored && !HIDDEN.contains(&node.role) {
            if let Some(line) = line(node, full, &mut out.refs) {
                out.text.push_str(&"  ".repeat(indent));
                out.text.push_str(&line);
                out.text.push('\n');
                if LANDMARKS.contains(&node.role) {
                    child_indent += 1;
                }
            }
            // A link's or button's text is its name: do not repeat it line by line.
            if INTERACTIVE.contains(&node.role) || node.role == "heading" {
                continue;
            }
        }
        for child in node.children.iter().rev() {
            stack.push((child, child_indent));
        }
    }
    out
}

fn line(node: &Node<'_>, full: bool, refs: &mut HashMap<String, i64>) -> Option<String> {
    let role = node.role;
    let name = shorten(&node.name);
    if role == "StaticText" {
        return (full && !name.is_empty()).then(|| format!("- text \"{name}\""));
    }
    let interactive = INTERACTIVE.contains(&role);
    // Unnamed landmarks only add noise in compact mode, except forms and dialogs.
    let landmark = LANDMARKS.contains(&role)
        && (full || !name.is_empty() || matches!(role, "form" | "dialog" | "alertdialog"));
    let shown = interactive
        || STRUCTURE.contains(&role)
        || landmark
        || (full && !name.is_empty() && matches!(role, "paragraph" | "listitem" | "cell" | "code"));
    if !shown {
        return None;
    }
    let mut text = if name.is_empty() {
        format!("- {role}")
    } else {
        format!("- {role} \"{name}\"")
    };
    for (key, v) in &node.props {
        match (*key, *v) {
            ("level", Value::Number(n)) => text.push_str(&format!(" [level={n}]")),
            ("checked", Value::String(s)) if s == "true" || s == "mixed" => {
                text.push_str(&format!(" [checked={s}]"))
            }
            ("checked", Value::Bool(true)) => text.push_str(" [checked]"),
            ("disabled", Value::Bool(true)) => text.push_str(" [disabled]"),
            ("expanded", Value::Bool(b)) => text.push_str(&format!(" [expanded={b}]")),
            ("required", Value::Bool(true)) => text.push_str(" [required]"),
            _ => {}
        }
    }
    if interactive && let Some(backend) = node.backend {
        let r = format!("e{}", refs.len() + 1);
        text.push_str(&format!(" [ref={r}]"));
        refs.insert(r, backend);
    }
    if let Some(Value::String(v)) = node.value
        && !v.is_empty()
        && matches!(
            role,
            "textbox" | "searchbox" | "combobox" | "spinbutton" | "slider"
        )
    {
        text.push_str(&format!(" value=\"{}\"", shorten(v)));
    }
    Some(text)
}

/// `@e3`, `e3`, `[ref=e3]` and `ref=e3` all name ref `e3`.
pub fn normalize_ref(raw: &str) -> String {
    raw.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_start_matches("ref=")
        .trim_start_matches('@')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, role: &str, name: &str, children: &[&str], backend: Option<i64>) -> Value {
        let mut n = json!({
            "nodeId": id, "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": children,
        });
        if let Some(b) = backend {
            n["backendDOMNodeId"] = json!(b);
        }
        n
    }

    #[test]
    fn compact_shows_what_can_be_acted_on_with_refs() {
        let mut heading = node("2", "heading", "Contact us", &["3"], Some(20));
        heading["properties"] =
            json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let mut email = node("6", "textbox", "Email", &[], Some(60));
        email["value"] = json!({"type": "string", "value": "a@b.c"});
        email["properties"] =
            json!([{"name": "required", "value": {"type": "boolean", "value": true}}]);
        let nodes = vec![
            node("1", "RootWebArea", "Contact", &["2", "4", "9"], Some(1)),
            heading,
            node("3", "StaticText", "Contact us", &["31"], None),
            node("4", "form", "", &["5", "6", "7"], Some(40)),
            node("5", "textbox", "Name", &[], Some(50)),
            email,
            node("7", "button", "Send", &["8"], Some(70)),
            node("8", "StaticText", "Send", &[], None),
            node("9", "paragraph", "", &["10"], Some(90)),
            node("10", "StaticText", "We answer   within a day.", &[], None),
            node("31", "InlineTextBox", "Contact us", &[], None),
        ];
        let s = render(&nodes, false);
        assert_eq!(
            s.text,
            "- heading \"Contact us\" [level=1]\n- form\n  - textbox \"Name\" [ref=e1]\n  - textbox \"Email\" [required] [ref=e2] value=\"a@b.c\"\n  - button \"Send\" [ref=e3]\n"
        );
        assert_eq!(s.refs.get("e2"), Some(&60));
        let full = render(&nodes, true);
        assert!(
            full.text.ends_with("- text \"We answer within a day.\"\n"),
            "{}",
            full.text
        );
        assert!(!full.text.contains("- text \"Send\""), "{}", full.text);
    }

    #[test]
    fn refs_are_accepted_in_every_spelling() {
        for r in ["@e3", "e3", "[ref=e3]", " ref=e3 "] {
            assert_eq!(normalize_ref(r), "e3");
        }
    }
}
