//! The subcommands: each parses its own `Args` and runs on the core
//! (`bench::*`, re-exported at the binary's root); none calls another.

pub mod ab;
pub mod calibrate;
pub mod chaos;
pub mod diverge;
pub mod faults;
pub mod flaky;
pub mod guarantees;
pub mod index;
pub mod knee;
pub mod merge;
pub mod new_case;
pub mod price;
pub mod record;
pub mod run;
pub mod schemas;
pub mod script;
pub mod self_test;
pub mod serve;
pub mod try_case;
