//! `bench price`'s model: a night's cost derived from first principles, as the seed
//! does it. Input per call grows linearly (the whole conversation is re-sent),
//! so input per task is a triangle sum and cost grows with the square of the
//! loop length. Every kind of call is priced on a price table, with headroom
//! to the cap and cost per verified task at the pass rate.
//!
//! The seed gives the execution-call sizes and the drift-check total ($0.35
//! for 8 Opus calls); it leaves the sizes of the verification, replan and
//! compaction calls open. The defaults chosen here (documented on each flag)
//! reproduce its $22.01 night: verification 2,500 in / 300 out; drift 4,000 in
//! / 950 out; replan 8,000 in / 1,000 out; compaction 45,000 in / 2,860 out.
//!
//! That compaction size is the seed's, not the harness's. The row "compaction
//! at the harness's [memory] settings" prices it from what the harness does:
//! one request is `agent::compact_request` (COMPACT_SYSTEM, the goal, the
//! history) with the history just over `compact_above_tokens` (the harness's
//! bytes / 4 estimate), at most `compact_max_tokens` out; how many a night
//! makes follows from how big a history line really is, `RunState`'s own
//! `push_history` (which keeps `HISTORY_SUMMARY_MAX_LINES`) and
//! `compact_every_tasks_min`.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::prices::P;

/// What a night is priced from: the sizes, rates and settings of `bench
/// price`'s command line.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub tasks: u64,
    pub calls_per_task: u64,
    pub first_call_tokens: u64,
    pub growth_tokens: u64,
    pub output_tokens_per_task: u64,
    pub pass_rate: f64,
    pub cap: f64,
    pub model: String,
    /// The cheaper model of the "verification on a cheaper model" row.
    pub cheap_model: String,
    pub drift_every: u64,
    pub replans: u64,
    pub compactions: u64,
    pub verify_call: String,
    pub drift_call: String,
    pub replan_call: String,
    pub compaction_call: String,
    /// The harness's `[memory]` settings the compaction row is priced at
    /// (default: the harness's own defaults).
    pub compact_above_tokens: u64,
    pub compact_max_tokens: u32,
    pub compact_every_tasks_min: u64,
    /// Bytes of one history line as `RunState::history_bytes` counts it (the
    /// line, its `- ` and newline). Default: the longest in real runs
    /// (`HISTORY_LINE_BYTES_MEASURED`).
    pub history_line_bytes: u64,
    /// The goal the compaction request carries (default: the demo's).
    pub goal: String,
    /// The loop cap of the "cap the loop" row.
    pub capped_calls: u64,
    /// Prompt caching: the model's minimum cacheable prefix (opus: 512; haiku 4.5: 4,096).
    pub cache_min_prefix: u64,
    /// Prompt caching: seconds between calls within a task, and the cache TTL.
    pub inter_call_gap_s: u64,
    pub cache_ttl_s: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub kind: String,
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub usd: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Night {
    pub input_per_task: u64,
    pub lines: Vec<Line>,
    pub total_usd: f64,
    pub headroom_usd: f64,
    pub verified_tasks: f64,
    pub cost_per_verified_usd: f64,
}

/// The longest history line (bytes as `RunState::history_bytes` counts them)
/// in the checkpoints of real runs, measured 2026-12-02: `bench run --suite
/// suites/live --runs-per-case 3` (SmolLM2-135M's recorded traffic: 74 lines,
/// median 128, longest 198, a parked task with a long id and reason) and the
/// four scripted categories, one run each (176 lines, median 76, longest
/// 178). The longest, so the row errs toward more compactions.
pub const HISTORY_LINE_BYTES_MEASURED: u64 = 198;

/// `suites/demo/p95-index`'s goal: what the compaction request carries
/// besides the system text and the history (a few dozen bytes of ~32 KB).
pub const DEMO_GOAL: &str = "Reduce p95 latency on /api/search to under 200ms.";

