//! `state_changed` events into messages for the agent, as the Python adapter words them: the
//! filters (ignored entities first; then watched domains or entities; else everything only
//! with `watch_all`), a per-entity cooldown (the entities remembered are bounded), and
//! domain-specific sentences (`[Home Assistant] Kitchen: turned on`). An event whose state did
//! not change says nothing.

use std::collections::HashMap;
use std::time::Instant;

use serde_json::Value;

use super::settings::HomeAssistantSettings;

/// Entities whose last forwarded event is remembered for the cooldown.
const REMEMBERED: usize = 10_000;

/// The filters and the cooldown memory of one adapter.
#[derive(Debug, Default)]
pub(crate) struct EventGate {
    last: HashMap<String, Instant>,
}

impl EventGate {
    /// The message for `event` (a `state_changed` event's `event` object) when it passes the
    /// filters and the cooldown at `now`.
    pub fn admit(
        &mut self,
        s: &HomeAssistantSettings,
        event: &Value,
        now: Instant,
    ) -> Option<(String, String)> {
        let data = &event["data"];
        let entity = data["entity_id"].as_str().filter(|e| !e.is_empty())?;
        if s.ignore_entities.contains(entity) {
            return None;
        }
        let domain = entity.split_once('.').map_or("", |(d, _)| d);
        if !s.watch_domains.is_empty() || !s.watch_entities.is_empty() {
            if !s.watch_domains.contains(domain) && !s.watch_entities.contains(entity) {
                return None;
            }
        } else if !s.watch_all {
            return None;
        }
        if let Some(at) = self.last.get(entity)
            && now.duration_since(*at) < s.cooldown
        {
            return None;
        }
        let text = describe(entity, &data["old_state"], &data["new_state"])?;
        if self.last.len() >= REMEMBERED {
            let cutoff = now.checked_sub(s.cooldown).unwrap_or(now);
            self.last.retain(|_, at| *at > cutoff);
            if self.last.len() >= REMEMBERED {
                self.last.clear();
            }
        }
        self.last.insert(entity.to_string(), now);
        Some((entity.to_string(), text))
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "?".into(),
        other => other.to_string(),
    }
}

