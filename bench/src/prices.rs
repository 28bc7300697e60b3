//! Model prices: the default table (the seed's figures) and a `[prices]`
//! file in a run spec's format, for `bench price`, `bench calibrate` and
//! `bench record`.

use harness::ledger::{Price, PriceTable};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// USD per million tokens, in and out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct P {
    pub input: f64,
    pub output: f64,
}

pub fn default_prices() -> BTreeMap<String, P> {
    [
        (
            "claude-opus-5".to_string(),
            P {
                input: 5.0,
                output: 25.0,
            },
        ),
        (
            "claude-sonnet-5".to_string(),
            P {
                input: 3.0,
                output: 15.0,
            },
        ),
    ]
    .into()
}

/// The default price table: `bench price`'s (the seed's figures), in the
/// ledger's type.
pub fn default_price_table() -> PriceTable {
    default_prices()
        .into_iter()
        .map(|(m, p)| {
            (
                m,
                Price {
                    input_usd_per_mtok: p.input,
                    output_usd_per_mtok: p.output,
                },
            )
        })
        .collect()
}

/// Same format as a run spec's [prices] table, so one file serves both.
pub fn load_price_table(path: &Path) -> Result<PriceTable, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let t: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        format!("{}: not valid TOML: {}", path.display(), e.message().trim())
    })?;
    let prices = t.get("prices").and_then(|p| p.as_table()).ok_or_else(|| {
        format!(
            "{}: field `prices`: missing; expected a [prices.\"<model>\"] table per model",
            path.display()
        )
    })?;
    let mut out = PriceTable::new();
    for (m, v) in prices {
        let num = |k: &str| {
            v.get(k)
                .and_then(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("{}: field `prices.{m}.{k}`: expected a non-negative number of USD per million tokens", path.display()))
        };
        out.insert(
            m.clone(),
            Price {
                input_usd_per_mtok: num("input_usd_per_mtok")?,
                output_usd_per_mtok: num("output_usd_per_mtok")?,
            },
        );
    }
    Ok(out)
}
