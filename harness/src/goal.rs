//! The immutable original goal. It lives only in harness memory (loaded once
//! from the spec at submit time); no tool can read or write it. The hash is a
//! cheap secondary check against an in-process mutation (a bad merge, a buggy
//! library), not a defense against the agent: the real lock is that no tool
//! reaches it at all.

use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct Goal {
    text: String,
    sha256: String,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("goal text mutated: expected sha256 {expected}, found {found}")]
pub struct GoalTampered {
    pub expected: String,
    pub found: String,
}

pub fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

impl Goal {
    pub fn new(text: impl Into<String>) -> Goal {
        let text = text.into();
        let sha256 = sha256_hex(&text);
        Goal { text, sha256 }
    }
    pub fn text(&self) -> &str {
        &self.text
    }
    pub fn sha256(&self) -> &str {
        &self.sha256
    }
    /// Recompute and compare. Called at every drift check, every checkpoint
    /// save and on resume.
    pub fn assert_intact(&self) -> Result<(), GoalTampered> {
        let found = sha256_hex(&self.text);
        if found == self.sha256 {
            Ok(())
        } else {
            Err(GoalTampered {
                expected: self.sha256.clone(),
                found,
            })
        }
    }

    /// Test-only: simulate the in-process corruption the hash exists to catch
    /// (a write to the text that forgets the hash). Not in the production
    /// build: only the `test-hooks` goal tamper and unit tests call it.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn corrupt_for_test(&mut self, text: &str) {
        self.text = text.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn intact_until_mutated() {
        let mut g = Goal::new("Reduce p95 latency on /api/search to under 200ms.");
        assert!(g.assert_intact().is_ok());
        g.corrupt_for_test("Improve observability of the search subsystem.");
        let e = g.assert_intact().unwrap_err();
        assert_eq!(
            e.expected,
            sha256_hex("Reduce p95 latency on /api/search to under 200ms.")
        );
    }
}
