//! The home's management subcommands through the binary: `hermes profile` (with the sticky
//! `active_profile` the Python Hermes also reads), `hermes memory` and `hermes tools`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;

use hermes_testkit::{MockServer, Script, TestHome, Turn};

#[test]
fn profiles_are_created_listed_made_sticky_and_deleted() {
    let server = MockServer::start(Script::new(vec![Turn::text("from the work profile")]));
    let home = TestHome::new();
    home.write_file("SOUL.md", "You are terse.");
    home.write_file("memories/MEMORY.md", "Deploys go through staging");

    let o = run(&home, &["profile", "create", "work", "--clone"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Copied from"), "{}", stdout(&o));
    let work = home.hermes_home().join("profiles/work");
    assert_eq!(
        std::fs::read_to_string(work.join("SOUL.md")).unwrap(),
        "You are terse."
    );
    assert!(work.join("memories/MEMORY.md").is_file());
    std::fs::write(
        work.join("config.yaml"),
        hermes_testkit::mock_config_yaml(&server),
    )
    .unwrap();

    let bad = run(&home, &["profile", "create", "Bad Name"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("is not a profile name"),
        "{}",
        stderr(&bad)
    );
    assert_eq!(
        run(&home, &["profile", "create", "work"]).status.code(),
        Some(2)
    );
    assert_eq!(
        run(&home, &["profile", "use", "nope"]).status.code(),
        Some(2)
    );

    // Sticky: runs without -p go to the work profile (its config points at the mock).
    let o = run(&home, &["profile", "use", "work"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(home.hermes_home().join("active_profile")).unwrap(),
        "work\n",
        "the Python Hermes's format"
    );
    let listing = stdout(&run(&home, &["profile", "list"]));
    assert!(listing.contains("  default "), "{listing}");
    assert!(listing.contains("* work "), "{listing}");
    assert!(listing.contains("custom · mock-model"), "{listing}");
    let o = run(&home, &["-z", "hi"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "from the work profile\n");
    let shown = stdout(&run(&home, &["profile", "show"]));
    assert!(shown.starts_with("Profile   work (sticky)\n"), "{shown}");
    assert!(shown.contains("sessions.db"), "{shown}");

    // Deleting needs --yes without a terminal; the sticky choice goes with it.
    let o = run(&home, &["profile", "delete", "work"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(work.is_dir());
    let o = run(&home, &["profile", "delete", "work", "--yes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!work.exists());
    assert!(!home.hermes_home().join("active_profile").exists());
}

#[test]
fn a_sticky_profile_that_is_gone_is_a_clear_error() {
    let home = TestHome::new();
    home.write_file("active_profile", "ghost\n");
    let o = run(&home, &["-z", "hi"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("names the profile `ghost`, which does not exist")
            && err.contains("hermes profile use default"),
        "{err}"
    );
    // `-p default` still reaches the home itself, and `profile use default` repairs it.
    assert!(run(&home, &["profile", "use", "default"]).status.success());
    assert!(!home.hermes_home().join("active_profile").exists());
}

#[test]
fn memory_status_show_and_reset() {
    let home = TestHome::new();
    home.write_file(
        "memories/MEMORY.md",
        "Deploys go through staging\n§\nThe CI runs on 2 cores",
    );
    let o = run(&home, &["memory"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("MEMORY.md · 2 entries · 51/2,200 chars"),
        "{out}"
    );
    assert!(out.contains("USER.md · 0 entries · 0/1,375 chars"), "{out}");
    let shown = stdout(&run(&home, &["memory", "show"]));
    assert!(
        shown.contains("  • Deploys go through staging\n"),
        "{shown}"
    );

    let refused = run(&home, &["memory", "reset"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("add --yes"),
        "{}",
        stderr(&refused)
    );
    let o = run(&home, &["memory", "reset", "--target", "memory", "--yes"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Erased MEMORY.md.\n");
    assert!(stdout(&run(&home, &["memory"])).contains("MEMORY.md · 0 entries"));
}

#[test]
fn tools_lists_what_a_run_offers() {
    let home = TestHome::new();
    home.write_config("toolsets: [terminal, file, vision, messaging]\n");
    let o = run(&home, &["tools"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("Toolsets from `toolsets`: terminal, file, vision, messaging\n"),
        "{out}"
    );
    assert!(out.contains("✓ terminal\n    terminal"), "{out}");
    assert!(out.contains("✓ vision\n    vision_analyze"), "{out}");
    assert!(out.contains("· todo\n"), "{out}");
    // `send_message` exists only in the gateway.
    assert!(
        out.contains("! toolset `messaging` is not available in this build"),
        "{out}"
    );
    // The Python Hermes's key wins over `toolsets`.
    home.write_config("toolsets: [terminal]\nplatform_toolsets:\n  cli: [todo]\n");
    let out = stdout(&run(&home, &["tools", "list"]));
    assert!(
        out.starts_with("Toolsets from `platform_toolsets.cli`: todo\n"),
        "{out}"
    );
    assert!(
        out.contains("✓ todo\n") && out.contains("· terminal\n"),
        "{out}"
    );
}

#[test]
fn tools_enable_and_disable_edit_the_setting_in_effect() {
    let server = MockServer::start(Script::new(vec![Turn::text("ok")]));
    let home = TestHome::new();
    home.write_config(&format!(
        "{}# what the model may use\ntoolsets: [hermes-cli, web]   # web comes later\n",
        hermes_testkit::mock_config_yaml(&server)
    ));
    let o = run(&home, &["tools", "disable", "terminal"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(config.contains("# what the model may use\n"), "{config}");
    assert!(config.contains("# web comes later"), "{config}");
    assert!(
        !config.contains("hermes-cli"),
        "the group is spelled out: {config}"
    );
    assert!(
        config.contains("web"),
        "a toolset this build lacks is kept: {config}"
    );
    assert_eq!(
        stdout(&run(&home, &["tools", "disable", "terminal"])),
        "Already disabled: terminal.\n"
    );
    let unknown = run(&home, &["tools", "enable", "teleport"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown toolset `teleport`"),
        "{}",
        stderr(&unknown)
    );

    // The next run offers no terminal tool.
    assert!(run(&home, &["-z", "hi"]).status.success());
    let tools: Vec<String> = server.chat_requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!tools.contains(&"terminal".to_string()), "{tools:?}");
    assert!(tools.contains(&"read_file".to_string()), "{tools:?}");

    // With the Python Hermes's key present, that is the one edited.
    home.write_config("toolsets: [terminal]\nplatform_toolsets:\n  cli: [todo]\n");
    assert!(
        run(&home, &["-p", "default", "tools", "enable", "clarify"])
            .status
            .success()
    );
    let config = std::fs::read_to_string(home.hermes_home().join("config.yaml")).unwrap();
    assert!(config.contains("cli: [todo, clarify]"), "{config}");
    assert!(config.starts_with("toolsets: [terminal]\n"), "{config}");
}

#[test]
fn a_profile_given_before_the_subcommand_is_used() {
    let home = TestHome::new();
    assert!(run(&home, &["profile", "create", "lab"]).status.success());
    home.write_file("profiles/lab/memories/USER.md", "Prefers short answers");
    let out = stdout(&run(&home, &["-p", "lab", "memory"]));
    assert!(out.contains("USER.md · 1 entry"), "{out}");
    let out = stdout(&run(&home, &["memory", "-p", "lab"]));
    assert!(out.contains("USER.md · 1 entry"), "{out}");
}
