//! `mixture_of_agents` through the binary: the session's model calls the tool, the panel's
//! reference models answer in parallel and the aggregator merges them (all played by the mock,
//! told apart by the model each request names); the exact requests, the merged answer, the
//! failures and the cost reach the model; the cost cap refuses a call before any panel model
//! is asked; the toolset is off unless enabled.

mod common;

use common::{run, stderr, stdout, tool_result};
use hermes_testkit::{MockServer, MockUsage, Reply, Script, TestHome, Turn};
use serde_json::{Value, json};

const QUESTION: &str = "Is 2^61 - 1 prime? Give the reason.";

/// The mock: the session's model (`mock-model`) calls the tool and then answers; the panel's
/// models answer by name.
fn panel_server() -> MockServer {
    MockServer::start(Script::responding(|body: &Value| {
        let usage = |prompt_tokens, completion_tokens| MockUsage {
            prompt_tokens,
            completion_tokens,
            cached_tokens: 0,
        };
        match body["model"].as_str().unwrap_or_default() {
            "claude-sonnet-4.5" => Turn::Reply(
                Reply::text("Yes: it is a Mersenne prime, proven by Euler in 1772.")
                    .with_usage(usage(1_000, 200)),
            ),
            "gpt-5-mini" => Turn::Reply(
                Reply::text("Yes, M61 is prime (Lucas-Lehmer test).").with_usage(usage(1_000, 200)),
            ),
            "agg-model" => Turn::Reply(
                Reply::text("Yes. 2^61-1 is the Mersenne prime M61 (Euler, 1772).")
                    .with_usage(usage(3_000, 500)),
            ),
            _ => {
                let answered = body["messages"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
                if answered {
                    Turn::text("The panel agrees: it is prime.")
                } else {
                    Turn::tool("mixture_of_agents", json!({"user_prompt": QUESTION}))
                }
            }
        }
    }))
}

fn panel_config(server: &MockServer, extra: &str) -> String {
    format!(
        "{}toolsets: [hermes-cli, moa]\ncustom_providers:\n  - name: panel\n    base_url: {url}\n    api_key: sk-panel\nmoa:\n  default_preset: careful\n  presets:\n    careful:\n      reference_models:\n        - {{provider: panel, model: claude-sonnet-4.5}}\n        - {{provider: panel, model: gpt-5-mini}}\n        - {{provider: nokey, model: some-model}}\n      aggregator: {{provider: panel, model: agg-model}}\n      reference_max_tokens: 600\n{extra}",
        hermes_testkit::mock_config_yaml(server),
        url = server.base_url(),
    )
}

fn requests_for(server: &MockServer, model: &str) -> Vec<Value> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| r["model"] == model)
        .collect()
}

