"""Name where a case-run's CPU goes: reads `perf script -F comm,ip,sym,dso` of a
`perf record -g --inherit` over `bench run` on stdin, names each sample by the
first rule (in the list's order) any frame of its stack matches, prints each
cost's share and,
given MS (the CPU per case-run from `perf stat`), its ms per case-run.
(docs/throughput.md has the table it made.)

    perf script -i perf.data -F comm,ip,sym,dso | perf_costs.py 37.6
"""
import sys, re, collections
# Rules in order: a sample counts for the first whose pattern any frame matches.
rules = [
 ("fsync and fdatasync", r"do_fsync|__x64_sys_fsync|__x64_sys_fdatasync"),
 ("exec and the loader (execve, ld.so, page faults of a new image)", r"bprm_execve|__x64_sys_execve|_dl_|ld-linux"),
 ("mount view: mount, pivot_root, umount, mkdir/open on the view's tmpfs", r"__x64_sys_mount|__x64_sys_pivot_root|__x64_sys_umount|path_mount|do_mount|shmem_|tmpfs|__x64_sys_symlink"),
 ("namespaces made and torn down (unshare, netns, cleanup_net, put_mnt_ns)", r"__x64_sys_unshare|copy_net_ns|setup_net|cleanup_net|put_mnt_ns|free_mnt_ns|copy_namespaces|create_new_namespaces|__x64_sys_setns"),
 ("cgroups (pids, memory) made and removed", r"cgroup_mkdir|cgroup_rmdir|cgroup::|kernfs|css_"),
 ("landlock rules", r"landlock"),
 ("seccomp filter", r"seccomp|bpf_"),
 ("process start and exit (clone, exit_mmap, wait)", r"copy_process|kernel_clone|__x64_sys_clone|exit_mmap|do_exit|release_task|__x64_sys_wait4|__x64_sys_exit"),
 ("policy prep: readlink, statx, getdents, path walks", r"__x64_sys_readlink|__x64_sys_statx|__x64_sys_newfstatat|__x64_sys_getdents64|canonicalize|realpath|_starts_with|std::path::|view::"),
 ("page faults", r"exc_page_fault|do_user_addr_fault"),
 ("files: open, mkdir, rename, write, read, close", r"__x64_sys_openat|__x64_sys_mkdir|__x64_sys_rename|__x64_sys_write|__x64_sys_read|__x64_sys_close|__x64_sys_unlink|__x64_sys_rmdir|__x64_sys_pwrite|__x64_sys_lseek|ext4_"),
 ("network: loopback HTTP (tcp, epoll)", r"tcp_|__x64_sys_epoll|__x64_sys_connect|__x64_sys_accept|__x64_sys_sendto|__x64_sys_recvfrom|sock_|__x64_sys_socket|__x64_sys_shutdown"),
 ("scheduler, futex, signals", r"__schedule|futex|schedule|__x64_sys_rt_sig|signal"),
 ("json, serde, hashing, formatting (user)", r"serde|sha2|fmt::|json"),
 ("tokio/hyper runtime (user)", r"tokio|hyper|mio"),
]
rules = [(n, re.compile(p)) for n, p in rules]
counts = collections.Counter(); percomm = collections.Counter(); total = 0
stack = []; comm = None
def flush():
    global total
    if comm is None: return
    total += 1
    s = "\n".join(stack)
    for n, r in rules:
        if r.search(s):
            counts[n] += 1; break
    else:
        counts["other " + ("kernel" if stack and stack[0].endswith("kallsyms])") else "user")] += 1
    c = comm if comm in ("grep",) else ("bench" if comm in ("tokio-rt-worker","bench") else ("harness" if comm in ("harness","check-wait","sandbox-probe","stop-signals") else "other"))
    percomm[c] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); stack = []; comm = None; continue
    if not line.startswith((" ", "\t")):
        comm = line.split()[0]; continue
    stack.append(line.strip())
flush()
per = float(sys.argv[1]) if len(sys.argv) > 1 else 0
for n, c in counts.most_common():
    print(f"{100*c/total:5.1f}%  {per*c/total:5.2f} ms  {n}")
print("by process:", {k: f"{100*v/total:.1f}%" for k, v in percomm.most_common()})
