//! `bench price`: a night's cost derived from first principles, as the seed
//! does it (the model, and why its defaults are the seed's, is
//! `bench::price`). This is its command line, its table and its files.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::exit::ExitStatus;
use crate::prices::default_prices;
use bench::price::{load_prices, price, Inputs, Priced, DEMO_GOAL, HISTORY_LINE_BYTES_MEASURED};

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
    /// The harness's `[memory]` settings the compaction row is priced at
    /// (default: the harness's own defaults).
    #[arg(long, default_value_t = harness::spec::DEFAULT_COMPACT_ABOVE_TOKENS)]
    pub compact_above_tokens: u64,
    #[arg(long, default_value_t = harness::spec::DEFAULT_COMPACT_MAX_TOKENS)]
    pub compact_max_tokens: u32,
    #[arg(long, default_value_t = harness::spec::DEFAULT_COMPACT_EVERY_TASKS_MIN)]
    pub compact_every_tasks_min: u64,
    /// Bytes of one history line as `RunState::history_bytes` counts it (the
    /// line, its `- ` and newline). Default: the longest in real runs
    /// (`HISTORY_LINE_BYTES_MEASURED`).
    #[arg(long, default_value_t = HISTORY_LINE_BYTES_MEASURED)]
    pub history_line_bytes: u64,
    /// The goal the compaction request carries (default: the demo's).
    #[arg(long, default_value = DEMO_GOAL)]
    pub goal: String,
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

impl PriceArgs {
    /// The model's inputs: every flag but the files.
    pub fn inputs(&self) -> Inputs {
        Inputs {
            tasks: self.tasks,
            calls_per_task: self.calls_per_task,
            first_call_tokens: self.first_call_tokens,
            growth_tokens: self.growth_tokens,
            output_tokens_per_task: self.output_tokens_per_task,
            pass_rate: self.pass_rate,
            cap: self.cap,
            model: self.model.clone(),
            cheap_model: self.cheap_model.clone(),
            drift_every: self.drift_every,
            replans: self.replans,
            compactions: self.compactions,
            verify_call: self.verify_call.clone(),
            drift_call: self.drift_call.clone(),
            replan_call: self.replan_call.clone(),
            compaction_call: self.compaction_call.clone(),
            compact_above_tokens: self.compact_above_tokens,
            compact_max_tokens: self.compact_max_tokens,
            compact_every_tasks_min: self.compact_every_tasks_min,
            history_line_bytes: self.history_line_bytes,
            goal: self.goal.clone(),
            capped_calls: self.capped_calls,
            cache_min_prefix: self.cache_min_prefix,
            inter_call_gap_s: self.inter_call_gap_s,
            cache_ttl_s: self.cache_ttl_s,
        }
    }
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
    let c = &pr.compaction_at_settings;
    let seed = pr.night.lines.iter().find(|l| l.kind == "compaction");
    let first = match c.tasks_to_first_compaction {
        Some(t) => format!("the first would come after {t} tasks"),
        None => format!(
            "it never passes the bound, at any night length: the history keeps {} lines, {} bytes of these",
            harness::state::HISTORY_SUMMARY_MAX_LINES,
            harness::state::HISTORY_SUMMARY_MAX_LINES as u64 * c.history_line_bytes
        ),
    };
    format!(
        "{t}\ninput per task {} tokens; headroom ${:.2} under the cap; {:.0} verified tasks; ${:.2} per verified task\n{wt}\n\
         compaction at the harness's [memory] settings (compact_above_tokens {}, compact_max_tokens {}, compact_every_tasks_min {}) \
         with {}-byte history lines{}: {} tasks leave a {}-byte history ({} tokens by bytes / 4): \
         {} compaction(s), {} in / {} out, ${:.2}{}; one at the bound is {} in / {} out, ${:.4}{}.",
        pr.night.input_per_task, pr.night.headroom_usd, pr.night.verified_tasks, pr.night.cost_per_verified_usd,
        c.compact_above_tokens, c.compact_max_tokens, c.compact_every_tasks_min,
        c.history_line_bytes,
        if c.history_line_bytes == HISTORY_LINE_BYTES_MEASURED { " (the longest in real runs)" } else { "" },
        c.tasks,
        c.history_bytes_at_end, c.history_tokens_at_end,
        c.line.calls, c.line.input_tokens, c.line.output_tokens, c.line.usd,
        seed.map(|l| format!(" (the seed's night prices {} at {} in / {} out, ${:.2})", l.calls, l.input_tokens / l.calls.max(1), l.output_tokens / l.calls.max(1), l.usd)).unwrap_or_default(),
        c.input_tokens_per_call, c.output_tokens_per_call, c.usd_per_call,
        if c.line.calls == 0 { format!("; {first}") } else { String::new() },
    )
}

