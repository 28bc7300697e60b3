//! Figures as a person reads them on a page. Money is dollars to the cent,
//! with four places only where a figure is below a cent and not zero (a
//! replayed call costs $0.0042; "$0.00" would say it was free); never a
//! negative zero (an empty f64 sum is -0.0 and `{:.2}` keeps the sign),
//! never a float's rounding residue (0.26142250000000006 is "$0.26"), and a
//! figure that is not finite says so instead of printing "NaN".

/// `$1.23`; `$0.0042` below a cent; `-$0.50` below zero.
pub fn usd(x: f64) -> String {
    if !x.is_finite() {
        return "not a number".into();
    }
    let a = x.abs();
    let body = if (0.000_05..0.005).contains(&a) {
        format!("{a:.4}")
    } else {
        format!("{a:.2}")
    };
    // What rounds to zero is zero, whatever its sign.
    if x < 0.0 && body.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("-${body}")
    } else {
        format!("${body}")
    }
}

/// Always four places (a model call's own cost), never a negative zero.
pub fn usd4(x: f64) -> String {
    if !x.is_finite() {
        return "not a number".into();
    }
    let body = format!("{:.4}", x.abs());
    if x < 0.0 && body.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        format!("-${body}")
    } else {
        format!("${body}")
    }
}

/// A share as a whole percentage: `37%`; `<1%` for a small non-zero share.
pub fn pct(part: f64, whole: f64) -> String {
    if !(part.is_finite() && whole.is_finite()) || whole <= 0.0 {
        return "n/a".into();
    }
    let p = 100.0 * part / whole;
    if p > 0.0 && p < 0.5 {
        "<1%".into()
    } else {
        format!("{p:.0}%")
    }
}

/// Seconds as `42 s`, `12 min 5 s` or `3 h 20 min`.
pub fn duration_ms(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{:.1} s", ms as f64 / 1000.0),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A drift score, two places.
pub fn score(x: f64) -> String {
    if x.is_finite() {
        format!("{:.2}", x + 0.0)
    } else {
        "not a number".into()
    }
}

/// Thousands grouped: `1,234,567` (token counts).
/// A Unix time in ms as the date and clock time in UTC, to the second
/// (`2026-12-04 03:41:12 UTC`); the local offset is not known to the
/// harness (chrono without its time-zone database), so none is guessed.
pub fn utc(unix_ms: u64) -> String {
    match chrono::DateTime::from_timestamp_millis(unix_ms as i64) {
        Some(t) => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
        None => format!("unix ms {unix_ms}"),
    }
}

/// A moment in UTC and, when the machine's offset is known, in its local
/// time: "2026-12-04 03:41:12 UTC (04:41:12 local, UTC+01:00)".
pub fn when(unix_ms: u64, utc_offset_s: Option<i32>) -> String {
    let Some(off) = utc_offset_s else {
        return utc(unix_ms);
    };
    let local = chrono::DateTime::from_timestamp_millis(unix_ms as i64)
        .zip(chrono::FixedOffset::east_opt(off))
        .map(|(t, o)| t.with_timezone(&o));
    match local {
        Some(t) => format!(
            "{} ({} local, UTC{})",
            utc(unix_ms),
            t.format("%H:%M:%S"),
            t.format("%:z")
        ),
        None => utc(unix_ms),
    }
}

pub fn count(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_is_cents_four_places_below_a_cent_and_never_a_negative_zero() {
        assert_eq!(usd(0.26142250000000006), "$0.26");
        assert_eq!(usd(22.01), "$22.01");
        assert_eq!(usd(0.0042), "$0.0042");
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(-0.0), "$0.00");
        assert_eq!(usd(-0.000_001), "$0.00");
        assert_eq!(usd(-0.5), "-$0.50");
        assert_eq!(usd(f64::NAN), "not a number");
        assert_eq!(usd4(-0.0), "$0.0000");
        assert_eq!(usd4(0.1013), "$0.1013");
        assert_eq!(pct(7.0, 28.0), "25%");
        assert_eq!(pct(0.001, 28.0), "<1%");
        assert_eq!(pct(1.0, 0.0), "n/a");
        assert_eq!(score(-0.0), "0.00");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(12), "12");
        assert_eq!(duration_ms(125_000), "2 min 5 s");
    }

    #[test]
    fn a_moment_is_utc_and_the_machine_s_local_time() {
        let t = 1_796_355_672_000; // 2026-12-04 03:41:12 UTC
        assert_eq!(
            when(t, Some(3600)),
            "2026-12-04 03:41:12 UTC (04:41:12 local, UTC+01:00)"
        );
        assert_eq!(
            when(t, Some(-5 * 3600 - 1800)),
            "2026-12-04 03:41:12 UTC (22:11:12 local, UTC-05:30)"
        );
        assert_eq!(when(t, None), "2026-12-04 03:41:12 UTC");
    }
}