/// Compaction priced at the harness's real `[memory]` settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionAtSettings {
    pub tasks: u64,
    pub compact_above_tokens: u64,
    pub compact_max_tokens: u32,
    pub compact_every_tasks_min: u64,
    pub history_line_bytes: u64,
    /// The history after the night's last task with no compaction (bytes,
    /// and tokens by the harness's bytes / 4), `HISTORY_SUMMARY_MAX_LINES`
    /// lines at most.
    pub history_bytes_at_end: u64,
    pub history_tokens_at_end: u64,
    /// How many tasks until the history first passes the bound; None when
    /// `HISTORY_SUMMARY_MAX_LINES` lines of this size never do.
    pub tasks_to_first_compaction: Option<u64>,
    /// One compaction request with the history just over the bound: its
    /// prompt's bytes / 4, and its output bound.
    pub input_tokens_per_call: u64,
    pub output_tokens_per_call: u64,
    pub usd_per_call: f64,
    /// The night's compactions: at most this many (each summary taken as
    /// large as the harness accepts, so the next comes as soon as it can).
    pub line: Line,
    pub note: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    pub row: String,
    pub total_usd: f64,
    pub saves_usd: f64,
    pub note: String,
}

/// Input tokens of one task: sum over calls t = 1..n of first + (t-1) growth.
pub fn input_per_task(first: u64, growth: u64, n: u64) -> u64 {
    n * first + growth * n * n.saturating_sub(1) / 2
}

pub fn usd(p: P, input: u64, output: u64) -> f64 {
    (input as f64 * p.input + output as f64 * p.output) / 1e6
}

/// Why `bench price` cannot price the night (exit 2); the text is what it
/// prints.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    #[error("--{flag}: expected <input>,<output> tokens, found {found:?}")]
    NotAPair { flag: String, found: String },
    #[error("--{flag}: {found:?} is not a token count")]
    NotACount { flag: String, found: String },
    #[error("--model {0:?}: no price in the table")]
    NoModelPrice(String),
    #[error("--cheap-model {0:?}: no price in the table")]
    NoCheapPrice(String),
    #[error("--tasks and --calls-per-task must be > 0 and --pass-rate in (0, 1]")]
    OutOfRange,
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {message}", .path.display())]
    Toml { path: PathBuf, message: String },
    #[error("{}: field `prices`: expected a [prices.\"<model>\"] table", .0.display())]
    NoPrices(PathBuf),
    #[error("{}: field `prices.{model}.{key}`: expected a non-negative $/MTok", .path.display())]
    BadPrice {
        path: PathBuf,
        model: String,
        key: String,
    },
}

fn pair(s: &str, flag: &str) -> Result<(u64, u64), PriceError> {
    let (a, b) = s.split_once(',').ok_or_else(|| PriceError::NotAPair {
        flag: flag.into(),
        found: s.into(),
    })?;
    let count = |x: &str| {
        x.trim().parse().map_err(|_| PriceError::NotACount {
            flag: flag.into(),
            found: x.into(),
        })
    };
    Ok((count(a)?, count(b)?))
}

pub struct Priced {
    pub night: Night,
    pub what_ifs: Vec<WhatIf>,
    pub compaction_at_settings: CompactionAtSettings,
}

/// Lines of `line_bytes` each (as `RunState::history_bytes` counts a line:
/// its text + 3) that add up to exactly `total` bytes (`total` >= 4): the
/// last one shorter, or up to 3 bytes longer when what is left could not be
/// a line of its own.
fn history_of(total: u64, line_bytes: u64) -> Vec<String> {
    let per = line_bytes.max(4);
    let (n, rest) = (total / per, total % per);
    let mut lines: Vec<u64> = vec![per; n as usize];
    match (rest, lines.last_mut()) {
        (0, _) => {}
        (4.., _) => lines.push(rest),
        (_, Some(last)) => *last += rest,
        (_, None) => {}
    }
    lines.iter().map(|b| "x".repeat((b - 3) as usize)).collect()
}