#[test]
fn the_panel_answers_in_parallel_and_the_aggregator_merges_with_cost_and_failures_reported() {
    let server = panel_server();
    let home = TestHome::new();
    home.write_config(&panel_config(&server, ""));
    let o = run(&home, &["-z", "Ask the panel whether 2^61-1 is prime."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "The panel agrees: it is prime.");

    // The session's model was offered the tool with its schema.
    let first = &server.chat_requests()[0];
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mixture_of_agents")
        .expect("the tool is offered");
    assert_eq!(
        tool["function"]["parameters"]["required"],
        json!(["user_prompt"])
    );

    // Each reference got the question alone, no tools, its output limit.
    for model in ["claude-sonnet-4.5", "gpt-5-mini"] {
        let reqs = requests_for(&server, model);
        assert_eq!(reqs.len(), 1, "{model}");
        let r = &reqs[0];
        assert_eq!(r["max_tokens"], 600, "{model}");
        assert!(
            r.get("tools")
                .is_none_or(|t| t.as_array().unwrap().is_empty())
        );
        let messages = r["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1, "no system prompt, no conversation: {r}");
        assert_eq!(messages[0]["role"], "user");
        let text = messages[0]["content"].as_str().unwrap();
        assert!(
            text.ends_with(&format!("<question>\n{QUESTION}\n</question>")),
            "{text}"
        );
        assert!(
            !text.contains("Ask the panel"),
            "the conversation is not sent"
        );
    }

    // The aggregator saw both answers, labelled, and the question.
    let agg = requests_for(&server, "agg-model");
    assert_eq!(agg.len(), 1);
    assert_eq!(agg[0]["max_tokens"], 4096);
    let text = agg[0]["messages"][0]["content"].as_str().unwrap();
    assert!(text.contains(&format!("<question>\n{QUESTION}\n</question>")));
    assert!(text.contains(
        "<answer n=\"1\" model=\"panel:claude-sonnet-4.5\">\nYes: it is a Mersenne prime, proven by Euler in 1772.\n</answer>"
    ));
    assert!(text.contains(
        "<answer n=\"2\" model=\"panel:gpt-5-mini\">\nYes, M61 is prime (Lucas-Lehmer test).\n</answer>"
    ));

    // What the session's model read back.
    let result = tool_result(&server, 0);
    assert_eq!(result["success"], true);
    let response = result["response"].as_str().unwrap();
    assert!(
        response.starts_with("Yes. 2^61-1 is the Mersenne prime M61 (Euler, 1772).\n\n[1 of 3 reference models failed: nokey:some-model ("),
        "{response}"
    );
    let meta = &result["metadata"];
    assert_eq!(meta["preset"], "careful");
    assert_eq!(
        meta["reference_models"],
        json!([
            "panel:claude-sonnet-4.5",
            "panel:gpt-5-mini",
            "nokey:some-model"
        ])
    );
    assert_eq!(meta["aggregator_model"], "panel:agg-model");
    assert_eq!(
        meta["rounds_executed"],
        json!([{"round": 1, "succeeded": ["panel:claude-sonnet-4.5", "panel:gpt-5-mini"], "failed": ["nokey:some-model"]}])
    );
    assert_eq!(meta["failed_models"][0]["model"], "nokey:some-model");
    // claude-sonnet-4.5 1000 in / 200 out at $3/$15, gpt-5-mini at $0.25/$2; the aggregator
    // is not in the catalogue, so it is named unpriced.
    assert_eq!(meta["cost_usd"], json!(0.00665));
    assert_eq!(meta["unpriced_models"], json!(["panel:agg-model"]));
    assert_eq!(
        meta["usage"],
        json!({"input_tokens": 5_000, "output_tokens": 900})
    );
    assert_eq!(meta["max_cost_usd"], json!(1.0));
}

#[test]
fn a_call_whose_worst_case_exceeds_the_cap_is_refused_before_any_panel_model_is_asked() {
    let server = panel_server();
    let home = TestHome::new();
    // The worst case: the two priced references at 600 tokens out each, about $0.011 (the
    // aggregator is unpriced).
    home.write_config(&panel_config(&server, "  max_cost_usd: 0.005\n"));
    let server_calls = || {
        server
            .chat_requests()
            .iter()
            .filter(|r| r["model"] != "mock-model")
            .count()
    };
    let o = run(&home, &["-z", "Ask the panel."]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server_calls(), 0, "no panel model was called");
    let result = tool_result(&server, 0);
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("over the cap of $0.0050 (moa.max_cost_usd)"),
        "{result}"
    );
}

#[test]
fn the_toolset_is_off_unless_enabled() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let names: Vec<String> = server.chat_requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!names.iter().any(|n| n == "mixture_of_agents"), "{names:?}");
}

#[test]
fn moa_list_shows_the_presets_as_python_does_and_delete_keeps_the_built_in_default() {
    let server = MockServer::start(Script::new(vec![]));
    let home = TestHome::new();
    home.write_config(&panel_config(
        &server,
        "    quick:\n      reference_models: [\"panel:gpt-5-mini\"]\n      aggregator: {provider: panel, model: gpt-5-mini, reasoning_effort: low}\n",
    ));
    let o = run(&home, &["moa", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "Mixture of Agents presets\nDefault: careful\nActive in config: (off)\n\n  default\n  Reference models:\n    1. openai-codex:gpt-5.5\n    2. openrouter:deepseek/deepseek-v4-pro\n  Aggregator: openrouter:anthropic/claude-opus-4.8\n\n* careful\n  Reference models:\n    1. panel:claude-sonnet-4.5\n    2. panel:gpt-5-mini\n    3. nokey:some-model\n  Aggregator: panel:agg-model\n\n  quick\n  Reference models:\n    1. panel:gpt-5-mini\n  Aggregator: panel:gpt-5-mini [reasoning=low]\n\nCost cap per call: $1.00 (moa.max_cost_usd)\n"
    );

    let o = run(&home, &["moa", "delete", "careful"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Deleted MoA preset: careful\n");
    let o = run(&home, &["moa"]);
    assert!(stdout(&o).contains("Default: default\n"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("careful"));

    let o = run(&home, &["moa", "delete", "quick"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&home, &["moa", "delete", "default"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("The default preset comes with Hermes and cannot be deleted"),
        "{}",
        stderr(&o)
    );
    let o = run(&home, &["moa", "delete", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Unknown MoA preset: nope"));
}
