//! Images to the model through the binary: `@path` references in a message become image
//! parts in each wire format (Chat Completions, Anthropic Messages, Responses), an unreadable
//! reference is reported and the turn still runs, and `vision_analyze` shows a file to the
//! vision model and returns its answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use base64::Engine;
use common::*;
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::json;

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

fn b64() -> String {
    base64::engine::general_purpose::STANDARD.encode(PNG)
}

fn home_with_image(config: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(config);
    std::fs::create_dir_all(home.workdir().join("shots")).unwrap();
    std::fs::write(home.workdir().join("shots/login.png"), PNG).unwrap();
    home
}

#[test]
fn an_image_reference_reaches_a_chat_completions_model_as_an_image_part() {
    let server = MockServer::start(Script::new(vec![Turn::text("A login form.")]));
    let home = home_with_image(&hermes_testkit::mock_config_yaml(&server));
    let o = run(&home, &["-z", "describe @shots/login.png please"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "A login form.\n");
    let req = &server.chat_requests()[0];
    let user = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"],
        json!([
            {"type": "text", "text": "describe @shots/login.png please"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", b64())}},
        ])
    );
}

#[test]
fn an_image_reference_reaches_anthropic_and_responses_models_in_their_shapes() {
    let server = MockServer::start(Script::new(vec![
        Turn::text("Claude sees it."),
        Turn::text("Codex sees it."),
    ]));
    let root = format!("http://127.0.0.1:{}", server.port());
    let home = home_with_image(&format!(
        "model:\n  provider: anthropic\n  default: claude-sonnet-4-5\n  base_url: {root}\n  api_key: sk-ant-test\n"
    ));
    let o = run(&home, &["-z", "what is @shots/login.png?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    let blocks = &req.body["messages"][0]["content"];
    assert_eq!(
        blocks[0],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64()}})
    );
    assert_eq!(blocks[1]["text"], "what is @shots/login.png?");
    assert_eq!(blocks.as_array().unwrap().len(), 2);

    home.write_config(&format!(
        "model:\n  provider: work\ncustom_providers:\n  - name: work\n    base_url: {}\n    api_key: sk-work\n    api_mode: codex_responses\n    model: gpt-5.1-codex\n",
        server.base_url()
    ));
    let o = run(&home, &["-z", "what is @shots/login.png?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let req = &server.requests()[1];
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.body["input"][0]["content"],
        json!([
            {"type": "input_text", "text": "what is @shots/login.png?"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{}", b64())},
        ])
    );
}

#[test]
fn an_unreadable_image_reference_is_reported_and_the_turn_still_runs() {
    let server = MockServer::start(Script::new(vec![Turn::text("No image here.")]));
    let home = home_with_image(&hermes_testkit::mock_config_yaml(&server));
    std::fs::write(home.workdir().join("fake.png"), "not an image").unwrap();
    let o = run(&home, &["-z", "look at @fake.png and @missing.jpg"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("fake.png is not a PNG, JPEG, GIF or WebP image; sent without it"),
        "{err}"
    );
    assert!(err.contains("cannot read image"), "{err}");
    assert!(err.contains("missing.jpg"), "{err}");
    let req = &server.chat_requests()[0];
    let user = req["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(user["content"], "look at @fake.png and @missing.jpg");
}

#[test]
fn vision_analyze_shows_the_file_to_the_vision_model_and_returns_its_answer() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "vision_analyze",
            json!({"image_url": "shots/login.png", "question": "Is there a password field?"}),
        ),
        Turn::text("Yes, one password field."),
        Turn::text("The screenshot has a password field."),
    ]));
    let home = home_with_image(&hermes_testkit::mock_config_yaml(&server));
    let o = run(&home, &["-z", "check the screenshot", "-t", "vision"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "The screenshot has a password field.\n");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    // The vision request: no tools, the prompt and the question, then the image.
    let vision = &reqs[1];
    assert!(vision.get("tools").is_none(), "{vision}");
    let content = &vision["messages"][0]["content"];
    assert_eq!(
        content[0]["text"],
        "Fully describe and explain everything about this image, then answer the following question:\n\nIs there a password field?"
    );
    assert_eq!(
        content[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", b64())
    );
    // The answer comes back to the session's model as the tool result.
    let result = reqs[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        v,
        json!({"success": true, "analysis": "Yes, one password field."})
    );
}

#[test]
fn vision_analyze_refuses_protected_files() {
    let server = MockServer::start(Script::new(vec![
        Turn::tool(
            "vision_analyze",
            json!({"image_url": "~/.ssh/id_rsa.png", "question": "?"}),
        ),
        Turn::text("refused"),
    ]));
    let home = home_with_image(&hermes_testkit::mock_config_yaml(&server));
    let ssh = home.fake_home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa.png"), PNG).unwrap();
    let o = run(&home, &["-z", "look", "-t", "vision"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2, "the vision model was never asked");
    let result = reqs[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("error"), "{text}");
    assert!(!text.contains("analysis"), "{text}");
}