/// The largest summary the harness keeps in place of a history of
/// `bytes_before` bytes: smaller than it (the loop's "not smaller" rule),
/// lines of at most `COMPACT_LINE_MAX_CHARS`, the text at most
/// `COMPACT_SUMMARY_MAX_BYTES` and `HISTORY_SUMMARY_MAX_LINES` lines
/// (`agent::parse_compaction`).
fn largest_summary(bytes_before: u64) -> Vec<String> {
    use harness::agent::{COMPACT_LINE_MAX_CHARS, COMPACT_SUMMARY_MAX_BYTES};
    let target = bytes_before.saturating_sub(1);
    let per = COMPACT_LINE_MAX_CHARS as u64 + 3;
    let mut lines: Vec<String> = vec!["x".repeat(COMPACT_LINE_MAX_CHARS); (target / per) as usize];
    if target % per >= 4 {
        lines.push("x".repeat((target % per - 3) as usize));
    }
    lines.truncate(harness::state::HISTORY_SUMMARY_MAX_LINES);
    // The summary text is the lines joined by newlines.
    while lines
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>()
        .saturating_sub(1)
        > COMPACT_SUMMARY_MAX_BYTES
    {
        lines.pop();
    }
    lines
}

/// The compaction request's input tokens for `history`: the prompt
/// `agent::compact_request` builds (system text and user turn), by the
/// harness's bytes / 4 estimate.
fn compact_input_tokens(goal: &harness::goal::Goal, history: &[String], max_tokens: u32) -> u64 {
    let req = harness::agent::compact_request(goal, "m", history, max_tokens, "compact/0".into());
    let user: usize = req
        .turns
        .iter()
        .map(|t| match t {
            harness::model::types::Turn::User { text } => text.len(),
            _ => 0,
        })
        .sum();
    (req.system.len() + user) as u64 / 4
}

/// Compaction in a night of `a.tasks` tasks at the harness's `[memory]`
/// settings: the history grows by one line a task (`RunState::push_history`,
/// which keeps the last `HISTORY_SUMMARY_MAX_LINES`), and a compaction comes
/// when its bytes / 4 pass `compact_above_tokens` and the last one was at
/// least `compact_every_tasks_min` tasks ago (`Runner::compaction_due`).
fn compaction_at_settings(a: &Inputs, p: P) -> CompactionAtSettings {
    let goal = harness::goal::Goal::new(a.goal.clone());
    let (calls, input) = compactions(a, &goal);
    let (at_end, tasks_to_first) = uncompacted(a);
    let bound_bytes = 4 * (a.compact_above_tokens + 1);
    let input_per_call = compact_input_tokens(
        &goal,
        &history_of(bound_bytes, a.history_line_bytes),
        a.compact_max_tokens,
    );
    let out_per_call = a.compact_max_tokens as u64;
    let output = out_per_call * calls;
    let night_usd = usd(p, input, output);
    let per_call_usd = usd(p, input_per_call, out_per_call);
    let when = match tasks_to_first {
        Some(t) => format!("the first after {t} tasks"),
        None => format!(
            "never: the {} lines the history keeps stay under the bound",
            harness::state::HISTORY_SUMMARY_MAX_LINES
        ),
    };
    let note = format!(
        "{calls} in {} tasks ({} of {} tokens{}); one at the bound {input_per_call} in / {out_per_call} out = ${per_call_usd:.4}",
        a.tasks,
        at_end / 4,
        a.compact_above_tokens,
        if calls == 0 { format!("; {when}") } else { String::new() },
    );
    CompactionAtSettings {
        tasks: a.tasks,
        compact_above_tokens: a.compact_above_tokens,
        compact_max_tokens: a.compact_max_tokens,
        compact_every_tasks_min: a.compact_every_tasks_min,
        history_line_bytes: a.history_line_bytes,
        history_bytes_at_end: at_end,
        history_tokens_at_end: at_end / 4,
        tasks_to_first_compaction: tasks_to_first,
        input_tokens_per_call: input_per_call,
        output_tokens_per_call: out_per_call,
        usd_per_call: per_call_usd,
        line: Line {
            kind: "compaction (harness settings)".into(),
            calls,
            input_tokens: input,
            output_tokens: output,
            usd: night_usd,
        },
        note,
    }
}

