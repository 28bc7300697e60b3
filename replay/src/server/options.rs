//! What a replay server is started with, and why it refuses to start.
//! Options are plain data the bench and `harness run --replay` build; the
//! checks live beside them so every way of starting a server refuses the
//! same things with the same words.

use std::fmt;

use crate::faults::FaultPlan;

/// How the server replays.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// Also require the canonical SHA-256 of the request body to equal the
    /// recorded `body_sha256`.
    pub strict: bool,
    /// Recorded latency is multiplied by this; 0 = as fast as possible.
    pub latency_scale: f64,
    pub faults: FaultPlan,
    /// Keep request bodies per (case, run) for `take_captured`.
    pub capture: bool,
    /// Answer every request as if its URL named this run: the cassette
    /// variant and the fault decisions are run `n`'s, while captures and
    /// counters stay under the URL's run. `bench flaky` reruns one run
    /// variant many times at once this way (identical reruns, each with its
    /// own capture); `None`: the URL's run.
    pub serve_as_run: Option<u32>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            strict: false,
            latency_scale: 1.0,
            faults: FaultPlan::none(),
            capture: false,
            serve_as_run: None,
        }
    }
}

impl ReplayOptions {
    /// Refuse what would otherwise fail or misbehave mid-run: checked before
    /// the server listens, so a typo in a suite's options stops it at start.
    pub(super) fn validate(&self) -> Result<(), ReplayError> {
        if !self.latency_scale.is_finite() || self.latency_scale < 0.0 {
            return Err(ReplayError::BadOptions(format!(
                "latency_scale is {}; expected a finite number >= 0",
                self.latency_scale
            )));
        }
        self.faults
            .validate()
            .map_err(|e| ReplayError::BadOptions(e.to_string()))?;
        Ok(())
    }
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ReplayError {
    Bind(std::io::Error),
    BadOptions(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::Bind(e) => write!(f, "replay server cannot bind: {e}"),
            ReplayError::BadOptions(m) => write!(f, "bad replay options: {m}"),
        }
    }
}

impl std::error::Error for ReplayError {}
#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::cassette::Recordings;
    use crate::server::ReplayServer;

    #[tokio::test]
    async fn bad_options_are_refused() {
        let bad = ReplayOptions {
            latency_scale: f64::NAN,
            ..fast()
        };
        assert!(matches!(
            ReplayServer::start(Recordings::new(), bad).await,
            Err(ReplayError::BadOptions(_))
        ));
        let mut faults = FaultPlan::none();
        faults.rate_429 = 3.0;
        let bad = ReplayOptions { faults, ..fast() };
        assert!(matches!(
            ReplayServer::start(Recordings::new(), bad).await,
            Err(ReplayError::BadOptions(_))
        ));
    }
}
