//! Every bench command's exit status, and the one table that turns it into a
//! process exit code.
//!
//! CI and the integration tests read these codes, so each variant keeps the
//! code its command has always used. The codes are shared on purpose (1 = the
//! gate's answer is no, 2 = the command was misused, 3 = there was nothing to
//! judge), with two historical exceptions kept as they are: `bench chaos`
//! reports a bench fault as 2, and `bench ab` reports a suite it cannot load
//! as 2 (`Usage`), where `bench run` says 3 (`Unloadable`).
//!
//! | status          | code | commands                                              |
//! |-----------------|------|-------------------------------------------------------|
//! | `Pass`          | 0    | all                                                   |
//! | `Failed`        | 1    | run, merge, knee, faults, price, script, serve        |
//! | `Regressed`     | 1    | ab                                                    |
//! | `Incomplete`    | 1    | record (and run/ab live: the cap was reached)         |
//! | `Missed`        | 1    | self-test                                             |
//! | `Finding`       | 1    | chaos                                                 |
//! | `WriteFailed`   | 1    | calibrate                                             |
//! | `Diverged`      | 1    | diverge                                               |
//! | `Usage`         | 2    | run, ab, calibrate, record, knee, self-test, price, script, diverge |
//! | `BenchFault`    | 2    | chaos                                                 |
//! | `Unloadable`    | 3    | run, merge, knee, record, self-test, faults, diverge (a set or cassette that cannot be read; and run/ab/knee/diverge: outputs not written) |
//! | `NotComparable` | 3    | ab                                                    |
//! | `NotMeasured`   | 3    | calibrate                                             |

use std::process::ExitCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The gate passed / the command did what it was asked.
    Pass,
    /// Some case failed, a case file could not be loaded, or the check failed.
    Failed,
    /// `bench ab`: arm B is worse than arm A.
    Regressed,
    /// Some case-runs did not complete (the live cap was reached, a recording
    /// was not written).
    Incomplete,
    /// `bench self-test`: some broken variant was not caught.
    Missed,
    /// `bench chaos`: an invariant did not hold.
    Finding,
    /// `bench calibrate`: the report could not be written.
    WriteFailed,
    /// `bench diverge`: some case's trajectory diverged (or is on one side only).
    Diverged,
    /// A bad command line (or, for `bench ab`, a suite or config it cannot use).
    Usage,
    /// `bench chaos`: the bench itself could not run.
    BenchFault,
    /// The suite itself could not be loaded, the bench could not start, or the
    /// outputs could not be written.
    Unloadable,
    /// `bench ab`: the arms cannot be compared.
    NotComparable,
    /// `bench calibrate`: nothing was measured.
    NotMeasured,
}

impl ExitStatus {
    pub const fn code(self) -> u8 {
        match self {
            ExitStatus::Pass => 0,
            ExitStatus::Failed
            | ExitStatus::Regressed
            | ExitStatus::Incomplete
            | ExitStatus::Missed
            | ExitStatus::Finding
            | ExitStatus::WriteFailed
            | ExitStatus::Diverged => 1,
            ExitStatus::Usage | ExitStatus::BenchFault => 2,
            ExitStatus::Unloadable | ExitStatus::NotComparable | ExitStatus::NotMeasured => 3,
        }
    }

    /// A gate's status from its final answer: `Pass` or `failed`.
    pub fn gate(passed: bool, failed: ExitStatus) -> ExitStatus {
        if passed {
            ExitStatus::Pass
        } else {
            failed
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(s: ExitStatus) -> ExitCode {
        ExitCode::from(s.code())
    }
}

#[cfg(test)]
mod tests {
    use super::ExitStatus::*;

    /// The table CI and bench/tests depend on; a change here is a CLI change.
    #[test]
    fn every_status_keeps_its_code() {
        let table = [
            (Pass, 0),
            (Failed, 1),
            (Regressed, 1),
            (Incomplete, 1),
            (Missed, 1),
            (Finding, 1),
            (WriteFailed, 1),
            (Diverged, 1),
            (Usage, 2),
            (BenchFault, 2),
            (Unloadable, 3),
            (NotComparable, 3),
            (NotMeasured, 3),
        ];
        for (s, c) in table {
            assert_eq!(s.code(), c, "{s:?}");
        }
        assert_eq!(super::ExitStatus::gate(true, Regressed), Pass);
        assert_eq!(super::ExitStatus::gate(false, Regressed), Regressed);
    }
}
