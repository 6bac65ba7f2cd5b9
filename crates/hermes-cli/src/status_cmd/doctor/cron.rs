//! Doctor's check of `cron/jobs.json`: the file the scheduler (`hermes gateway`, `hermes cron
//! tick`) reads every minute. A file it cannot read means no job runs at all, so that is a
//! problem; a job whose schedule this build cannot read is skipped by the scheduler, so that
//! is a warning naming the job.

use hermes_config::{Config, Environment, HermesHome};
use hermes_cron::CronError;

use super::{Check, count};

pub(super) fn cron_check(home: &HermesHome, config: &Config, env: &Environment) -> Check {
    let (store, _) = hermes_runtime::cron::open_store(home, config, env);
    let path = store.jobs_path();
    let shown = path.display();
    if !path.exists() {
        return Check::ok(
            "cron",
            "no jobs yet (`hermes cron add` creates cron/jobs.json)",
        );
    }
    let jobs = match store.list() {
        Ok(jobs) => jobs,
        Err(CronError::Corrupt { reason, .. }) => {
            return Check::fail(
                "cron",
                format!("cron/jobs.json cannot be read ({reason}); no scheduled job runs"),
                format!(
                    "correct the file, or move it aside (`mv {shown} {shown}.bad`) and add the jobs again"
                ),
            );
        }
        Err(e) => return Check::fail("cron", e.to_string(), format!("make {shown} readable")),
    };
    let unreadable: Vec<String> = jobs
        .iter()
        .filter(|j| j.schedule().is_none())
        .map(|j| format!("{} ({})", j.name(), j.id()))
        .collect();
    let active = jobs
        .iter()
        .filter(|j| j.enabled() && j.state() == "scheduled")
        .count();
    let paused = jobs.iter().filter(|j| j.state() == "paused").count();
    let summary = format!(
        "cron/jobs.json: {} ({active} active, {paused} paused)",
        count(jobs.len() as u64, "job")
    );
    if unreadable.is_empty() {
        return Check::ok("cron", summary);
    }
    Check::warn(
        "cron",
        format!(
            "{summary}; the scheduler skips {} whose schedule it cannot read: {}",
            if unreadable.len() == 1 {
                "one"
            } else {
                "those"
            },
            unreadable.join(", ")
        ),
        "give each a schedule again: `hermes cron edit ID --schedule \"every 2h\"`",
    )
}

#[cfg(test)]
mod tests {
    use super::super::Mark;
    use super::*;

    fn check_with(jobs_json: Option<&str>) -> Check {
        let dir = tempfile::tempdir().unwrap();
        if let Some(text) = jobs_json {
            std::fs::create_dir_all(dir.path().join("cron")).unwrap();
            std::fs::write(dir.path().join("cron/jobs.json"), text).unwrap();
        }
        let env = Environment::isolated::<&str, &str>([]);
        cron_check(&HermesHome::at(dir.path()), &Config::default(), &env)
    }

    #[test]
    fn a_missing_file_is_fine_and_a_corrupt_one_is_a_problem() {
        assert_eq!(check_with(None).mark, Mark::Ok);
        let bad = check_with(Some("{\"jobs\": [1"));
        assert_eq!(bad.mark, Mark::Fail);
        assert!(bad.text.contains("not valid JSON"), "{}", bad.text);
        assert!(bad.fix.unwrap().contains(".bad"));
    }

    #[test]
    fn jobs_are_counted_and_an_unreadable_schedule_is_named() {
        let good = r#"{"jobs": [
            {"id": "a1", "name": "build", "prompt": "p", "enabled": true, "state": "scheduled",
             "schedule": {"kind": "interval", "minutes": 120, "display": "every 120m"}},
            {"id": "b2", "name": "news", "prompt": "p", "enabled": false, "state": "paused",
             "schedule": {"kind": "interval", "minutes": 60, "display": "every 60m"}}
        ]}"#;
        let ok = check_with(Some(good));
        assert_eq!(ok.mark, Mark::Ok, "{}", ok.text);
        assert_eq!(ok.text, "cron/jobs.json: 2 jobs (1 active, 1 paused)");
        let odd = r#"{"jobs": [{"id": "c3", "name": "odd", "prompt": "p", "schedule": 42}]}"#;
        let warned = check_with(Some(odd));
        assert_eq!(warned.mark, Mark::Warn);
        assert!(warned.text.contains("odd (c3)"), "{}", warned.text);
    }
}
