//! An arm's configuration: a TOML file laid over every case's run.toml (the
//! `Overlay` of `bench run`'s runner) plus an optional `[ab]` table naming
//! the arm and scaling its budget, checked against the cases before anything
//! runs.

use crate::case_run::Overlay;
use crate::suite::Case;
use serde::Serialize;
use std::path::Path;

/// One arm's configuration, as loaded from its file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ArmConfig {
    pub path: String,
    pub name: String,
    pub description: String,
    /// The overlay exactly as laid over run.toml, as TOML text.
    pub overlay: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_scale: Option<f64>,
    #[serde(skip)]
    pub applied: Overlay,
}

/// Why a config file cannot be used; each message names the file (and the
/// field), as a usage error must.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read the config: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}{}: not valid TOML: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Toml {
        path: String,
        line: Option<usize>,
        message: String,
    },
    #[error("{path}: field `ab`: expected a table ([ab]), found a {found}")]
    AbNotTable { path: String, found: &'static str },
    #[error("{path}: field `ab.budget_scale`: expected a positive number, found {found}")]
    BudgetScale { path: String, found: toml::Value },
    #[error("{path}: field `ab.{key}`: expected a string, found a {found}")]
    NotString {
        path: String,
        key: String,
        found: &'static str,
    },
    #[error("{path}: field `ab.{key}`: unknown; [ab] takes name, description, budget_scale")]
    UnknownAbKey { path: String, key: String },
    #[error("{path}: {source}")]
    Serialize {
        path: String,
        source: toml::ser::Error,
    },
    #[error("{path}: cannot be applied to {spec}: {reason}")]
    Apply {
        path: String,
        spec: String,
        reason: String,
    },
    #[error("{path}: field `{field}`: expected {expected} (laid over {spec})")]
    Field {
        path: String,
        field: String,
        expected: String,
        spec: String,
    },
}

/// What the `[ab]` table says; the file's stem names an arm without one.
struct ArmHead {
    name: String,
    description: String,
    budget_scale: Option<f64>,
}

/// Read a config file: a TOML table of run-spec settings plus an optional
/// `[ab]` table (name, description, budget_scale).
pub fn load_config(path: &Path) -> Result<ArmConfig, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let mut table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Toml {
            path: shown.clone(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].lines().count().max(1)),
            message: e.message().to_string(),
        })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let head = match table.remove("ab") {
        Some(ab) => arm_head(&shown, stem, &ab)?,
        None => ArmHead {
            name: stem,
            description: String::new(),
            budget_scale: None,
        },
    };
    let overlay = toml::to_string(&table).map_err(|source| ConfigError::Serialize {
        path: shown.clone(),
        source,
    })?;
    Ok(ArmConfig {
        path: shown,
        name: head.name,
        description: head.description,
        overlay,
        budget_scale: head.budget_scale,
        applied: Overlay {
            table,
            budget_scale: head.budget_scale,
            ..Default::default()
        },
    })
}

/// The `[ab]` table, field by field: a wrong type or an unknown key is a
/// usage error naming it, never silently ignored.
fn arm_head(shown: &str, stem: String, ab: &toml::Value) -> Result<ArmHead, ConfigError> {
    let path = || shown.to_string();
    let ab = ab.as_table().ok_or_else(|| ConfigError::AbNotTable {
        path: path(),
        found: ab.type_str(),
    })?;
    let mut head = ArmHead {
        name: stem,
        description: String::new(),
        budget_scale: None,
    };
    for (k, v) in ab {
        match (k.as_str(), v) {
            ("name", toml::Value::String(s)) => head.name = s.clone(),
            ("description", toml::Value::String(s)) => head.description = s.trim().to_string(),
            ("budget_scale", v) => {
                let f = v
                    .as_float()
                    .or(v.as_integer().map(|i| i as f64))
                    .filter(|f| f.is_finite() && *f > 0.0);
                head.budget_scale = Some(f.ok_or_else(|| ConfigError::BudgetScale {
                    path: path(),
                    found: v.clone(),
                })?);
            }
            ("name" | "description", v) => {
                return Err(ConfigError::NotString {
                    path: path(),
                    key: k.clone(),
                    found: v.type_str(),
                })
            }
            _ => {
                return Err(ConfigError::UnknownAbKey {
                    path: path(),
                    key: k.clone(),
                })
            }
        }
    }
    Ok(head)
}

/// Lay the config over every case's run.toml and parse the result as the
/// harness would, so a config typo is a usage error naming the config file
/// and the field, not 2 x N failed case-runs. A case whose own spec does not
/// parse is skipped here (it fails in both arms and `bench run` reports it).
pub fn check_config_against(cfg: &ArmConfig, cases: &[Case]) -> Result<(), ConfigError> {
    for c in cases {
        let spec = c.dir.join("run.toml");
        let Ok(text) = std::fs::read_to_string(&spec) else {
            continue;
        };
        if harness::spec::RunSpec::parse(&text, &spec.display().to_string(), &c.dir).is_err() {
            continue;
        }
        let laid = cfg.applied.apply(&text).map_err(|e| ConfigError::Apply {
            path: cfg.path.clone(),
            spec: spec.display().to_string(),
            reason: e.to_string(),
        })?;
        if let Err(e) = harness::spec::RunSpec::parse(&laid, &cfg.path, &c.dir) {
            return Err(ConfigError::Field {
                path: cfg.path.clone(),
                field: e.field,
                expected: e.expected,
                spec: spec.display().to_string(),
            });
        }
    }
    Ok(())
}