/// The night's compactions as the harness makes them: (calls, input tokens),
/// each summary the largest the harness accepts so the next comes as soon
/// as it can.
fn compactions(a: &Inputs, goal: &harness::goal::Goal) -> (u64, u64) {
    let line = "x".repeat(a.history_line_bytes.saturating_sub(3) as usize);
    let mut s = harness::state::RunState::new(String::new(), String::new(), 0);
    let (mut calls, mut input, mut last) = (0u64, 0u64, None::<u64>);
    for step in 1..=a.tasks {
        s.push_history(line.clone());
        let bytes = s.history_bytes();
        let spaced = last.is_none_or(|l| step - l >= a.compact_every_tasks_min);
        if bytes / 4 > a.compact_above_tokens && spaced {
            calls += 1;
            input += compact_input_tokens(goal, &s.history_summary, a.compact_max_tokens);
            s.history_summary = largest_summary(bytes);
            last = Some(step);
        }
    }
    (calls, input)
}

/// With no compaction: the history's bytes at the night's end, and after how
/// many tasks it would first pass the bound (never, when the kept lines
/// cannot hold that much).
fn uncompacted(a: &Inputs) -> (u64, Option<u64>) {
    let line = "x".repeat(a.history_line_bytes.saturating_sub(3) as usize);
    let mut plain = harness::state::RunState::new(String::new(), String::new(), 0);
    let mut tasks_to_first = None;
    let mut at_end = 0;
    for step in 1..=a
        .tasks
        .max(harness::state::HISTORY_SUMMARY_MAX_LINES as u64)
    {
        plain.push_history(line.clone());
        if step == a.tasks {
            at_end = plain.history_bytes();
        }
        if tasks_to_first.is_none() && plain.history_bytes() / 4 > a.compact_above_tokens {
            tasks_to_first = Some(step);
        }
    }
    (at_end, tasks_to_first)
}

/// The night's call kinds at fixed sizes: what every row shares, so a
/// what-if changes only the execution line or the verification price.
struct NightModel<'a> {
    a: &'a Inputs,
    p: P,
    verify: (u64, u64),
    drift: (u64, u64),
    replan: (u64, u64),
    compaction: (u64, u64),
    per_task_in: u64,
}

impl NightModel<'_> {
    fn night(&self, exec_usd: f64, exec_in: u64, exec_out: u64, verify_p: P) -> Night {
        let (a, p) = (self.a, self.p);
        let (v, d, r, c) = (self.verify, self.drift, self.replan, self.compaction);
        let drift_calls = a.tasks / a.drift_every.max(1);
        let lines = vec![
            Line {
                kind: "execution".into(),
                calls: a.tasks * a.calls_per_task,
                input_tokens: exec_in,
                output_tokens: exec_out,
                usd: exec_usd,
            },
            Line {
                kind: "verification".into(),
                calls: a.tasks,
                input_tokens: v.0 * a.tasks,
                output_tokens: v.1 * a.tasks,
                usd: usd(verify_p, v.0 * a.tasks, v.1 * a.tasks),
            },
            Line {
                kind: "drift check".into(),
                calls: drift_calls,
                input_tokens: d.0 * drift_calls,
                output_tokens: d.1 * drift_calls,
                usd: usd(p, d.0 * drift_calls, d.1 * drift_calls),
            },
            Line {
                kind: "replan".into(),
                calls: a.replans,
                input_tokens: r.0 * a.replans,
                output_tokens: r.1 * a.replans,
                usd: usd(p, r.0 * a.replans, r.1 * a.replans),
            },
            Line {
                kind: "compaction".into(),
                calls: a.compactions,
                input_tokens: c.0 * a.compactions,
                output_tokens: c.1 * a.compactions,
                usd: usd(p, c.0 * a.compactions, c.1 * a.compactions),
            },
        ];
        let total: f64 = lines.iter().map(|l| l.usd).sum();
        let verified = a.tasks as f64 * a.pass_rate;
        Night {
            input_per_task: self.per_task_in,
            lines,
            total_usd: total,
            headroom_usd: a.cap - total,
            verified_tasks: verified,
            cost_per_verified_usd: total / verified,
        }
    }
}

