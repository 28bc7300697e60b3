//! `bench ab` apart from its flags and its rendering: each arm's config
//! (`config`), running both arms interleaved (`run`), and from the
//! case-runs of the two arms to the comparison (`analysis`, pure), with the
//! simulations that show its statistics are valid (`sim`, tests only), which
//! exercise exactly the code the command reports with.

pub mod analysis;
pub mod config;
pub mod run;
#[cfg(test)]
mod sim;
