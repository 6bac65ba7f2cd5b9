//! `execute_code` through the binary: `hermes -z` with the scripted mock model asking for a
//! Python script that calls our tools through `hermes_tools` (search, then patch two files),
//! scripts that exceed each limit (tool calls, output, time), a script whose `terminal` call is
//! a hardline command (refused), and the iteration the turn gives back (the model calls made
//! after the budget is spent still carry tools). Skipped with a reason when python3 is absent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn have_python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: python3 is not installed (execute_code needs it)");
    }
    ok
}

/// The result the model was sent for the `n`-th tool call of the conversation.
fn tool_result(request: &Value, n: usize) -> Value {
    let content = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .nth(n)
        .and_then(|m| m["content"].as_str())
        .expect("a tool result");
    serde_json::from_str(content).unwrap()
}

fn has_tools(request: &Value) -> bool {
    request["tools"].as_array().is_some_and(|t| !t.is_empty())
}

fn code_turn(code: &str) -> Turn {
    Turn::tool("execute_code", json!({ "code": code }))
}

#[test]
fn a_script_searches_and_patches_two_files_in_one_iteration() {
    if !have_python() {
        return;
    }
    let script = r#"
from hermes_tools import search_files, patch, read_file
found = search_files("OLD_NAME", output_mode="files_only")
files = sorted(f for f in found["files"] if f.endswith(".py"))[:2]
for f in files:
    r = patch(path=f, old_string="OLD_NAME", new_string="new_name", replace_all=True)
    assert "error" not in r, r
print("patched", ", ".join(files))
print("a.py now:", read_file("a.py")["content"].splitlines()[0])
"#;
    let server = MockServer::start(Script::new(vec![
        code_turn(script),
        Turn::text("Renamed in a.py and b.py."),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let work = home.workdir();
    std::fs::write(work.join("a.py"), "OLD_NAME = 1\nprint(OLD_NAME)\n").unwrap();
    std::fs::write(work.join("b.py"), "from a import OLD_NAME\n").unwrap();
    std::fs::write(work.join("c.py"), "# OLD_NAME stays here\n").unwrap();

    // One model call of budget: without the refund the second call would be the tool-less
    // wrap-up call.
    let o = run(
        &home,
        &["-z", "rename OLD_NAME in two files", "--max-turns", "1"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Renamed in a.py and b.py.\n");

    assert_eq!(
        std::fs::read_to_string(work.join("a.py")).unwrap(),
        "new_name = 1\nprint(new_name)\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("b.py")).unwrap(),
        "from a import new_name\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("c.py")).unwrap(),
        "# OLD_NAME stays here\n"
    );

    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2);
    let names: Vec<&str> = reqs[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"execute_code"), "{names:?}");
    assert!(
        has_tools(&reqs[1]),
        "the iteration was refunded: the second call is a normal one"
    );
    let result = tool_result(&reqs[1], 0);
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["tool_calls_made"], 4);
    assert_eq!(
        result["output"], "patched a.py, b.py\na.py now: 1|new_name = 1\n",
        "{result}"
    );
}

#[test]
fn every_limit_stops_a_script_with_a_clear_status() {
    if !have_python() {
        return;
    }
    let too_many_calls = r#"
from hermes_tools import read_file
errors = []
for i in range(55):
    r = read_file("a.txt")
    if "error" in r:
        errors.append((i, r["error"]))
print(len(errors), errors[0])
"#;
    let too_much_output = r#"
for i in range(20000):
    print(f"line {i:05d} " + "x" * 10)
"#;
    let too_slow = "import time\nprint('started', flush=True)\ntime.sleep(60)\nprint('never')\n";
    let server = MockServer::start(Script::new(vec![
        code_turn(too_many_calls),
        code_turn(too_much_output),
        code_turn(too_slow),
        Turn::text("done"),
    ]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}code_execution:\n  timeout: 2\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    std::fs::write(home.workdir().join("a.txt"), "alpha\n").unwrap();

    let o = run(&home, &["-z", "test the limits"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let last = server.chat_requests().pop().unwrap();

    let calls = tool_result(&last, 0);
    assert_eq!(calls["tool_calls_made"], 50, "{calls}");
    assert_eq!(
        calls["output"],
        "5 (50, 'tool call limit reached (50): no more tool calls in this script')\n"
    );

    let output = tool_result(&last, 1);
    assert_eq!(output["status"], "success");
    assert_eq!(output["stdout_truncated"], true);
    assert_eq!(output["stdout_bytes_total"], 20000 * 22);
    let text = output["output"].as_str().unwrap();
    assert!(text.starts_with("line 00000 "), "{}", &text[..40]);
    assert!(text.ends_with("line 19999 xxxxxxxxxx\n"));
    assert!(text.contains("[OUTPUT TRUNCATED: "));
    assert!(text.len() < 51_000, "{}", text.len());

    let slow = tool_result(&last, 2);
    assert_eq!(slow["status"], "timeout", "{slow}");
    assert_eq!(
        slow["error"],
        "the script timed out after 2s and was killed"
    );
    assert_eq!(
        slow["output"],
        "started\n\n\nthe script timed out after 2s and was killed"
    );
}

#[test]
fn a_hardline_command_through_terminal_is_refused() {
    if !have_python() {
        return;
    }
    let script = r#"
from hermes_tools import terminal
r = terminal("rm -rf /")
print("exit_code" in r, r.get("error", "")[:55])
ok = terminal("echo fine")
print(ok["output"], ok["exit_code"])
"#;
    let server = MockServer::start(Script::new(vec![code_turn(script), Turn::text("refused")]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "wipe it", "--yolo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let result = tool_result(&server.chat_requests()[1], 0);
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["tool_calls_made"], 2);
    assert_eq!(
        result["output"], "False BLOCKED (hardline): recursive delete of root filesystem\nfine 0\n",
        "{result}"
    );
}

#[test]
fn scripts_keep_refunding_their_iterations() {
    if !have_python() {
        return;
    }
    let server = MockServer::start(Script::new(vec![
        code_turn("print(1)"),
        code_turn("print(2)"),
        code_turn("print(3)"),
        Turn::text("three scripts ran"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let o = run(&home, &["-z", "run three scripts", "--max-turns", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "three scripts ran\n");
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 4, "four model calls on a budget of two");
    assert!(
        reqs.iter().all(has_tools),
        "none of them was the wrap-up call"
    );
    let outputs: Vec<Value> = (0..3)
        .map(|i| tool_result(&reqs[3], i)["output"].clone())
        .collect();
    assert_eq!(outputs, [json!("1\n"), json!("2\n"), json!("3\n")]);

    // Without execute_code the same budget ends in the wrap-up call.
    let server = MockServer::start(Script::new(vec![
        Turn::tool("read_file", json!({"path": "x"})),
        Turn::tool("read_file", json!({"path": "x"})),
        Turn::text("wrapped up"),
    ]));
    let home = TestHome::new();
    home.write_mock_config(&server);
    let _ = run(&home, &["-z", "read", "--max-turns", "2"]);
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 3);
    assert!(
        !has_tools(&reqs[2]),
        "the third call is the wrap-up call without tools"
    );
}
