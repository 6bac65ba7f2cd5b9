//! `hermes gateway` on Home Assistant, end to end: the real binary, the testkit's double of
//! Home Assistant's WebSocket and REST APIs, and the scripted model. A watched entity's state
//! change reaches the agent as the Python adapter words it, and the answer becomes a
//! persistent notification; ignored and unwatched entities never reach the model; a dropped
//! WebSocket is reconnected (auth and subscription again) and events flow on; `hermes doctor`
//! names the home; a wrong token is named as `HASS_TOKEN`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::gateway::Gateway;
use common::*;
use hermes_testkit::platforms::homeassistant::{HA_VERSION, HomeAssistantMock, LOCATION_NAME};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

const TOKEN: &str = "ha-long-lived-token";

fn home_for(ha: &HomeAssistantMock, model: &MockServer, token: &str) -> TestHome {
    let home = TestHome::new();
    home.write_config(&format!(
        "{}platforms:\n  homeassistant:\n    extra:\n      watch_domains: [light]\n      watch_entities: [binary_sensor.front_door]\n      ignore_entities: [light.noisy]\n      cooldown_seconds: 0\n",
        hermes_testkit::mock_config_yaml(model)
    ));
    home.write_file(
        ".env",
        &format!("HASS_TOKEN={token}\nHASS_URL={}\n", ha.url()),
    );
    home
}

fn last_user_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn homeassistant_state_changes_reach_the_agent_and_answers_become_notifications() {
    let model = MockServer::start(Script::new(vec![
        Turn::text("The **kitchen** light is on; nothing to do."),
        Turn::text("Someone opened the front door."),
    ]));
    let ha = HomeAssistantMock::start(TOKEN);
    let home = home_for(&ha, &model, TOKEN);
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "homeassistant started");
    wait("the subscription", || ha.subscribed());

    assert!(ha.change_state(
        "light.kitchen",
        "off",
        "on",
        json!({"friendly_name": "Kitchen"})
    ));
    wait("the notification", || !ha.notifications().is_empty());
    let request = &model.chat_requests()[0];
    assert!(
        last_user_text(request).contains("[Home Assistant] Kitchen: turned on"),
        "{}",
        last_user_text(request)
    );
    let note = &ha.notifications()[0];
    assert_eq!(note["title"], "Hermes Agent");
    assert_eq!(note["message"], "The kitchen light is on; nothing to do.");
    assert!(
        note["notification_id"]
            .as_str()
            .unwrap()
            .starts_with("hermes_")
    );

    // Ignored, unwatched and unchanged: nothing reaches the model.
    ha.change_state("light.noisy", "off", "on", json!({}));
    ha.change_state("switch.pump", "off", "on", json!({}));
    ha.change_state("light.kitchen", "on", "on", json!({}));
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(model.chat_request_count(), 1);

    // The connection drops: the adapter authenticates and subscribes again.
    ha.drop_connection();
    wait("the second subscription", || {
        ha.connections() == 2 && ha.subscribed()
    });
    ha.change_state(
        "binary_sensor.front_door",
        "off",
        "on",
        json!({"friendly_name": "Front door"}),
    );
    wait("the second notification", || ha.notifications().len() == 2);
    assert!(
        last_user_text(&model.chat_requests()[1])
            .contains("[Home Assistant] Front door: triggered (was cleared)")
    );
    drop(gateway);

    let o = run(&home, &["doctor"]);
    let out = stdout(&o);
    let port = ha.url().rsplit(':').next().unwrap().to_string();
    assert!(
        out.contains(&format!(
            "✓ homeassistant {LOCATION_NAME} (Home Assistant {HA_VERSION}) at 127.0.0.1:{port}\n"
        )),
        "{out}"
    );
}

#[test]
fn homeassistant_a_wrong_token_is_named() {
    let model = MockServer::start(Script::new(vec![Turn::text("unused")]));
    let ha = HomeAssistantMock::start(TOKEN);
    let home = home_for(&ha, &model, "wrong-token");
    let o = run(&home, &["doctor"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("✗ homeassistant homeassistant rejected the credentials (HASS_TOKEN)"),
        "{out}"
    );
    let mut gateway = Gateway::start(&home, &[]);
    assert_eq!(gateway.next_line(), "homeassistant started");
    wait("the failed state", || {
        let s = stdout(&run(&home, &["gateway", "status"]));
        s.contains("homeassistant failed") && s.contains("Invalid access token")
    });
    assert!(!ha.subscribed());
    assert_eq!(model.chat_request_count(), 0);
}
