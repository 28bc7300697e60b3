//! placeholder
use super::AbRun;
pub fn write_all(_r: &AbRun, _out: &std::path::Path) -> Result<(), String> { Ok(()) }
pub fn terminal(_r: &AbRun) -> String { String::new() }
