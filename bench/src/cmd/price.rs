//! `bench price`: a night's cost derived from first principles, as the seed
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

use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::ExitStatus;
use crate::prices::{default_prices, P};

#[derive(Args, Debug, Clone)]
pub struct PriceArgs {
    #[arg(long, default_value_t = 40)]
    pub tasks: u64,
    #[arg(long, default_value_t = 6)]
    pub calls_per_task: u64,
    #[arg(long, default_value_t = 3500)]
    pub first_call_tokens: u64,
    #[arg(long, default_value_t = 3300)]
    pub growth_tokens: u64,
    #[arg(long, default_value_t = 4200)]
    pub output_tokens_per_task: u64,
    #[arg(long, default_value_t = 0.75)]
    pub pass_rate: f64,
    #[arg(long, default_value_t = 28.0)]
    pub cap: f64,
    /// TOML price table: [prices."<model>"] input_usd_per_mtok, output_usd_per_mtok.
    #[arg(long)]
    pub prices: Option<PathBuf>,
    #[arg(long, default_value = "claude-opus-5")]
    pub model: String,
    /// The cheaper model of the "verification on a cheaper model" row.
    #[arg(long, default_value = "claude-sonnet-5")]
    pub cheap_model: String,
    #[arg(long, default_value_t = 5)]
    pub drift_every: u64,
    #[arg(long, default_value_t = 12)]
    pub replans: u64,
    #[arg(long, default_value_t = 6)]
    pub compactions: u64,
    #[arg(long, default_value = "2500,300")]
    pub verify_call: String,
    #[arg(long, default_value = "4000,950")]
    pub drift_call: String,
    #[arg(long, default_value = "8000,1000")]
    pub replan_call: String,
    #[arg(long, default_value = "45000,2860")]
    pub compaction_call: String,
    /// The loop cap of the "cap the loop" row.
    #[arg(long, default_value_t = 4)]
    pub capped_calls: u64,
    /// Prompt caching: the model's minimum cacheable prefix (opus: 512; haiku 4.5: 4,096).
    #[arg(long, default_value_t = 512)]
    pub cache_min_prefix: u64,
    /// Prompt caching: seconds between calls within a task, and the cache TTL.
    #[arg(long, default_value_t = 30)]
    pub inter_call_gap_s: u64,
    #[arg(long, default_value_t = 300)]
    pub cache_ttl_s: u64,
    /// Also write price.json and price.md here.
    #[arg(long)]
    pub out: Option<PathBuf>,
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

fn usd(p: P, input: u64, output: u64) -> f64 {
    (input as f64 * p.input + output as f64 * p.output) / 1e6
}

fn pair(s: &str, flag: &str) -> Result<(u64, u64), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("--{flag}: expected <input>,<output> tokens, found {s:?}"))?;
    Ok((
        a.trim()
            .parse()
            .map_err(|_| format!("--{flag}: {a:?} is not a token count"))?,
        b.trim()
            .parse()
            .map_err(|_| format!("--{flag}: {b:?} is not a token count"))?,
    ))
}

pub struct Priced {
    pub night: Night,
    pub what_ifs: Vec<WhatIf>,
}

