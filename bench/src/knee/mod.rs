//! `bench knee` apart from its flags and its rendering: running the suite
//! at each budget level and observing each case-run (`run`), and from those
//! case-runs to the knee table (`analysis`, pure: no I/O, so every figure is
//! testable from numbers).

pub mod analysis;
pub mod run;
