//! The SSH terminal backend through the binary (`hermes -z` against the scripted mock model)
//! and a private OpenSSH server on a loopback port (throwaway host and user keys, its own
//! known_hosts, the remote HOME a test directory): commands run over ssh in the remote working
//! directory, a remote file is read and patched (replace mode, and a V4A patch that edits,
//! adds, moves and deletes, all or nothing), an `execute_code` script runs there with its
//! tool calls answered through request files, the home's skills, caches and credential files
//! are pushed to the remote `~/.hermes` (and removals follow), a background job survives sshd being
//! restarted (every connection cut) and its log keeps growing afterwards, the session's end
//! kills it, an unknown host key is refused with the fix named, and `hermes doctor` reports
//! the connection. One test measures the per-command cost of ssh against local commands.
//!
//! Skipped with a printed reason where sshd cannot run (not installed, not root).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use hermes_testkit::sshd::{Sshd, current_user};
use hermes_testkit::{MockServer, Script, TestHome, Turn};
use serde_json::{Value, json};

fn sshd() -> Option<Sshd> {
    match Sshd::start() {
        Ok(d) => Some(d),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// Tool results in a chat request so far.
fn tool_count(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count())
}

fn ssh_config(d: &Sshd, known_hosts: &Path, cwd: &Path) -> String {
    format!(
        "terminal:\n  backend: ssh\n  ssh_host: 127.0.0.1\n  ssh_user: {}\n  ssh_port: {}\n  ssh_key: {}\n  ssh_known_hosts: {}\n  ssh_cwd: {}\n",
        current_user(),
        d.port(),
        d.user_key().display(),
        known_hosts.display(),
        cwd.display()
    )
}

fn remote_cwd(d: &Sshd) -> std::path::PathBuf {
    let cwd = d.remote_home().join("work dir");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(cwd.join("marker.txt"), "remote-marker-7f3a\n").unwrap();
    cwd
}

fn processes() -> String {
    let o = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn commands_files_and_a_background_job_that_survives_a_cut_connection() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    std::fs::write(cwd.join("notes.txt"), "alpha line\nbeta line\n").unwrap();
    let home = TestHome::new();
    let d = Arc::new(Mutex::new(d));
    let turns = vec![
        Turn::tool(
            "terminal",
            json!({"command": "cat marker.txt; pwd; echo \"conn=$SSH_CONNECTION\"; echo \"home=$HOME\""}),
        ),
        Turn::tool("read_file", json!({"path": "notes.txt"})),
        Turn::tool(
            "patch",
            json!({"path": "notes.txt", "old_string": "beta line", "new_string": "beta patched"}),
        ),
        Turn::tool(
            "terminal",
            json!({"command": "echo started; sleep 3; echo after-cut; sleep 67", "background": true}),
        ),
        Turn::tool("process", json!({"action": "poll", "id": "proc_1"})),
        // sshd restarts before this turn is answered (below).
        Turn::tool("process", json!({"action": "poll", "id": "proc_1"})),
        Turn::tool(
            "terminal",
            json!({"command": "ps -eo args | grep '[s]leep 67'"}),
        ),
        Turn::tool("process", json!({"action": "log", "id": "proc_1"})),
        Turn::tool("read_file", json!({"path": "~/work dir/notes.txt"})),
        Turn::text("done"),
    ];
    let restarted = Arc::new(Mutex::new(false));
    let server = {
        let d = d.clone();
        let restarted = restarted.clone();
        MockServer::start(Script::responding(move |request| {
            let n = tool_count(request);
            if n == 5 {
                let mut once = restarted.lock().unwrap();
                if !*once {
                    *once = true;
                    d.lock().unwrap().restart().unwrap();
                    // The job prints "after-cut" while the connection is down; the follower
                    // reconnects and reads it.
                    std::thread::sleep(Duration::from_secs(6));
                }
            }
            turns.get(n).cloned().unwrap_or_else(|| Turn::text("done"))
        }))
    };
    let (config, known) = {
        let d = d.lock().unwrap();
        (ssh_config(&d, &d.known_hosts(), &cwd), d.known_hosts())
    };
    let _ = known;
    home.write_config(&format!(
        "{}{config}",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let first = tool_result(&server, 0);
    let out = first["output"].as_str().unwrap();
    assert!(out.contains("remote-marker-7f3a"), "{first}");
    assert!(out.contains(&cwd.display().to_string()), "{first}");
    assert!(out.contains("conn=127.0.0.1 "), "not over ssh: {first}");
    let remote_home = d.lock().unwrap().remote_home();
    assert!(
        out.contains(&format!("home={}", remote_home.display())),
        "{first}"
    );

    let read = tool_result(&server, 1);
    assert_eq!(read["content"], "1|alpha line\n2|beta line", "{read}");
    let patch = tool_result(&server, 2);
    assert_eq!(patch["replacements"], 1, "{patch}");
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "alpha line\nbeta patched\n"
    );

    let job = tool_result(&server, 3);
    assert_eq!(job["id"], "proc_1", "{job}");
    let poll = tool_result(&server, 4);
    assert_eq!(poll["status"], "running", "{poll}");
    assert!(*restarted.lock().unwrap());
    let poll = tool_result(&server, 5);
    assert_eq!(
        poll["status"], "running",
        "the job died with the connection: {poll}"
    );
    let ps = tool_result(&server, 6);
    assert!(
        ps["output"].as_str().unwrap().contains("sleep 67"),
        "the job is not running after the restart: {ps}"
    );
    let log = tool_result(&server, 7).to_string();
    assert!(log.contains("started"), "{log}");
    assert!(
        log.contains("after-cut"),
        "output after the cut is missing: {log}"
    );
    let tilde = tool_result(&server, 8);
    assert_eq!(tilde["content"], "1|alpha line\n2|beta patched", "{tilde}");

    // The session's end killed the job on the remote side and removed its files.
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes().contains("sleep 67") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !processes().contains("sleep 67"),
        "the job outlived the session"
    );
    let exec = remote_home.join(".hermes/exec");
    let left: Vec<_> = std::fs::read_dir(&exec)
        .map(|r| r.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "files left in {}: {left:?}",
        exec.display()
    );
}

#[test]
fn a_v4a_patch_edits_adds_moves_and_deletes_remote_files_all_or_nothing() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    std::fs::write(cwd.join("app.py"), "def main():\n    print('hi')\n").unwrap();
    std::fs::write(cwd.join("old.txt"), "obsolete\n").unwrap();
    std::fs::write(cwd.join("draft.md"), "# Draft\nbody\n").unwrap();
    let home = TestHome::new();
    let good = "*** Begin Patch\n*** Update File: app.py\n@@ def main():\n-    print('hi')\n+    print('hello')\n*** Add File: notes/todo.md\n+- ship it\n*** Delete File: old.txt\n*** Update File: draft.md\n*** Move to: docs/final.md\n-# Draft\n+# Final\n*** End Patch";
    // The second hunk matches nothing: the first file must stay as it was.
    let bad = "*** Begin Patch\n*** Update File: app.py\n-    print('hello')\n+    print('bye')\n*** Update File: docs/final.md\n-no such line\n+x\n*** End Patch";
    let server = MockServer::start(Script::new(vec![
        Turn::tool("patch", json!({"mode": "patch", "patch": good})),
        Turn::tool("patch", json!({"mode": "patch", "patch": bad})),
        Turn::text("done"),
    ]));
    home.write_config(&format!(
        "{}{}",
        hermes_testkit::mock_config_yaml(&server),
        ssh_config(&d, &d.known_hosts(), &cwd)
    ));
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let applied = tool_result(&server, 0);
    assert_eq!(applied["files_modified"], json!(["app.py"]), "{applied}");
    assert_eq!(
        applied["files_created"],
        json!(["notes/todo.md", "docs/final.md"]),
        "{applied}"
    );
    assert_eq!(
        applied["files_deleted"],
        json!(["old.txt", "draft.md"]),
        "{applied}"
    );
    assert!(
        applied["diff"]
            .as_str()
            .unwrap()
            .contains("-    print('hi')\n+    print('hello')"),
        "{applied}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("app.py")).unwrap(),
        "def main():\n    print('hello')\n"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes/todo.md")).unwrap(),
        "- ship it\n"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("docs/final.md")).unwrap(),
        "# Final\nbody\n"
    );
    assert!(!cwd.join("old.txt").exists());
    assert!(!cwd.join("draft.md").exists());

    let refused = tool_result(&server, 1);
    let error = refused["error"].as_str().unwrap();
    assert!(
        error.starts_with("patch not applied (no file was changed):\n  • docs/final.md: hunk 1"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("app.py")).unwrap(),
        "def main():\n    print('hello')\n",
        "nothing of a refused patch is written"
    );
}