pub fn price(a: &PriceArgs, prices: &BTreeMap<String, P>) -> Result<Priced, String> {
    let p = *prices
        .get(&a.model)
        .ok_or_else(|| format!("--model {:?}: no price in the table", a.model))?;
    let cheap = *prices
        .get(&a.cheap_model)
        .ok_or_else(|| format!("--cheap-model {:?}: no price in the table", a.cheap_model))?;
    if a.calls_per_task == 0
        || a.tasks == 0
        || !(0.0..=1.0).contains(&a.pass_rate)
        || a.pass_rate == 0.0
    {
        return Err("--tasks and --calls-per-task must be > 0 and --pass-rate in (0, 1]".into());
    }
    let v = pair(&a.verify_call, "verify-call")?;
    let d = pair(&a.drift_call, "drift-call")?;
    let r = pair(&a.replan_call, "replan-call")?;
    let c = pair(&a.compaction_call, "compaction-call")?;
    let per_task_in = input_per_task(a.first_call_tokens, a.growth_tokens, a.calls_per_task);
    let exec_in = per_task_in * a.tasks;
    let exec_out = a.output_tokens_per_task * a.tasks;
    let drift_calls = a.tasks / a.drift_every.max(1);
    let night_with = |exec_usd: f64, exec_in: u64, exec_out: u64, verify_p: P| -> Night {
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
            input_per_task: per_task_in,
            lines,
            total_usd: total,
            headroom_usd: a.cap - total,
            verified_tasks: verified,
            cost_per_verified_usd: total / verified,
        }
    };
    let night = night_with(usd(p, exec_in, exec_out), exec_in, exec_out, p);
    let mut what_ifs = vec![];

    // Cap the loop: fewer calls per task, and each dropped call also drops
    // every re-send it would have carried.
    let k = a.capped_calls.min(a.calls_per_task).max(1);
    let cap_in = input_per_task(a.first_call_tokens, a.growth_tokens, k) * a.tasks;
    let cap_out = a.output_tokens_per_task * k / a.calls_per_task * a.tasks;
    let capped = night_with(usd(p, cap_in, cap_out), cap_in, cap_out, p);
    what_ifs.push(WhatIf {
        row: format!("cap the loop at {k} calls"),
        total_usd: capped.total_usd,
        saves_usd: night.total_usd - capped.total_usd,
        note: format!(
            "input per task {} -> {}",
            per_task_in,
            input_per_task(a.first_call_tokens, a.growth_tokens, k)
        ),
    });

    // Prompt caching: call t reads the previous call's whole input from the
    // cache (0.1x) and writes its new part (1.25x). Below the minimum
    // cacheable prefix nothing caches; past the TTL every read misses and the
    // run pays the 1.25x write on everything.
    let (cache_usd, note) = if a.first_call_tokens < a.cache_min_prefix {
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
    };
    let cached = night_with(cache_usd, exec_in, exec_out, p);
    what_ifs.push(WhatIf {
        row: "prompt caching".into(),
        total_usd: cached.total_usd,
        saves_usd: night.total_usd - cached.total_usd,
        note,
    });

    let cheaper = night_with(usd(p, exec_in, exec_out), exec_in, exec_out, cheap);
    what_ifs.push(WhatIf {
        row: format!("verification on {}", a.cheap_model),
        total_usd: cheaper.total_usd,
        saves_usd: night.total_usd - cheaper.total_usd,
        note: format!("${}/${} per MTok", cheap.input, cheap.output),
    });
    Ok(Priced { night, what_ifs })
}

