//! `harness run` as a typed value: the one place that knows the subcommand's
//! flags, so the bench and the chaos driver cannot drift from `main.rs` (or
//! from each other) when a flag is renamed or added.
//!
//! The invocation yields an argv and an environment; the caller owns the
//! process (tokio or std, pipes, process group, timeouts). Every invocation
//! removes `redact::PROVIDER_KEY_VARS` from the inherited environment before
//! setting anything: the harness under test never gets a real key from the
//! caller's shell (replay needs none; a live proxy adds it on the wire).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where `harness run` gets its model traffic.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSource {
    /// `--base-url`: an endpoint the caller runs (a replay server, a live proxy).
    BaseUrl(String),
    /// `--replay DIR --latency-scale S`: the harness's own embedded replay server.
    Replay { dir: PathBuf, latency_scale: f64 },
}

/// One `harness run` command line and the environment it runs with.
#[derive(Debug, Clone)]
pub struct HarnessInvocation {
    spec: PathBuf,
    state_dir: PathBuf,
    model: ModelSource,
    run_index: Option<u32>,
    raise_cap_usd: Option<f64>,
    raise_wall_clock_s: Option<f64>,
    env_remove: Vec<String>,
    env_set: Vec<(String, String)>,
}

impl HarnessInvocation {
    pub fn run(
        spec: impl Into<PathBuf>,
        state_dir: impl Into<PathBuf>,
        model: ModelSource,
    ) -> Self {
        HarnessInvocation {
            spec: spec.into(),
            state_dir: state_dir.into(),
            model,
            run_index: None,
            raise_cap_usd: None,
            raise_wall_clock_s: None,
            env_remove: vec![],
            env_set: vec![],
        }
    }

    /// `--run-index N` (picks the cassette variant run % variants).
    pub fn run_index(mut self, n: u32) -> Self {
        self.run_index = Some(n);
        self
    }

    /// `--raise-cap-usd USD` (after BUDGET_EXHAUSTED: raise the cap and go on).
    pub fn raise_cap_usd(mut self, usd: f64) -> Self {
        self.raise_cap_usd = Some(usd);
        self
    }

    /// `--raise-wall-clock-s S` (after TIME_LIMIT: raise the clock and go on).
    pub fn raise_wall_clock_s(mut self, s: f64) -> Self {
        self.raise_wall_clock_s = Some(s);
        self
    }

    /// Remove `name` from the inherited environment (besides the provider keys).
    pub fn env_remove(mut self, name: impl Into<String>) -> Self {
        self.env_remove.push(name.into());
        self
    }

    /// Set `key=value`; applied after every removal and in call order, so a
    /// later set of the same key wins and a removed name can be set again
    /// (the audit's canaries set fake keys in the removed variables).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env_set.push((key.into(), value.into()));
        self
    }

    /// The same command on another spec file (`bench run`'s `[[step]]`).
    pub fn with_spec(mut self, spec: impl Into<PathBuf>) -> Self {
        self.spec = spec.into();
        self
    }

    /// The same command on another state dir (`bench run`'s `[[step]]`).
    pub fn with_state_dir(mut self, state_dir: impl Into<PathBuf>) -> Self {
        self.state_dir = state_dir.into();
        self
    }

    pub fn spec(&self) -> &Path {
        &self.spec
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// The argv after the program name.
    pub fn args(&self) -> Vec<OsString> {
        let mut a: Vec<OsString> = vec![
            "run".into(),
            "--spec".into(),
            self.spec.clone().into(),
            "--state-dir".into(),
            self.state_dir.clone().into(),
        ];
        match &self.model {
            ModelSource::BaseUrl(u) => {
                a.push("--base-url".into());
                a.push(u.into());
            }
            ModelSource::Replay { dir, latency_scale } => {
                a.push("--replay".into());
                a.push(dir.clone().into());
                a.push("--latency-scale".into());
                a.push(latency_scale.to_string().into());
            }
        }
        if let Some(n) = self.run_index {
            a.push("--run-index".into());
            a.push(n.to_string().into());
        }
        if let Some(usd) = self.raise_cap_usd {
            a.push("--raise-cap-usd".into());
            a.push(usd.to_string().into());
        }
        if let Some(s) = self.raise_wall_clock_s {
            a.push("--raise-wall-clock-s".into());
            a.push(s.to_string().into());
        }
        a
    }

    /// Every name removed from the inherited environment: the provider keys
    /// first, then the caller's.
    pub fn env_removed(&self) -> impl Iterator<Item = &str> {
        crate::redact::PROVIDER_KEY_VARS
            .iter()
            .copied()
            .chain(self.env_remove.iter().map(String::as_str))
    }

    /// Every variable set, in the order it is applied.
    pub fn env_set(&self) -> &[(String, String)] {
        &self.env_set
    }

    /// A `std::process::Command` for `harness_bin` with the argv and the
    /// environment applied; stdio and the rest are the caller's. (A tokio
    /// caller converts it with `tokio::process::Command::from`.)
    pub fn command(&self, harness_bin: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new(harness_bin);
        for name in self.env_removed() {
            cmd.env_remove(name);
        }
        for (k, v) in &self.env_set {
            cmd.env(k, v);
        }
        cmd.args(self.args());
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(cmd: &std::process::Command) -> Vec<(String, Option<String>)> {
        cmd.get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect()
    }

    #[test]
    fn base_url_argv_matches_the_run_subcommand() {
        let inv = HarnessInvocation::run(
            "/c/run.toml",
            "/c/state",
            ModelSource::BaseUrl("http://127.0.0.1:9/replay/x/0".into()),
        )
        .run_index(3);
        let args: Vec<String> = inv
            .args()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "run",
                "--spec",
                "/c/run.toml",
                "--state-dir",
                "/c/state",
                "--base-url",
                "http://127.0.0.1:9/replay/x/0",
                "--run-index",
                "3"
            ]
        );
    }

    #[test]
    fn replay_argv_carries_the_latency_scale() {
        let inv = HarnessInvocation::run(
            "s.toml",
            "st",
            ModelSource::Replay {
                dir: "cas".into(),
                latency_scale: 0.0,
            },
        );
        let args: Vec<String> = inv
            .args()
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "run",
                "--spec",
                "s.toml",
                "--state-dir",
                "st",
                "--replay",
                "cas",
                "--latency-scale",
                "0"
            ]
        );
    }

    #[test]
    fn provider_keys_are_removed_and_a_later_set_wins() {
        let key = crate::redact::PROVIDER_KEY_VARS[0];
        let inv = HarnessInvocation::run("s", "t", ModelSource::BaseUrl("u".into()))
            .env_remove("MY_KEY")
            .env(key, "canary")
            .env("A", "1")
            .env("A", "2");
        let env = env_of(&inv.command(Path::new("/bin/true")));
        assert!(env.contains(&("MY_KEY".into(), None)));
        assert!(env.contains(&(key.into(), Some("canary".into()))));
        assert!(env.contains(&("A".into(), Some("2".into()))));
        for k in crate::redact::PROVIDER_KEY_VARS.iter().skip(1) {
            assert!(env.contains(&((*k).into(), None)), "{k} not removed");
        }
    }
}
