//! Rendering real and hand-made templates to the exact text Hugging Face would produce.

use super::*;
use serde_json::json;

fn qwen() -> JinjaTemplate {
    JinjaTemplate::new(
        include_str!("../testdata/qwen2.5.jinja"),
        "<|endoftext|>",
        "<|im_end|>",
        ToolFormat::Hermes,
    )
}

fn read_file() -> Vec<ToolSchema> {
    vec![ToolSchema {
        name: "read_file".into(),
        description: "Read a file.".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

const QWEN_SYSTEM_WITH_TOOLS: &str = "<|im_start|>system\nBe brief.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"description\": \"Read a file.\", \"parameters\": {\"properties\": {\"path\": {\"type\": \"string\"}}, \"required\": [\"path\"], \"type\": \"object\"}}}\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

#[test]
fn qwen_gets_its_tools_section_and_tool_turns_in_its_own_syntax() {
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.txt"}"#.into(),
    };
    let messages = vec![
        Message::user("show a.txt"),
        Message::assistant_with_tools("", vec![call]),
        Message::tool_result("call_1", "read_file", "hello"),
    ];
    let prompt = qwen().render("Be brief.", &messages, &read_file()).unwrap();
    let expected = format!(
        "{QWEN_SYSTEM_WITH_TOOLS}<|im_start|>user\nshow a.txt<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"a.txt\"}}}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nhello\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(prompt, expected);
}

#[test]
fn the_prefix_is_the_system_prompt_and_tools_that_every_prompt_starts_with() {
    let template = qwen();
    let prefix = template.render_prefix("Be brief.", &read_file()).unwrap();
    assert_eq!(prefix, QWEN_SYSTEM_WITH_TOOLS);
    let prompt = template
        .render("Be brief.", &[Message::user("hi")], &read_file())
        .unwrap();
    assert!(prompt.starts_with(&prefix));
}

#[test]
fn without_tools_the_template_takes_its_plain_branch() {
    let prompt = qwen()
        .render("Be brief.", &[Message::user("hi")], &[])
        .unwrap();
    assert_eq!(
        prompt,
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn tojson_writes_like_pythons_json_dumps() {
    let template = JinjaTemplate::new(
        "{{ tools[0].function.parameters | tojson }}|{{ tools[0].function.parameters | tojson(indent=2) }}|{{ 'a\"b\\n\u{e9}' | tojson }}",
        "",
        "",
        ToolFormat::Llama3,
    );
    let tools = vec![ToolSchema {
        name: "t".into(),
        description: String::new(),
        parameters: json!({"a": [1, 2.5, 1e-5], "b": {}, "c": null, "d": true}),
    }];
    let out = template.render("", &[], &tools).unwrap();
    assert_eq!(
        out,
        "{\"a\": [1, 2.5, 1e-05], \"b\": {}, \"c\": null, \"d\": true}|{\n  \"a\": [\n    1,\n    2.5,\n    1e-05\n  ],\n  \"b\": {},\n  \"c\": null,\n  \"d\": true\n}|\"a\\\"b\\n\u{e9}\""
    );
}

#[test]
fn python_methods_and_helpers_work() {
    let template = JinjaTemplate::new(
        "{{ bos_token }}{{ messages[0].content.strip().upper() }}{% if messages[0].content.startswith(' x') %}!{% endif %}{{ strftime_now('%Y') | length }}",
        "<s>",
        "</s>",
        ToolFormat::Llama3,
    );
    let out = template.render(" x y ", &[], &[]).unwrap();
    assert_eq!(out, "<s>X Y!4");
}

#[test]
fn mistral_call_ids_are_nine_stable_alphanumerics() {
    let template = JinjaTemplate::new(
        "{% for m in messages %}{% for c in m.tool_calls %}{{ c.id }}{% endfor %}{% if m.tool_call_id %}={{ m.tool_call_id }}{% endif %}{% endfor %}",
        "",
        "",
        ToolFormat::Mistral,
    );
    let call = ToolCall {
        id: "call_18f3a".into(),
        name: "todo".into(),
        arguments: "{}".into(),
    };
    let messages = vec![
        Message::assistant_with_tools("", vec![call]),
        Message::tool_result("call_18f3a", "todo", "[]"),
    ];
    let out = template.render("", &messages, &[]).unwrap();
    let (id, answer) = out.split_once('=').unwrap();
    assert_eq!(id, answer);
    assert_eq!(id.len(), 9);
    assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
}

#[test]
fn hostile_templates_fail_cleanly() {
    let run = |source: &str| {
        JinjaTemplate::new(source, "", "", ToolFormat::Hermes)
            .render("s", &[], &[])
            .unwrap_err()
            .to_string()
    };
    assert!(
        run("{{ raise_exception('Conversation roles must alternate') }}")
            .contains("Conversation roles must alternate")
    );
    let endless =
        run("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}");
    assert!(endless.contains("fuel"), "{endless}");
    assert!(run("{% if %}").contains("syntax"), "{}", run("{% if %}"));
    let nested = run("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    assert!(nested.contains("recursion"), "{nested}");
}

#[test]
fn civil_dates() {
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(19_723), (2024, 1, 1));
    assert_eq!(civil_from_days(19_782), (2024, 2, 29));
}