pub fn price(a: &Inputs, prices: &BTreeMap<String, P>) -> Result<Priced, PriceError> {
    let p = *prices
        .get(&a.model)
        .ok_or_else(|| PriceError::NoModelPrice(a.model.clone()))?;
    let cheap = *prices
        .get(&a.cheap_model)
        .ok_or_else(|| PriceError::NoCheapPrice(a.cheap_model.clone()))?;
    if a.calls_per_task == 0
        || a.tasks == 0
        || !(0.0..=1.0).contains(&a.pass_rate)
        || a.pass_rate == 0.0
    {
        return Err(PriceError::OutOfRange);
    }
    let m = NightModel {
        a,
        p,
        verify: pair(&a.verify_call, "verify-call")?,
        drift: pair(&a.drift_call, "drift-call")?,
        replan: pair(&a.replan_call, "replan-call")?,
        compaction: pair(&a.compaction_call, "compaction-call")?,
        per_task_in: input_per_task(a.first_call_tokens, a.growth_tokens, a.calls_per_task),
    };
    let exec_in = m.per_task_in * a.tasks;
    let exec_out = a.output_tokens_per_task * a.tasks;
    let night = m.night(usd(p, exec_in, exec_out), exec_in, exec_out, p);
    let what_if = |row: String, other: &Night, note: String| WhatIf {
        row,
        total_usd: other.total_usd,
        saves_usd: night.total_usd - other.total_usd,
        note,
    };
    let mut what_ifs = vec![];

    // Cap the loop: fewer calls per task, and each dropped call also drops
    // every re-send it would have carried.
    let k = a.capped_calls.min(a.calls_per_task).max(1);
    let cap_in = input_per_task(a.first_call_tokens, a.growth_tokens, k) * a.tasks;
    let cap_out = a.output_tokens_per_task * k / a.calls_per_task * a.tasks;
    let capped = m.night(usd(p, cap_in, cap_out), cap_in, cap_out, p);
    what_ifs.push(what_if(
        format!("cap the loop at {k} calls"),
        &capped,
        format!(
            "input per task {} -> {}",
            m.per_task_in,
            input_per_task(a.first_call_tokens, a.growth_tokens, k)
        ),
    ));

    let (cache_usd, note) = prompt_caching(a, p, m.per_task_in, exec_in, exec_out);
    let cached = m.night(cache_usd, exec_in, exec_out, p);
    what_ifs.push(what_if("prompt caching".into(), &cached, note));

    let cheaper = m.night(usd(p, exec_in, exec_out), exec_in, exec_out, cheap);
    what_ifs.push(what_if(
        format!("verification on {}", a.cheap_model),
        &cheaper,
        format!("${}/${} per MTok", cheap.input, cheap.output),
    ));

    let comp = compaction_at_settings(a, p);
    what_ifs.push(real_compaction(&night, &comp));
    Ok(Priced {
        night,
        what_ifs,
        compaction_at_settings: comp,
    })
}

