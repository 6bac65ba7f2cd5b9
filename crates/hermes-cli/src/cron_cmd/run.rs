//! `hermes cron tick` (every due job, once, under the tick lock) and `hermes cron run ID` (one
//! job now), printed for the command line. Running a job is the runtime's
//! (`hermes_runtime::cron`): a fresh `cron` session per job, its answer saved under
//! `cron/output/<id>/`; without the gateway only `local` delivery happens.

use std::fmt::Write as _;
use std::process::ExitCode;

use hermes_cron::CronStore;
use hermes_runtime::cron::{self, LocalOnly};
use hermes_runtime::{Platform, Runtime};
use tokio_util::sync::CancellationToken;

use crate::args::CommonArgs;
use crate::error::CliError;

use super::cron_error;

/// `hermes cron tick`: the due jobs, one after the other; exit 1 when any failed.
pub async fn tick(
    common: &CommonArgs,
    runtime: &Runtime,
    store: &CronStore,
) -> Result<ExitCode, CliError> {
    let base = base_spec(common, runtime)?;
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let mut print = |r: &cron::Report| println!("{}", r.line());
    let tick = cron::tick(runtime, store, &base, &LocalOnly, &cancel, &mut print)
        .await
        .map_err(cron_error)?;
    let Some(tick) = tick else {
        println!("Another tick is running; nothing done.");
        return Ok(ExitCode::SUCCESS);
    };
    if tick.interrupted {
        return Err(CliError::interrupted());
    }
    if tick.ran == 0 {
        println!("No jobs due.");
    }
    if tick.failed > 0 {
        return Err(CliError::runtime(format!(
            "{} of {} job(s) failed (`hermes cron list` shows why)",
            tick.failed, tick.ran
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// `hermes cron run ID`: one job now.
pub async fn run_now(
    common: &CommonArgs,
    runtime: &Runtime,
    store: &CronStore,
    reference: &str,
) -> Result<ExitCode, CliError> {
    let base = base_spec(common, runtime)?;
    let job = store.claim(reference).map_err(cron_error)?;
    let cancel = CancellationToken::new();
    crate::oneshot::spawn_interrupt_handler(cancel.clone());
    let report = cron::run_job(runtime, store, job, &base, &LocalOnly, &cancel).await;
    if report.interrupted {
        return Err(CliError::interrupted());
    }
    if !report.outcome.success {
        let mut msg = format!(
            "job {} failed: {}",
            report.job.id(),
            report.outcome.error.as_deref().unwrap_or("unknown error")
        );
        if let Some(path) = &report.output {
            let _ = write!(msg, " (saved to {})", path.display());
        }
        return Err(CliError::runtime(msg));
    }
    println!("{}", report.line());
    Ok(ExitCode::SUCCESS)
}

/// What every job of this run starts from: the command line's flags (a job's own model,
/// toolsets and workdir win).
fn base_spec(
    common: &CommonArgs,
    runtime: &Runtime,
) -> Result<hermes_runtime::SessionSpec, CliError> {
    let args = CommonArgs {
        resume: None,
        continue_last: false,
        ..common.clone()
    };
    Ok(args.spec(
        Platform::Cron,
        crate::session::working_dir(runtime.config())?,
    ))
}