#[test]
fn execute_code_runs_the_script_on_the_remote_host_and_its_tool_calls_come_back_through_files() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    let home = TestHome::new();
    let code = "import os\nfrom hermes_tools import read_file, write_file, terminal\nprint('cwd', os.getcwd())\nprint('over-ssh', bool(os.environ.get('SSH_CONNECTION')))\nr = read_file('marker.txt')\nprint('read', r['content'])\nw = write_file('from-script.txt', 'written by the script\\n')\nprint('created', w['created'])\nt = terminal('cat from-script.txt; echo exit-$?')\nprint('term', t['output'].strip())\nprint('files', sorted(os.listdir(os.environ['HERMES_RPC_DIR'])))\nprint('dir', os.path.dirname(os.environ['HERMES_RPC_DIR']))\n";
    let server = MockServer::start(Script::new(vec![
        Turn::tool("execute_code", json!({"code": code})),
        Turn::tool(
            "execute_code",
            json!({"code": "import sys\nprint('partial')\nsys.exit(3)"}),
        ),
        Turn::text("done"),
    ]));
    home.write_config(&format!(
        "{}{}",
        hermes_testkit::mock_config_yaml(&server),
        ssh_config(&d, &d.known_hosts(), &cwd)
    ));
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let ran = tool_result(&server, 0);
    assert_eq!(ran["status"], "success", "{ran}");
    assert_eq!(ran["tool_calls_made"], 3, "{ran}");
    let out = ran["output"].as_str().unwrap();
    assert!(
        out.contains(&format!("cwd {}\n", cwd.display())),
        "the script runs in ssh_cwd: {out}"
    );
    assert!(out.contains("over-ssh True\n"), "{out}");
    assert!(out.contains("read 1|remote-marker-7f3a\n"), "{out}");
    assert!(out.contains("created True\n"), "{out}");
    assert!(
        out.contains("term written by the script\nexit-0\n"),
        "{out}"
    );
    assert!(
        out.contains("files []"),
        "requests and answers are consumed: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("from-script.txt")).unwrap(),
        "written by the script\n"
    );
    let failed = tool_result(&server, 1);
    assert_eq!(failed["status"], "error", "{failed}");
    assert_eq!(failed["exit_code"], 3, "{failed}");
    assert!(failed["output"].as_str().unwrap().starts_with("partial"));
    // The run directory is gone.
    let dir = out
        .lines()
        .find_map(|l| l.strip_prefix("dir "))
        .expect("the script printed its directory");
    assert!(dir.contains("/hermes-code-"), "{dir}");
    assert!(!std::path::Path::new(dir).exists(), "{dir} was left behind");
}

