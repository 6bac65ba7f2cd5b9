//! The Singularity/Apptainer terminal backend through the binary. Neither Apptainer nor
//! Singularity can be installed here, so the main test puts the testkit's fake `apptainer`
//! (which records its argument vectors and runs commands on this machine) first on PATH and
//! asserts the exact CLI calls the Python Hermes makes (`version`, `build` of a `docker://`
//! image into a cached SIF, `instance start --containall --no-home --writable-tmpfs --memory
//! --cpus IMAGE NAME`, `exec instance://NAME`, `instance stop NAME`), plus `--cleanenv` so the
//! host's variables stay out. A second test drives a real `apptainer` when one is on PATH and
//! otherwise prints why it is skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hermes_testkit::apptainer::{FakeApptainer, real_apptainer};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::json;

fn script() -> Script {
    Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo in-instance; pwd; env"})),
        Turn::tool(
            "write_file",
            json!({"path": "notes/a.txt", "content": "hello world\n"}),
        ),
        Turn::tool(
            "patch",
            json!({"path": "notes/a.txt", "old_string": "hello world", "new_string": "hello apptainer"}),
        ),
        Turn::tool("read_file", json!({"path": "notes/a.txt"})),
        Turn::tool(
            "terminal",
            json!({"command": "sleep 7715; echo never", "timeout": 1}),
        ),
        Turn::tool(
            "terminal",
            json!({"command": "ps -eo args | grep 'sleep 771[5]' || echo no-sleep"}),
        ),
        Turn::text("done"),
    ])
}

#[test]
fn commands_run_in_an_instance_with_the_python_hermes_flags() {
    let fake = FakeApptainer::install();
    let home = TestHome::new();
    let server = MockServer::start(script());
    home.write_config(&format!(
        "{}terminal:\n  backend: singularity\n  container_persistent: false\n  container_memory: 1024\n  container_cpu: 2\n",
        hermes_testkit::mock_config_yaml(&server),
    ));
    std::fs::write(
        home.hermes_home().join(".env"),
        "HERMES_DOTENV_SECRET_TOKEN=dotenv-secret-value-123\n",
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        fake.bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = home
        .command(bin())
        .env("PATH", &path)
        .env("OPENAI_API_KEY", "sk-host-secret-abcdef123456")
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let calls = fake.calls();
    assert_eq!(calls[0], "version", "{calls:#?}");
    let sif = home
        .hermes_home()
        .join("sandboxes/singularity/.apptainer/nikolaik-python-nodejs-python3.11-nodejs20.sif");
    assert_eq!(
        calls[1],
        format!(
            "build {} docker://nikolaik/python-nodejs:python3.11-nodejs20",
            sif.display()
        ),
        "{calls:#?}"
    );
    let start = calls
        .iter()
        .find(|c| c.starts_with("instance start"))
        .unwrap();
    let name = start.rsplit(' ').next().unwrap().to_string();
    assert!(name.starts_with("hermes_"), "{start}");
    assert_eq!(
        *start,
        format!(
            "instance start --containall --no-home --writable-tmpfs --memory 1024M --cpus 2 {} {name}",
            sif.display()
        )
    );
    let execs: Vec<&String> = calls.iter().filter(|c| c.starts_with("exec")).collect();
    assert!(!execs.is_empty());
    for e in &execs {
        assert!(
            e.starts_with(&format!("exec --cleanenv instance://{name} sh -c")),
            "{e}"
        );
    }
    assert_eq!(
        calls.last().unwrap(),
        &format!("instance stop {name}"),
        "stopped at session end"
    );
    assert!(fake.instances().is_empty());

    let env = tool_result(&server, 0);
    let out = env["output"].as_str().unwrap();
    assert!(out.contains("in-instance"), "{out}");
    for secret in [
        "OPENAI_API_KEY",
        "HERMES_DOTENV_SECRET_TOKEN",
        "sk-host-secret",
        "dotenv-secret",
    ] {
        assert!(
            !out.contains(secret),
            "{secret} reached the instance: {out}"
        );
    }
    assert_eq!(tool_result(&server, 1)["created"], true);
    assert_eq!(tool_result(&server, 2)["replacements"], 1);
    assert_eq!(tool_result(&server, 3)["content"], "1|hello apptainer");
    let timed_out = tool_result(&server, 4);
    assert!(
        timed_out["error"].as_str().unwrap().contains("timed out"),
        "{timed_out}"
    );
    let ps = tool_result(&server, 5);
    assert!(ps["output"].as_str().unwrap().contains("no-sleep"), "{ps}");

    let doctor = home
        .command(bin())
        .env("PATH", &path)
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    assert!(text.contains("apptainer version 1.3.4-fake"), "{text}");
    let doctor = home
        .command(bin())
        .env("PATH", "/nonexistent")
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    assert!(
        text.contains("neither apptainer nor singularity is on PATH"),
        "{text}"
    );
    assert!(text.contains("install Apptainer"), "{text}");
}

#[test]
fn a_missing_cli_is_a_clear_error() {
    let home = TestHome::new();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo hi"})),
        Turn::text("done"),
    ]));
    home.write_config(&format!(
        "{}terminal:\n  backend: singularity\n",
        hermes_testkit::mock_config_yaml(&server),
    ));
    let o = home
        .command(bin())
        .env("PATH", "/nonexistent")
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = tool_result(&server, 0)["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.contains("neither `apptainer` nor `singularity` runs here"),
        "{e}"
    );
}

#[test]
fn a_real_apptainer_runs_commands() {
    let Some(real) = real_apptainer() else {
        eprintln!(
            "skipping: no apptainer or singularity on PATH (no Debian package; install Apptainer to run this test)"
        );
        return;
    };
    let Ok(image) = std::env::var("HERMES_TEST_SIF") else {
        eprintln!(
            "skipping: {} is on PATH but HERMES_TEST_SIF (a local .sif image) is not set",
            real.display()
        );
        return;
    };
    let home = TestHome::new();
    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "echo real-apptainer"})),
        Turn::text("done"),
    ]));
    home.write_config(&format!(
        "{}terminal:\n  backend: singularity\n  singularity_image: {image}\n  container_persistent: false\n",
        hermes_testkit::mock_config_yaml(&server),
    ));
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = tool_result(&server, 0);
    assert!(
        out["output"]
            .as_str()
            .unwrap_or_default()
            .contains("real-apptainer"),
        "{out}"
    );
}