pub fn run(args: PriceArgs) -> ExitCode {
    let prices = match &args.prices {
        Some(p) => match load_prices(p) {
            Ok(x) => x,
            Err(e) => {
                errln!("bench price: {e}");
                return ExitCode::from(ExitStatus::Usage);
            }
        },
        None => default_prices(),
    };
    let pr = match price(&args.inputs(), &prices) {
        Ok(p) => p,
        Err(e) => {
            errln!("bench price: {e}");
            return ExitCode::from(ExitStatus::Usage);
        }
    };
    let text = table(&pr);
    outln!("{text}");
    if let Some(out) = &args.out {
        let json = serde_json::json!({
            "night": pr.night,
            "what_ifs": pr.what_ifs,
            "compaction_at_harness_settings": pr.compaction_at_settings,
        });
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
            errln!("bench price: cannot write {}: {e}", out.display());
            return ExitCode::from(ExitStatus::Failed);
        }
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::price::{input_per_task, usd};
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PriceArgs,
    }

    fn seed() -> Priced {
        let a = T::parse_from(["t"]).a;
        price(&a.inputs(), &default_prices()).unwrap()
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
        let slow = price(&a.inputs(), &default_prices()).unwrap();
        assert!(
            slow.what_ifs[1].saves_usd < 0.0,
            "past the TTL caching costs more: {:?}",
            slow.what_ifs[1]
        );
        a = T::parse_from(["t", "--cache-min-prefix", "4096"]).a;
        let small = price(&a.inputs(), &default_prices()).unwrap();
        assert!(
            small.what_ifs[1].saves_usd.abs() < 1e-9,
            "below the floor nothing caches"
        );
        assert!(p.what_ifs[2].saves_usd > 0.0);
    }

    #[test]
    fn compaction_is_priced_from_the_harness_settings_not_the_seed_size() {
        use harness::spec::{
            DEFAULT_COMPACT_ABOVE_TOKENS, DEFAULT_COMPACT_EVERY_TASKS_MIN,
            DEFAULT_COMPACT_MAX_TOKENS,
        };
        let p = seed();
        // The seed's row stays, as the seed sized it.
        let seed_row = p
            .night
            .lines
            .iter()
            .find(|l| l.kind == "compaction")
            .unwrap();
        assert_eq!(
            (
                seed_row.calls,
                seed_row.input_tokens,
                seed_row.output_tokens
            ),
            (6, 270_000, 17_160)
        );
        let c = &p.compaction_at_settings;
        assert_eq!(
            (
                c.compact_above_tokens,
                c.compact_max_tokens,
                c.compact_every_tasks_min
            ),
            (
                DEFAULT_COMPACT_ABOVE_TOKENS,
                DEFAULT_COMPACT_MAX_TOKENS,
                DEFAULT_COMPACT_EVERY_TASKS_MIN
            )
        );
        // One request at the bound: a history just over compact_above_tokens
        // (bytes / 4), plus COMPACT_SYSTEM, the goal and the prompt's tags;
        // at most compact_max_tokens out. Never the seed's 45,000 / 2,860.
        let around = (harness::agent::COMPACT_SYSTEM.len() + DEMO_GOAL.len() + 64) as u64 / 4;
        assert!(
            c.input_tokens_per_call > DEFAULT_COMPACT_ABOVE_TOKENS
                && c.input_tokens_per_call <= DEFAULT_COMPACT_ABOVE_TOKENS + 1 + around,
            "{c:?}"
        );
        assert_ne!(
            (c.input_tokens_per_call, c.output_tokens_per_call),
            (45_000, 2_860)
        );
        assert_eq!(c.output_tokens_per_call, DEFAULT_COMPACT_MAX_TOKENS as u64);
        // 40 tasks of the longest measured line stay far under the bound:
        // a 40-task night makes no compaction at the defaults.
        assert_eq!(c.history_bytes_at_end, 40 * HISTORY_LINE_BYTES_MEASURED);
        assert!(c.history_tokens_at_end <= DEFAULT_COMPACT_ABOVE_TOKENS);
        assert_eq!(
            (c.line.calls, c.line.input_tokens, c.line.output_tokens),
            (0, 0, 0)
        );
        assert_eq!(c.line.usd, 0.0);
        let t = c.tasks_to_first_compaction.unwrap();
        let est = |t: u64| t * HISTORY_LINE_BYTES_MEASURED / 4;
        assert!(
            est(t) > DEFAULT_COMPACT_ABOVE_TOKENS && est(t - 1) <= DEFAULT_COMPACT_ABOVE_TOKENS
        );
        // The what-if night is the seed's without its compaction line.
        let w = p.what_ifs.last().unwrap();
        assert!(w.row.contains("[memory]"), "{w:?}");
        assert!((w.saves_usd - seed_row.usd).abs() < 1e-9, "{w:?}");
        assert!(w.note.starts_with("0 in 40 tasks"), "{w:?}");
    }

    #[test]
    fn a_longer_night_or_a_lower_bound_compacts_at_the_harness_spacing() {
        let opus = default_prices()["claude-opus-5"];
        let priced = |args: &[&str]| {
            let a = T::parse_from(std::iter::once("t").chain(args.iter().copied())).a;
            price(&a.inputs(), &default_prices())
                .unwrap()
                .compaction_at_settings
        };
        // 400 tasks: the first after 162, then as soon as the largest summary
        // the harness keeps (16 KiB) has grown past the bound again.
        let long = priced(&["--tasks", "400"]);
        assert_eq!(long.line.calls, 3, "{long:?}");
        let per = long.input_tokens_per_call;
        assert!(long.line.input_tokens >= 3 * per && long.line.input_tokens < 3 * (per + 50));
        assert_eq!(long.line.output_tokens, 3 * long.output_tokens_per_call);
        assert!(
            (long.line.usd - usd(opus, long.line.input_tokens, long.line.output_tokens)).abs()
                < 1e-12
        );
        // A 500-token bound: over it after 11 tasks, then every 5 (the spacing).
        let low = priced(&["--compact-above-tokens", "500"]);
        assert_eq!(low.tasks_to_first_compaction, Some(11));
        assert_eq!(low.line.calls, 6, "steps 11, 16, 21, 26, 31, 36: {low:?}");
        // Lines the size of a scripted suite's median never pass the default
        // bound: the history keeps 200 lines.
        let short = priced(&["--history-line-bytes", "76"]);
        assert_eq!(
            (short.line.calls, short.tasks_to_first_compaction),
            (0, None)
        );
    }
}
