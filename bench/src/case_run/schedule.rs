//! Every harness process of a case-run, as its `Schedule` names them: an
//! `[interrupt]` case's interrupted first process or a `[raise]` case's
//! first run, then the scored process; and the case's `[[step]]`s, the
//! further harness commands that run beside a paused harness or after the
//! scored one (crate::steps).

use super::process::{self, Beside, SpawnError, Spawned};
use super::{CaseRun, FirstEnding, Interrupted, Prepared, Raised, Ran, Schedule, Took};
use crate::record::RunRecord;
use crate::suite::StepWhen;

impl CaseRun<'_> {
    /// The schedule's first process, if it has one, then the scored one.
    pub(super) async fn processes(
        &self,
        p: &mut Prepared,
        schedule: Schedule<'_>,
    ) -> Result<Ran, Box<RunRecord>> {
        let (before, raised) = match schedule {
            Schedule::Plain => (None, None),
            Schedule::Interrupted(i) => (Some(self.interrupted_run(i, p).await?), None),
            Schedule::Raised(r) => {
                let (took, ended) = self.raise_first_run(&r, p).await?;
                (Some(took), Some((r.raise, ended)))
            }
        };
        let spawned = process::run(self.harness_bin, &p.inv, &p.watched, p.limit)
            .await
            .map_err(|e| self.spawn_failed(e, ""))?;
        p.gathered.canary_hits.extend(spawned.canary_hits.clone());
        let took = before.map_or(Took::of(&spawned), |b| b.then(Took::of(&spawned)));
        Ok(Ran {
            spawned,
            took,
            raised,
        })
    }

    /// A process that gave no exit status: a bench fault when it never
    /// started, else the harness's failure.
    fn spawn_failed(&self, e: SpawnError, context: &str) -> Box<RunRecord> {
        match e {
            SpawnError::NotStarted(m) => self.setup_fault(format!("{context}{m}")),
            SpawnError::Harness(m) => self.fail(format!("{context}{m}")),
        }
    }

    /// An `[interrupt]` case's first process, killed (or asked to stop) at
    /// its pause point by the test-hooked harness; the scored run resumes
    /// what it left. Returns the time it took.
    async fn interrupted_run(
        &self,
        i: Interrupted<'_>,
        p: &mut Prepared,
    ) -> Result<Took, Box<RunRecord>> {
        let Interrupted { interrupt, hooked } = i;
        let context = format!("interrupt at {}: ", interrupt.at);
        let armed = super::pause::arm(&p.inv, &interrupt.at);
        let started = process::start(&hooked, &armed, &p.watched)
            .map_err(|e| self.spawn_failed(e, &context))?;
        let ctx = self.step_ctx(p);
        let paused = self.steps_when(StepWhen::Paused);
        let beside: Option<Beside<'_>> = (!paused.is_empty())
            .then(|| Box::pin(async move { crate::steps::run(&ctx, &paused).await }) as Beside<'_>);
        let stop = interrupt.signal.stop_request();
        let is_paused = super::pause::is_paused_line;
        let (s, checks) = process::until_paused(started, is_paused, stop, &p.watched, beside)
            .await
            .map_err(|e| self.spawn_failed(e, &context))?;
        p.gathered.canary_hits.extend(s.canary_hits.clone());
        p.step_checks.extend(checks);
        // A stop request leaves a stop report (never an ending) for the
        // resume to move aside: read it before the resume runs.
        if let Some(sig) = stop {
            let r = harness::report::StoppedReport::load(&p.state).map_err(|e| {
                self.fail(format!(
                    "{context}asked to stop, the harness left no stop report: {e}"
                ))
            })?;
            if let Some(wrong) = stop_report_wrong(&r, sig, interrupt.stop_report.as_ref()) {
                return Err(self.fail(format!("{context}the stop report {wrong}")));
            }
        }
        Ok(Took::of(&s))
    }

    /// `[raise]`: the first run must end on the limit; the scored run is the
    /// same command raising it, on the same state dir (`p.inv` and `p.limit`
    /// become the raised ones). Returns the time it took and its ending.
    async fn raise_first_run(
        &self,
        r: &Raised,
        p: &mut Prepared,
    ) -> Result<(Took, FirstEnding), Box<RunRecord>> {
        let (s, ended) = self
            .run_to_first_ending(p)
            .await
            .map_err(|e| self.spawn_failed(e, "[raise] first run: "))?;
        p.gathered.canary_hits.extend(s.canary_hits.clone());
        if ended.ending != r.want {
            return Err(self.fail(format!(
                "[raise]: the first run ended {} (exit {}, ${:.6} spent), not {}: nothing to raise",
                ended.ending.as_str(),
                s.code,
                ended.spend_usd,
                r.want.as_str()
            )));
        }
        (p.inv, p.limit) = (r.inv.clone(), r.limit);
        p.gathered.raise_asked_usd = r.raise.cap_usd;
        Ok((Took::of(&s), ended))
    }

    /// A `[raise]` case's first run: the plain command, to its first ending.
    async fn run_to_first_ending(
        &self,
        p: &Prepared,
    ) -> Result<(Spawned, FirstEnding), SpawnError> {
        let s = process::run(self.harness_bin, &p.inv, &p.watched, p.limit).await?;
        match harness::report::Report::load(&p.state) {
            Ok(r) => Ok((
                s,
                FirstEnding {
                    ending: r.ending,
                    spend_usd: r.spend_usd,
                },
            )),
            Err(e) => Err(SpawnError::Harness(format!(
                "no report.json after it (exit {}): {e}; stderr: {}",
                s.code,
                s.stderr_tail.trim()
            ))),
        }
    }

    /// `[[step]] when = "after"`: run once the scored run has been read.
    pub(super) async fn after_steps(&self, p: &mut Prepared) {
        let after = self.steps_when(StepWhen::After);
        if after.is_empty() {
            return;
        }
        let ctx = self.step_ctx(p);
        let checks = crate::steps::run(&ctx, &after).await;
        p.step_checks.extend(checks);
    }

    /// The case's steps that run at `when`, numbered as in case.toml.
    fn steps_when(&self, when: StepWhen) -> Vec<(usize, &crate::suite::Step)> {
        (self.case.file.steps.iter().enumerate())
            .filter(|(_, s)| s.when == when)
            .collect()
    }

    /// Where the case-run's steps run: its command as it stands (a raised
    /// one once a `[raise]` first run has passed).
    fn step_ctx(&self, p: &Prepared) -> crate::steps::StepCtx {
        crate::steps::StepCtx {
            harness_bin: self.harness_bin.to_path_buf(),
            inv: p.inv.clone(),
            run_dir: self.dir.clone(),
            case_copy: p.case_copy.clone(),
            state: p.state.clone(),
            limit: p.limit,
        }
    }
}

/// What is wrong with a stop report the interrupted run left: not the
/// signal it was sent, not resumable, or not what the case expects of it.
fn stop_report_wrong(
    r: &harness::report::StoppedReport,
    sig: nix::sys::signal::Signal,
    want: Option<&crate::suite::StopReportExpect>,
) -> Option<String> {
    if r.stopped.signal != sig.as_str() || !r.stopped.resumable {
        return Some(format!(
            "says {} (resumable: {}), sent {sig}",
            r.stopped.signal, r.stopped.resumable
        ));
    }
    let want = want?;
    if let Some(t) = &want.in_flight_task {
        if r.in_flight_task.as_deref() != Some(t.as_str()) {
            return Some(format!("names {:?} in flight, not {t:?}", r.in_flight_task));
        }
    }
    if let Some(c) = &want.cut_contains {
        if !r
            .stopped
            .cut
            .as_deref()
            .is_some_and(|x| x.contains(c.as_str()))
        {
            return Some(format!(
                "says it cut {:?}, expected {c:?} in it",
                r.stopped.cut
            ));
        }
    }
    None
}
