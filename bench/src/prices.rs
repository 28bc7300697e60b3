//! Model prices: the default table (the seed's figures) and a `[prices]`
//! file in a run spec's format, for `bench price`, `bench calibrate` and
//! `bench record`.

use harness::ledger::{Price, PriceTable};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// Why a price table file was refused: the file, the field, what was
/// expected.
#[derive(Debug, thiserror::Error)]
pub enum PriceTableError {
    #[error("{}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not valid TOML: {reason}", path.display())]
    Toml { path: PathBuf, reason: String },
    #[error(
        "{}: field `prices`: missing; expected a [prices.\"<model>\"] table per model",
        path.display()
    )]
    NoPrices { path: PathBuf },
    #[error(
        "{}: field `prices.{model}.{key}`: expected a non-negative number of USD per million tokens",
        path.display()
    )]
    NotAPrice {
        path: PathBuf,
        model: String,
        key: &'static str,
    },
}

/// Same format as a run spec's [prices] table, so one file serves both.
pub fn load_price_table(path: &Path) -> Result<PriceTable, PriceTableError> {
    let at = path.to_path_buf();
    let text = std::fs::read_to_string(path).map_err(|source| PriceTableError::Read {
        path: at.clone(),
        source,
    })?;
    let t: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| PriceTableError::Toml {
            path: at.clone(),
            reason: e.message().trim().to_string(),
        })?;
    let prices = (t.get("prices").and_then(|p| p.as_table()))
        .ok_or_else(|| PriceTableError::NoPrices { path: at.clone() })?;
    let mut out = PriceTable::new();
    for (m, v) in prices {
        let num = |key: &'static str| {
            v.get(key)
                .and_then(|x| x.as_float().or(x.as_integer().map(|i| i as f64)))
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| PriceTableError::NotAPrice {
                    path: at.clone(),
                    model: m.clone(),
                    key,
                })
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
