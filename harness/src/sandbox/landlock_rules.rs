//! The Landlock ruleset of a confined check, through the `landlock` crate:
//! built in the parent (it opens every allowed path), enforced by the child
//! that `spawn.rs` starts, with `no_new_privs` and one syscall on its
//! descriptor.

use super::Policy;
use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

/// The ABI the ruleset is written for: filesystem rights up to ABI 6, TCP
/// bind and connect (ABI 4), and the signal and abstract-socket scopes
/// (ABI 6). A kernel with more enforces these; one with less is refused by
/// `Probe::level` before a ruleset is ever built.
const ABI_TARGET: ABI = ABI::V6;

/// Device files a check may read and write (a test runner writes to
/// /dev/null; `random` reads /dev/urandom).
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The kernel's Landlock ABI version, or None when Landlock is off.
pub fn abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the documented version query: a NULL attr, size 0 and the
    // VERSION flag; it creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then_some(v as i32)
}

/// The ruleset for `policy`, every path opened now.
pub fn prepare(policy: &Policy) -> Result<RulesetCreated, String> {
    let all = AccessFs::from_all(ABI_TARGET);
    let read = AccessFs::from_read(ABI_TARGET);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| e.to_string())?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(|e| e.to_string())?;
    if !policy.network {
        // No TCP bind or connect at all (the network namespace, where there
        // is one, already leaves nothing to connect to; this holds without).
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI_TARGET))
            .map_err(|e| e.to_string())?;
    }
    let devices: Vec<&str> = DEVICES
        .iter()
        .copied()
        .filter(|d| std::path::Path::new(d).exists())
        .collect();
    ruleset
        .create()
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(&policy.write, all))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(&policy.read, read))
        .map_err(|e| e.to_string())?
        .add_rules(path_beneath_rules(&devices, all))
        .map_err(|e| e.to_string())
}
