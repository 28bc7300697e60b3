//! What a live recording lays over each case's run.toml (the model, the
//! protocol, the temperature, extra prices) and the check that the laid spec
//! still parses before anything is spent. Shared by `bench record` and
//! `bench diverge --endpoint`, so both record a case the same way.

use crate::cli::ProtocolArg;
use crate::spec_overlay::Overlay;
use crate::suite::Case;
use harness::model::Protocol;

/// The clap value as the model crate's protocol.
pub fn protocol(p: ProtocolArg) -> Protocol {
    match p {
        ProtocolArg::Openai => Protocol::Openai,
        ProtocolArg::Anthropic => Protocol::Anthropic,
    }
}

/// The overlay every case's run.toml gets (the seed is set per run by the
/// live target).
pub fn overlay(
    protocol: Protocol,
    model: &str,
    temperature: f64,
    prices: Option<&harness::ledger::PriceTable>,
) -> Overlay {
    let mut m = toml::Table::new();
    m.insert(
        "protocol".into(),
        toml::Value::String(protocol.as_str().into()),
    );
    for role in ["planner", "executor", "judge"] {
        m.insert(role.into(), toml::Value::String(model.into()));
    }
    m.insert("temperature".into(), toml::Value::Float(temperature));
    let mut table = toml::Table::new();
    table.insert("model".into(), toml::Value::Table(m));
    if let Some(p) = prices {
        let mut pt = toml::Table::new();
        for (name, price) in p {
            let mut e = toml::Table::new();
            e.insert(
                "input_usd_per_mtok".into(),
                toml::Value::Float(price.input_usd_per_mtok),
            );
            e.insert(
                "output_usd_per_mtok".into(),
                toml::Value::Float(price.output_usd_per_mtok),
            );
            pt.insert(name.clone(), toml::Value::Table(e));
        }
        table.insert("prices".into(), toml::Value::Table(pt));
    }
    Overlay {
        table,
        budget_scale: None,
        ..Default::default()
    }
}

/// Lay the overlay (and run 0's seed) over each case's spec and parse it as
/// the harness will, so a case the overlay makes invalid is a usage error
/// before anything is spent; and refuse a $0 model with no token cap.
pub fn check_cases(
    cases: &[Case],
    ov: &Overlay,
    seed: Option<u64>,
    model: &str,
    max_tokens: Option<u64>,
) -> Result<(), String> {
    for c in cases {
        let spec = c.dir.join("run.toml");
        let shown = spec.display().to_string();
        let text = std::fs::read_to_string(&spec).map_err(|e| format!("{shown}: {e}"))?;
        let mut laid: toml::Table = ov
            .apply(&text)
            .map_err(|e| format!("{shown}: {e}"))?
            .parse()
            .map_err(|e: toml::de::Error| format!("{shown}: {}", e.message()))?;
        if let (Some(s), Some(m)) = (seed, laid.get_mut("model").and_then(|m| m.as_table_mut())) {
            m.insert(
                "seed".into(),
                toml::Value::Integer(s.min(i64::MAX as u64) as i64),
            );
        }
        let laid = toml::to_string(&laid).map_err(|e| e.to_string())?;
        // Relative to the spec's own directory, absolute, as `RunSpec::load` does.
        let dir = std::fs::canonicalize(&c.dir).unwrap_or_else(|_| c.dir.clone());
        let parsed = harness::spec::RunSpec::parse(&laid, &shown, &dir).map_err(|e| {
            format!(
                "{}: field `{}`: expected {} (with --model {model} laid over it{})",
                e.file,
                e.field,
                e.expected,
                if e.field.starts_with("prices") {
                    "; give its price with --prices FILE, 0 for a local model"
                } else {
                    ""
                }
            )
        })?;
        if let Some(p) = parsed.prices.get(model) {
            if p.input_usd_per_mtok == 0.0 && p.output_usd_per_mtok == 0.0 && max_tokens.is_none() {
                return Err(format!(
                    "{shown}: model {model:?} is priced at $0, so --max-usd cannot bound it; give --max-tokens"
                ));
            }
        }
    }
    Ok(())
}
