//! The settings a comparison's arm or a budget level lays over a case's run
//! spec: a value the runner applies and the live target reads, kept below
//! both so neither names the other for it.

/// Settings laid over a case's run spec for one arm of a comparison (`bench
/// ab`) or one budget level (`bench knee`). Tables merge key by key; values
/// replace. `budget_scale` multiplies the hard cap and the visible task budget.
#[derive(Debug, Clone, Default)]
pub struct Overlay {
    pub table: toml::Table,
    pub budget_scale: Option<f64>,
    /// Variables set on every harness process of the arm, after the case's
    /// own (`bench self-test`: which broken variant the process runs as).
    pub harness_env: Vec<(String, String)>,
}

fn merge_into(dst: &mut toml::Table, src: &toml::Table) {
    for (k, v) in src {
        match (dst.get_mut(k), v) {
            (Some(toml::Value::Table(d)), toml::Value::Table(s)) => merge_into(d, s),
            _ => {
                dst.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Overlay {
    pub fn is_empty(&self) -> bool {
        self.table.is_empty() && self.budget_scale.is_none()
    }

    /// Apply to the text of a run.toml; errors name what could not be applied.
    pub fn apply(&self, spec_text: &str) -> Result<String, OverlayError> {
        let mut t: toml::Table = spec_text
            .parse()
            .map_err(|e: toml::de::Error| OverlayError::Spec(e.message().to_string()))?;
        merge_into(&mut t, &self.table);
        if let Some(f) = self.budget_scale {
            let b = t
                .get_mut("budget")
                .and_then(|b| b.as_table_mut())
                .ok_or(OverlayError::NoBudget)?;
            let cap = b
                .get("hard_cap_usd")
                .and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)))
                .ok_or(OverlayError::CapNotANumber)?;
            b.insert("hard_cap_usd".into(), toml::Value::Float(cap * f));
            if let Some(tok) = b.get("task_budget_tokens").and_then(|v| v.as_integer()) {
                b.insert(
                    "task_budget_tokens".into(),
                    toml::Value::Integer(((tok as f64 * f).round() as i64).max(1)),
                );
            }
        }
        Ok(toml::to_string(&t)?)
    }
}

/// Why an overlay could not be laid over a run spec.
#[derive(Debug, thiserror::Error)]
pub enum OverlayError {
    #[error("run.toml: {0}")]
    Spec(String),
    #[error("run.toml has no [budget] table")]
    NoBudget,
    #[error("budget.hard_cap_usd is not a number")]
    CapNotANumber,
    #[error("{0}")]
    Write(#[from] toml::ser::Error),
}