/// The Python adapter's sentence for a state change; `None` when nothing changed.
pub(crate) fn describe(entity: &str, old: &Value, new: &Value) -> Option<String> {
    if !new.is_object() {
        return None;
    }
    let old_val = old["state"].as_str().unwrap_or("unknown");
    let new_val = new["state"].as_str().unwrap_or("unknown");
    if old_val == new_val {
        return None;
    }
    let attrs = &new["attributes"];
    let name = attrs["friendly_name"].as_str().unwrap_or(entity);
    let on_off = |v: &str, on: &'static str, off: &'static str| if v == "on" { on } else { off };
    let domain = entity.split_once('.').map_or("", |(d, _)| d);
    Some(match domain {
        "climate" => format!(
            "[Home Assistant] {name}: HVAC mode changed from '{old_val}' to '{new_val}' (current: {}, target: {})",
            text_of(&attrs["current_temperature"]),
            text_of(&attrs["temperature"])
        ),
        "sensor" => {
            let unit = attrs["unit_of_measurement"].as_str().unwrap_or("");
            format!("[Home Assistant] {name}: changed from {old_val}{unit} to {new_val}{unit}")
        }
        "binary_sensor" => format!(
            "[Home Assistant] {name}: {} (was {})",
            on_off(new_val, "triggered", "cleared"),
            on_off(old_val, "triggered", "cleared")
        ),
        "light" | "switch" | "fan" => format!(
            "[Home Assistant] {name}: turned {}",
            on_off(new_val, "on", "off")
        ),
        "alarm_control_panel" => {
            format!("[Home Assistant] {name}: alarm state changed from '{old_val}' to '{new_val}'")
        }
        _ => format!("[Home Assistant] {name} ({entity}): changed from '{old_val}' to '{new_val}'"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;
    use std::time::Duration;

    fn settings(
        domains: &[&str],
        entities: &[&str],
        ignore: &[&str],
        all: bool,
    ) -> HomeAssistantSettings {
        let set = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
        HomeAssistantSettings {
            url: "http://ha:8123".into(),
            token: "t".into(),
            watch_domains: set(domains),
            watch_entities: set(entities),
            ignore_entities: set(ignore),
            watch_all: all,
            cooldown: Duration::from_secs(30),
            notification_title: "Hermes Agent".into(),
        }
    }

    fn change(entity: &str, old: &str, new: &str, attrs: Value) -> Value {
        json!({"event_type": "state_changed", "data": {"entity_id": entity,
            "old_state": {"state": old}, "new_state": {"state": new, "attributes": attrs}}})
    }

    #[test]
    fn sentences_follow_the_python_adapter() {
        let d = |e: &str, o: &str, n: &str, a: Value| {
            describe(
                e,
                &json!({"state": o}),
                &json!({"state": n, "attributes": a}),
            )
        };
        assert_eq!(
            d(
                "light.kitchen",
                "off",
                "on",
                json!({"friendly_name": "Kitchen"})
            )
            .unwrap(),
            "[Home Assistant] Kitchen: turned on"
        );
        assert_eq!(
            d(
                "sensor.t",
                "20.5",
                "21",
                json!({"friendly_name": "Temp", "unit_of_measurement": "°C"})
            )
            .unwrap(),
            "[Home Assistant] Temp: changed from 20.5°C to 21°C"
        );
        assert_eq!(
            d("binary_sensor.door", "off", "on", json!({})).unwrap(),
            "[Home Assistant] binary_sensor.door: triggered (was cleared)"
        );
        assert_eq!(
            d(
                "climate.hall",
                "heat",
                "off",
                json!({"current_temperature": 19, "temperature": 21})
            )
            .unwrap(),
            "[Home Assistant] climate.hall: HVAC mode changed from 'heat' to 'off' (current: 19, target: 21)"
        );
        assert_eq!(
            d(
                "lock.front",
                "locked",
                "unlocked",
                json!({"friendly_name": "Front"})
            )
            .unwrap(),
            "[Home Assistant] Front (lock.front): changed from 'locked' to 'unlocked'"
        );
        assert!(
            d("light.x", "on", "on", json!({})).is_none(),
            "no change, no message"
        );
        assert!(describe("light.x", &Value::Null, &Value::Null).is_none());
    }

    #[test]
    fn filters_and_cooldown() {
        let now = Instant::now();
        let mut gate = EventGate::default();
        let s = settings(&["light"], &["sensor.door"], &["light.noisy"], false);
        assert!(
            gate.admit(&s, &change("light.a", "off", "on", json!({})), now)
                .is_some()
        );
        // Within the cooldown: dropped; after it: forwarded.
        assert!(
            gate.admit(&s, &change("light.a", "on", "off", json!({})), now)
                .is_none()
        );
        assert!(
            gate.admit(
                &s,
                &change("light.a", "on", "off", json!({})),
                now + Duration::from_secs(31)
            )
            .is_some()
        );
        assert!(
            gate.admit(&s, &change("light.noisy", "off", "on", json!({})), now)
                .is_none()
        );
        assert!(
            gate.admit(&s, &change("switch.b", "off", "on", json!({})), now)
                .is_none()
        );
        assert!(
            gate.admit(&s, &change("sensor.door", "1", "2", json!({})), now)
                .is_some()
        );
        // No filter and no watch_all: nothing; watch_all: everything.
        let none = settings(&[], &[], &[], false);
        assert!(
            EventGate::default()
                .admit(&none, &change("light.a", "off", "on", json!({})), now)
                .is_none()
        );
        let all = settings(&[], &[], &[], true);
        assert!(
            EventGate::default()
                .admit(&all, &change("lock.a", "x", "y", json!({})), now)
                .is_some()
        );
        // Hostile shapes.
        for e in [
            json!(null),
            json!({"data": []}),
            json!({"data": {"entity_id": 5}}),
            json!({"data": {"entity_id": "light.a", "new_state": "on"}}),
        ] {
            assert!(EventGate::default().admit(&all, &e, now).is_none());
        }
    }
}
