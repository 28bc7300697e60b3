//! The third layer: a syscall filter on every confined process, compiled
//! once per process by `seccompiler` (rust-vmm's compiler from a rule list
//! to BPF, Firecracker's) and installed by the child as its last step
//! before `execve` (`spawn.rs`). The filter is data, listed here and tested
//! below, not hand-written BPF.
//!
//! What it refuses (EPERM), each for a route a check has no business
//! taking, whatever the other layers already stop:
//! - the kernel's own reach: `ptrace`, `bpf`, `perf_event_open`, the key
//!   rings, modules, `kexec`, `reboot`, `swapon`, `syslog`, `acct`,
//!   `quotactl`, handle-based opens, `userfaultfd`, other processes' memory,
//!   `io_uring` (its operations are not seen by this filter);
//! - mounts and namespaces: every mount syscall, `unshare`, `setns`, and a
//!   `clone` asking for a new namespace (a new user namespace would hand it
//!   a fresh set of capabilities);
//! - device nodes: `mknod` of a character or block device (a FIFO or a
//!   plain file is fine);
//! - file attributes and terminals: the `chattr` ioctls (immutable,
//!   append-only) and `TIOCSTI` / `TIOCLINUX` (typing into a terminal);
//! - unix sockets: `socket(AF_UNIX, ..)`. A filter cannot read the address
//!   a `connect` names, so no unix socket is made at all: a pathname socket
//!   of the host (a container runtime's, the system bus) cannot be reached
//!   even where the mount view shows one. `socketpair` stays (no address).
//!
//! `clone3` answers ENOSYS instead, in a filter of its own: its flags are
//! in memory the filter cannot read, and libc falls back to `clone` (whose
//! flags it can) only on ENOSYS.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Syscalls refused whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_syslog,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_userfaultfd,
    libc::SYS_fanotify_init,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
];

/// `clone` flags that make a namespace.
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWCGROUP,
];

/// ioctl requests refused: `chattr`'s (FS_IOC_SETFLAGS, its 32-bit form,
/// FS_IOC_FSSETXATTR) and the two that type into a terminal.
const DENIED_IOCTLS: [u64; 5] = [0x4008_6602, 0x4004_6602, 0x401c_5820, 0x5412, 0x541c];

/// The two programs a confined child installs, compiled once per process.
pub struct Filters {
    /// Everything above but `clone3`: EPERM.
    pub deny: BpfProgram,
    /// `clone3`: ENOSYS.
    pub clone3: BpfProgram,
}

/// This process's filters, or why they could not be compiled (then no
/// level that needs them is offered: `Probe`).
pub fn filters() -> Result<&'static Filters, &'static str> {
    static F: OnceLock<Result<Filters, String>> = OnceLock::new();
    F.get_or_init(compile).as_ref().map_err(String::as_str)
}

fn arch() -> Result<TargetArch, String> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())
}

fn cond(arg: u8, len: Len, op: Op, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(arg, len, op, value).map_err(|e| e.to_string())
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|e| e.to_string())
}

/// `mknod`-family rules: the mode argument `arg` names a device.
fn device_node_rules(arg: u8) -> Result<Vec<SeccompRule>, String> {
    let fmt = u64::from(libc::S_IFMT);
    [libc::S_IFCHR, libc::S_IFBLK]
        .into_iter()
        .map(|kind| {
            rule(vec![cond(
                arg,
                Len::Dword,
                Op::MaskedEq(fmt),
                u64::from(kind),
            )?])
        })
        .collect()
}

fn deny_rules() -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&s| (s, Vec::new())).collect();
    let clone = NAMESPACE_FLAGS
        .iter()
        .map(|&f| rule(vec![cond(0, Len::Qword, Op::MaskedEq(f as u64), f as u64)?]))
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_clone, clone);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device_node_rules(1)?);
    rules.insert(libc::SYS_mknodat, device_node_rules(2)?);
    let ioctls = DENIED_IOCTLS
        .iter()
        .map(|&r| rule(vec![cond(1, Len::Dword, Op::Eq, r)?]))
        .collect::<Result<_, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctls);
    let unix = rule(vec![cond(0, Len::Dword, Op::Eq, libc::AF_UNIX as u64)?])?;
    rules.insert(libc::SYS_socket, vec![unix]);
    Ok(rules)
}

fn program(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: libc::c_int,
) -> Result<BpfProgram, String> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )
    .map_err(|e| e.to_string())?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
}

fn compile() -> Result<Filters, String> {
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    Ok(Filters {
        deny: program(deny_rules()?, libc::EPERM)?,
        clone3: program(clone3, libc::ENOSYS)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both programs compile on this architecture, and neither is empty
    /// (an empty program would be refused by the kernel, or filter nothing).
    #[test]
    fn the_filters_compile() {
        let f = filters().expect("the filters compile");
        eprintln!(
            "deny: {} instructions, clone3: {}",
            f.deny.len(),
            f.clone3.len()
        );
        assert!(f.deny.len() > DENIED.len(), "{} instructions", f.deny.len());
        assert!(!f.clone3.is_empty());
    }
}