#[test]
fn the_homes_skills_caches_and_credential_files_are_pushed_and_removals_follow() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    let home = TestHome::new();
    let hh = home.hermes_home();
    for (rel, text) in [
        (
            "skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: d\n---\nRun scripts/go.sh\n",
        ),
        ("skills/deploy/scripts/go.sh", "echo deploying\n"),
        ("cache/documents/report.txt", "quarterly\n"),
        ("secrets/token.json", "{\"t\": 1}\n"),
        ("memories/MEMORY.md", "stays here\n"),
    ] {
        std::fs::create_dir_all(hh.join(rel).parent().unwrap()).unwrap();
        std::fs::write(hh.join(rel), text).unwrap();
    }
    // `exec/` holds the ssh backend's own bookkeeping.
    let list = "cd ~/.hermes && find . -type f -not -path './exec/*' | sort && sh skills/deploy/scripts/go.sh";
    let turns = [
        Turn::tool("terminal", json!({"command": list})),
        // Between these turns a skill file is removed and another changed here.
        Turn::tool("terminal", json!({"command": list})),
        Turn::text("done"),
    ];
    let server = {
        let hh = hh.clone();
        MockServer::start(Script::responding(move |request| {
            let n = tool_count(request);
            if n == 1 {
                let _ = std::fs::remove_file(hh.join("cache/documents/report.txt"));
                std::fs::write(
                    hh.join("skills/deploy/scripts/go.sh"),
                    "echo deploying v2\n",
                )
                .unwrap();
            }
            turns.get(n).cloned().unwrap_or_else(|| Turn::text("done"))
        }))
    };
    home.write_config(&format!(
        "{}{}  credential_files: [secrets/token.json, ../escape.txt]\n",
        hermes_testkit::mock_config_yaml(&server),
        ssh_config(&d, &d.known_hosts(), &cwd)
    ));
    let o = home
        .command(bin())
        .env("HERMES_FORCE_FILE_SYNC", "1")
        .args(["-z", "go"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let first = tool_result(&server, 0);
    assert_eq!(
        first["output"],
        "./cache/documents/report.txt\n./secrets/token.json\n./skills/deploy/SKILL.md\n./skills/deploy/scripts/go.sh\ndeploying",
        "{first}"
    );
    let second = tool_result(&server, 1);
    assert_eq!(
        second["output"],
        "./secrets/token.json\n./skills/deploy/SKILL.md\n./skills/deploy/scripts/go.sh\ndeploying v2",
        "{second}"
    );
    assert!(!d.remote_home().join(".hermes/memories").exists());
}

#[test]
fn an_unknown_host_key_is_refused_and_doctor_reports_the_connection() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    let home = TestHome::new();
    let empty = home.root().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();

    let server = MockServer::start(Script::new(vec![
        Turn::tool("terminal", json!({"command": "touch refused.txt"})),
        Turn::tool("read_file", json!({"path": "marker.txt"})),
        Turn::text("done"),
    ]));
    home.write_config(&format!(
        "{}{}",
        hermes_testkit::mock_config_yaml(&server),
        ssh_config(&d, &empty, &cwd)
    ));
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let fix = format!(
        "ssh-keyscan -p {} 127.0.0.1 >> {}",
        d.port(),
        empty.display()
    );
    for n in [0, 1] {
        let r = tool_result(&server, n);
        let e = r["error"].as_str().unwrap_or_default();
        assert!(e.contains("host key of 127.0.0.1"), "{r}");
        assert!(e.contains(&fix), "{r}");
    }
    assert!(!cwd.join("refused.txt").exists());

    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.contains("backend ssh"))
        .unwrap_or_else(|| panic!("no terminal line: {text}"));
    assert!(line.contains(&fix), "{text}");

    home.write_config(&ssh_config(&d, &d.known_hosts(), &cwd));
    let doctor = home
        .command(bin())
        .args(["doctor", "--offline"])
        .output()
        .unwrap();
    let text = stdout(&doctor);
    let line = text
        .lines()
        .find(|l| l.contains("backend ssh"))
        .unwrap_or_else(|| panic!("no terminal line: {text}"));
    assert!(line.contains("accepts the key, host key known"), "{text}");
    assert!(
        line.contains(&d.remote_home().display().to_string()),
        "{text}"
    );
}