/// The seed's compaction line replaced by the harness's own figure.
fn real_compaction(night: &Night, comp: &CompactionAtSettings) -> WhatIf {
    let seed_comp: f64 = night
        .lines
        .iter()
        .filter(|l| l.kind == "compaction")
        .map(|l| l.usd)
        .sum();
    let with_real = night.total_usd - seed_comp + comp.line.usd;
    WhatIf {
        row: "compaction at the harness's [memory] settings".into(),
        total_usd: with_real,
        saves_usd: night.total_usd - with_real,
        note: comp.note.clone(),
    }
}

/// Prompt caching: call t reads the previous call's whole input from the
/// cache (0.1x) and writes its new part (1.25x). Below the minimum
/// cacheable prefix nothing caches; past the TTL every read misses and the
/// run pays the 1.25x write on everything. Returns the execution line's
/// USD and why.
fn prompt_caching(
    a: &Inputs,
    p: P,
    per_task_in: u64,
    exec_in: u64,
    exec_out: u64,
) -> (f64, String) {
    if a.first_call_tokens < a.cache_min_prefix {
        (
            usd(p, exec_in, exec_out),
            format!(
                "first prefix {} < minimum cacheable {}: nothing caches",
                a.first_call_tokens, a.cache_min_prefix
            ),
        )
    } else if a.inter_call_gap_s > a.cache_ttl_s {
        (
            usd(p, 0, exec_out) + exec_in as f64 * p.input * 1.25 / 1e6,
            format!(
                "calls {}s apart > {}s TTL: every turn pays 1.25x writes, no reads",
                a.inter_call_gap_s, a.cache_ttl_s
            ),
        )
    } else {
        let n = a.calls_per_task;
        let reads_per_task = per_task_in - (a.first_call_tokens + (n - 1) * a.growth_tokens);
        let writes_per_task = a.first_call_tokens + (n - 1) * a.growth_tokens;
        let input_usd = a.tasks as f64
            * (reads_per_task as f64 * 0.1 + writes_per_task as f64 * 1.25)
            * p.input
            / 1e6;
        (
            input_usd + usd(p, 0, exec_out),
            format!(
                "per task {reads_per_task} cached reads at 0.1x, {writes_per_task} writes at 1.25x"
            ),
        )
    }
}

/// A TOML price table: [prices."<model>"] input_usd_per_mtok,
/// output_usd_per_mtok.
pub fn load_prices(path: &std::path::Path) -> Result<BTreeMap<String, P>, PriceError> {
    let text = std::fs::read_to_string(path).map_err(|source| PriceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let t: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| PriceError::Toml {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })?;
    let prices = t
        .get("prices")
        .and_then(|p| p.as_table())
        .ok_or_else(|| PriceError::NoPrices(path.to_path_buf()))?;
    let mut out = BTreeMap::new();
    for (m, v) in prices {
        let num = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .filter(|x| *x >= 0.0)
                .ok_or_else(|| PriceError::BadPrice {
                    path: path.to_path_buf(),
                    model: m.clone(),
                    key: k.into(),
                })
        };
        out.insert(
            m.clone(),
            P {
                input: num("input_usd_per_mtok")?,
                output: num("output_usd_per_mtok")?,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modelled_histories_are_what_the_harness_measures_and_keeps() {
        for (total, per) in [(32_004, 198), (32_004, 76), (8, 4), (205, 198), (199, 198)] {
            let lines = history_of(total, per);
            let mut s = harness::state::RunState::new(String::new(), String::new(), 0);
            s.history_summary = lines;
            assert_eq!(s.history_bytes(), total, "{total} in lines of {per}");
        }
        // The largest summary parses as a compaction reply and is smaller
        // than the history it replaces.
        for before in [32_004, 40_000, 2_178, 500] {
            let lines = largest_summary(before);
            let text = serde_json::json!({"summary": lines.join("\n")}).to_string();
            let parsed = harness::agent::parse_compaction(&text).unwrap();
            let after: u64 = parsed.iter().map(|l| l.len() as u64 + 3).sum();
            assert!(after < before, "{after} >= {before}");
        }
    }
}
