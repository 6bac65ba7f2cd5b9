//! JSON with its object keys in sorted order, whatever order `serde_json` keeps them in: its
//! `preserve_order` feature is switched on for the whole workspace by any dependency that asks
//! for it, so text that users or models see (usage files, tool schemas in prompts) is sorted
//! explicitly here to stay the same from build to build.

use serde_json::{Map, Value};

/// `value` with the keys of every object in it sorted.
pub fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sorted_keys(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_keys_come_out_sorted() {
        let mut inner = Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!([{"y": 1, "b": 2}]));
        let v = Value::Object(inner);
        assert_eq!(
            serde_json::to_string(&sorted_keys(&v)).unwrap_or_default(),
            r#"{"a":[{"b":2,"y":1}],"z":1}"#
        );
    }
}