fn load_prices(path: &std::path::Path) -> Result<BTreeMap<String, P>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let t: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("{}: {}", path.display(), e.message()))?;
    let prices = t.get("prices").and_then(|p| p.as_table()).ok_or_else(|| {
        format!(
            "{}: field `prices`: expected a [prices.\"<model>\"] table",
            path.display()
        )
    })?;
    let mut out = BTreeMap::new();
    for (m, v) in prices {
        let num = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .filter(|x| *x >= 0.0)
                .ok_or_else(|| {
                    format!(
                        "{}: field `prices.{m}.{k}`: expected a non-negative $/MTok",
                        path.display()
                    )
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

fn table(pr: &Priced) -> String {
    use tabled::{builder::Builder, settings::Style};
    let mut b = Builder::default();
    b.push_record(["call kind", "calls", "input tokens", "output tokens", "USD"]);
    for l in &pr.night.lines {
        b.push_record([
            l.kind.clone(),
            l.calls.to_string(),
            l.input_tokens.to_string(),
            l.output_tokens.to_string(),
            format!("${:.2}", l.usd),
        ]);
    }
    b.push_record([
        "night".into(),
        String::new(),
        String::new(),
        String::new(),
        format!("${:.2}", pr.night.total_usd),
    ]);
    let mut t = b.build();
    t.with(Style::sharp());
    let mut w = Builder::default();
    w.push_record(["what if", "night", "saves", "why"]);
    for x in &pr.what_ifs {
        w.push_record([
            x.row.clone(),
            format!("${:.2}", x.total_usd),
            format!("${:.2}", x.saves_usd),
            x.note.clone(),
        ]);
    }
    let mut wt = w.build();
    wt.with(Style::sharp());
    format!(
        "{t}\ninput per task {} tokens; headroom ${:.2} under the cap; {:.0} verified tasks; ${:.2} per verified task\n{wt}",
        pr.night.input_per_task, pr.night.headroom_usd, pr.night.verified_tasks, pr.night.cost_per_verified_usd
    )
}

pub fn run(args: PriceArgs) -> ExitCode {
    let prices = match &args.prices {
        Some(p) => match load_prices(p) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("bench price: {e}");
                return ExitCode::from(ExitStatus::Usage);
            }
        },
        None => default_prices(),
    };
    let pr = match price(&args, &prices) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("bench price: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let text = table(&pr);
    println!("{text}");
    if let Some(out) = &args.out {
        let json = serde_json::json!({"night": pr.night, "what_ifs": pr.what_ifs});
        let r = std::fs::create_dir_all(out)
            .and_then(|_| {
                harness::durable::atomic_write(
                    &out.join("price.json"),
                    serde_json::to_string_pretty(&json)
                        .unwrap_or_default()
                        .as_bytes(),
                )
            })
            .and_then(|_| {
                harness::durable::atomic_write(
                    &out.join("price.md"),
                    format!("```\n{text}\n```\n").as_bytes(),
                )
            });
        if let Err(e) = r {
            eprintln!("bench price: cannot write {}: {e}", out.display());
            return ExitCode::from(ExitStatus::Failed);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PriceArgs,
    }

    fn seed() -> Priced {
        let a = T::parse_from(["t"]).a;
        price(&a, &default_prices()).unwrap()
    }

    #[test]
    fn reproduces_the_seed_figures() {
        let p = seed();
        let n = &p.night;
        assert_eq!(n.input_per_task, 70_500);
        let exec = &n.lines[0];
        assert_eq!(
            (exec.calls, exec.input_tokens, exec.output_tokens),
            (240, 2_820_000, 168_000)
        );
        assert_eq!(format!("{:.2}", exec.usd), "18.30");
        assert_eq!(format!("{:.2}", n.lines[2].usd), "0.35", "8 drift checks");
        assert_eq!(n.lines[2].calls, 8);
        assert_eq!(format!("{:.2}", n.total_usd), "22.01");
        assert_eq!(format!("{:.2}", n.headroom_usd), "5.99");
        assert_eq!(n.verified_tasks, 30.0);
        assert_eq!(format!("{:.2}", n.cost_per_verified_usd), "0.73");
        // 83% of the night is task execution.
        assert_eq!(format!("{:.0}", 100.0 * exec.usd / n.total_usd), "83");
    }

    #[test]
    fn loop_length_costs_quadratically_and_caching_has_its_caveats() {
        assert_eq!(
            input_per_task(3500, 3300, 7) - input_per_task(3500, 3300, 6),
            3500 + 6 * 3300,
            "a 7th call adds its own ~23.3k"
        );
        let p = seed();
        assert!(p.what_ifs[0].saves_usd > 8.0, "{:?}", p.what_ifs[0]);
        assert!(p.what_ifs[1].saves_usd > 0.0);
        let mut a = T::parse_from(["t", "--inter-call-gap-s", "400"]).a;
        let slow = price(&a, &default_prices()).unwrap();
        assert!(
            slow.what_ifs[1].saves_usd < 0.0,
            "past the TTL caching costs more: {:?}",
            slow.what_ifs[1]
        );
        a = T::parse_from(["t", "--cache-min-prefix", "4096"]).a;
        let small = price(&a, &default_prices()).unwrap();
        assert!(
            small.what_ifs[1].saves_usd.abs() < 1e-9,
            "below the floor nothing caches"
        );
        assert!(p.what_ifs[2].saves_usd > 0.0);
    }
}