/// Wall time of a `-z` session running `true` `n` times through the terminal tool.
fn time_trues(home: &TestHome, backend_config: &str, n: usize) -> Duration {
    let mut turns: Vec<Turn> = (0..n)
        .map(|i| Turn::tool("terminal", json!({"command": format!("true {i}")})))
        .collect();
    turns.push(Turn::text("done"));
    let server = MockServer::start(Script::new(turns));
    home.write_config(&format!(
        "{}{backend_config}",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let started = Instant::now();
    let o = home.command(bin()).args(["-z", "go"]).output().unwrap();
    let took = started.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(tool_result(&server, n - 1)["exit_code"], 0);
    took
}

#[test]
fn per_command_overhead_of_ssh_against_local() {
    let Some(d) = sshd() else { return };
    let cwd = remote_cwd(&d);
    let home = TestHome::new();
    let n = 20;
    let local = time_trues(&home, "terminal:\n  backend: local\n", n);
    let ssh = time_trues(&home, &ssh_config(&d, &d.known_hosts(), &cwd), n);
    let per = |t: Duration| t.as_secs_f64() * 1000.0 / n as f64;
    eprintln!(
        "{n} x `true` through the terminal tool: local {:.0} ms ({:.1} ms/command), ssh {:.0} ms ({:.1} ms/command), ssh overhead {:.1} ms/command (one connection setup included)",
        local.as_secs_f64() * 1000.0,
        per(local),
        ssh.as_secs_f64() * 1000.0,
        per(ssh),
        per(ssh) - per(local)
    );
    // A fresh connection per command would cost far more than multiplexing over the master.
    assert!(per(ssh) - per(local) < 250.0, "ssh too slow per command");
}
