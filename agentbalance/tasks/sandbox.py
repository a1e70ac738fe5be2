"""The one place model-written code runs (HumanEval/MBPP pass@1): a fresh, limited, unprivileged interpreter.

It must never run model code in this process, and never pass this process's environment to the child.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import pwd
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agentbalance.errors import AgentBalanceError

log = logging.getLogger(__name__)

# How one run is isolated (read this before changing anything)
# ------------------------------------------------------------
# parent (this process): writes main.py into a fresh work dir (owned by `nobody` when we are root), then fork-execs a
#   *bootstrap* (`python -I -S -c _BOOTSTRAP`) in a new session, with a minimal environment and the work dir as cwd.
#   There is no preexec_fn (not safe with threads in the parent): the parent only fork-execs, so run_python may be
#   called from many threads at once (e.g. asyncio.to_thread). The privileged steps happen in the bootstrap, a fresh
#   single-threaded interpreter, where fork is safe.
# bootstrap (still our uid): unshare(CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNS), with CLONE_NEWUSER
#   when not root, fewer namespaces when that fails; reports which it got on a status pipe; becomes a child subreaper;
#   forks a child that leads a new process group:
#   init (only when the pid namespace exists; pid 1 there): mounts a /proc that shows only the namespace (no host
#     process or command line is visible), forks the runner, and passes the runner's exit status back. When init
#     exits, the kernel kills every process left in the namespace, even ones that left the process group.
#   runner: sets the rlimits, drops to `nobody` when we are root (setgroups, setgid, setuid), asks for SIGKILL if
#     its parent dies, and execs the sandbox interpreter (`-I -S -B -X utf8`, see _find_interpreter) via _RUNNER.
#   When that child exits, or at the deadline (the parent then sends the bootstrap SIGTERM), the bootstrap SIGKILLs
#   the child's whole group and reaps it; as a subreaper it then kills and reaps every orphan of the run, even one that
#   left the group, so no process and no zombie is left (zombies would hold the process budget of the next run).
#   It then ends the way the runner ended (same exit code or same signal).
# parent: reads stdout and stderr, keeping at most max_output_bytes of each, until both are closed (every process of
#   the run has exited) or the deadline; SIGKILLs the bootstrap's group, reaps it, and deletes the work dir.
# Every process group is killed before its leader is reaped, so its id cannot have been reused by another process.
#
# Fallbacks, each reported rather than hidden: without namespaces (no privileges, no user namespaces, or a seccomp
# profile such as Docker's default) the run has network_isolated=False, and the code sees the host's processes in
# /proc (not their environments); rlimits, the stripped environment, the unprivileged user (as root) and the subreaper
# still contain it. When not root there is no other user to drop to: the code can read what this user can read
# (and, without a pid namespace, signal this user's processes).
# Not isolated in any mode: the filesystem view (world-readable files; /tmp and /dev/shm are writable, RLIMIT_FSIZE
# bounds each file, not their number) and unix sockets with permissive modes. RLIMIT_NPROC counts every process of
# `nobody` on the machine, so concurrent runs that spawn processes share one budget of max_processes.

_NOBODY = 65534
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_READ_CHUNK = 1 << 16
_KILL_GRACE_S = 2.0
_MEBIBYTE = 1 << 20

# Runs in the bootstrap interpreter (a fresh `python -I -S`, single-threaded, so fork is safe). argv[1] is the JSON
# config built by _bootstrap_config.
_BOOTSTRAP = r"""
import ctypes, json, os, resource, signal, sys

config = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

namespaces = 0
for flags in config["unshare"]:
    if libc.unshare(flags) == 0:
        namespaces = flags
        break
os.write(config["status_fd"], str(namespaces).encode())
os.close(config["status_fd"])


def die_with_parent():
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG; set*id clears it, so it is set again after them


def end_like(status):
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            signal.signal(number, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {number})
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def kill_group(leader):
    try:
        os.killpg(leader, signal.SIGKILL)
    except ProcessLookupError:
        pass


def children():
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as listing:
            return [int(pid) for pid in listing.read().split()]
    except FileNotFoundError:  # a kernel without CONFIG_PROC_CHILDREN
        found = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
        return found


def sweep():
    # As a subreaper we inherit every orphan of the run, even one that left the group: kill and reap them all
    # (only our own unreaped children are signalled). With a pid namespace the kernel has already done this.
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

# The child leads a new process group, which the bootstrap SIGKILLs when the parent sends it SIGTERM (the deadline)
# and when the child has exited (whatever it left running goes with it). The group is only ever killed before the
# child is reaped (waitid with WNOWAIT), so its id cannot belong to anyone else then. Both signals are blocked before
# the fork and taken with sigwaitinfo, so none is lost and no handler runs at an awkward moment.
watched = {signal.SIGCHLD, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, watched)
status_read, status_write = os.pipe()
child = os.fork()
if child:
    os.close(status_write)
    try:
        os.setpgid(child, child)
    except OSError:
        pass  # the child already did it and exec'd
    while True:
        if signal.sigwaitinfo(watched).si_signo == signal.SIGTERM:
            kill_group(child)
        elif os.waitid(os.P_PID, child, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            kill_group(child)
            break
    _, status = os.waitpid(child, 0)
    sweep()
    relayed = os.read(status_read, 32)  # init's report of the runner's status; empty without a pid namespace
    end_like(int(relayed) if relayed else status)

try:
    os.setpgid(0, 0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
    for number in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(number, signal.SIG_DFL)  # as a fresh process has them; the interpreter sets its own
    os.close(status_read)
    die_with_parent()
    if namespaces & config["clone_newpid"]:
        # A /proc of the new pid namespace only (no host process, no command line of ours), mounted after making
        # every mount private so that nothing propagates back to the host; without that, no mount is made at all.
        if namespaces & config["clone_newns"] and libc.mount(None, b"/", None, 0x44000, None) == 0:
            libc.mount(b"proc", b"/proc", b"proc", 0xE, None)  # 0x44000: MS_REC|MS_PRIVATE; 0xE: nosuid,nodev,noexec
        runner = os.fork()
        if runner:
            _, status = os.waitpid(runner, 0)
            os.write(status_write, str(status).encode())
            os._exit(0)
        die_with_parent()
    os.close(status_write)
    for limit, soft, hard in config["rlimits"]:
        _, current_hard = resource.getrlimit(limit)
        if current_hard != resource.RLIM_INFINITY:
            hard = min(hard, current_hard)
            soft = min(soft, hard)
        resource.setrlimit(limit, (soft, hard))
    if config["uid"] is not None:
        os.setgroups([])
        os.setgid(config["gid"])
        os.setuid(config["uid"])
        die_with_parent()
    os.execve(config["interpreter"], config["argv"], os.environ)
except BaseException as error:
    os.write(2, f"sandbox: could not start {config['interpreter']}: {error!r}\n".encode())
    os._exit(126)
"""

# Runs in the sandbox interpreter before the code: -S skips `site`, so exit() and quit() are restored by hand; the
# code then runs as __main__ with tracebacks naming main.py. No name is left behind in the code's namespace.
_RUNNER = (
    "import builtins as _b, _sitebuiltins as _s\n"
    "_b.exit, _b.quit = _s.Quitter('exit', 'Ctrl-D (i.e. EOF)'), _s.Quitter('quit', 'Ctrl-D (i.e. EOF)')\n"
    "del _b, _s\n"
    "__import__('sys').argv[:] = ['main.py']\n"
    "__file__ = 'main.py'\n"
    "exec(compile(__import__('io').open_code('main.py').read(), 'main.py', 'exec'))\n"
)

# What the sandbox interpreter must import to be usable for HumanEval/MBPP (hashlib checks lib-dynload and OpenSSL).
_PROBE = (
    "import collections, decimal, fractions, functools, hashlib, heapq, itertools, json, math, re, string, sys\n"
    "print(sys.version_info[0], sys.version_info[1])\n"
)


@dataclass(frozen=True)
class SandboxLimits:
    """What one run may use. Sizes are in MiB; every limit applies to the code's process and its children."""

    timeout_s: float = 10.0  # wall clock; the whole process group is killed at the deadline
    cpu_s: int = 10  # RLIMIT_CPU (SIGXCPU at cpu_s, SIGKILL one second later)
    memory_mb: int = 1024  # RLIMIT_AS
    max_processes: int = 32  # RLIMIT_NPROC (enforced because the child runs as an unprivileged user)
    max_output_bytes: int = 1_000_000  # per stream; the rest is read and dropped
    max_file_mb: int = 16  # RLIMIT_FSIZE

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"SandboxLimits.timeout_s must be > 0, got {self.timeout_s!r}")
        for name in ("cpu_s", "memory_mb", "max_processes", "max_file_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"SandboxLimits.{name} must be >= 1, got {getattr(self, name)!r}")
        if self.max_output_bytes < 0:
            raise ValueError(f"SandboxLimits.max_output_bytes must be >= 0, got {self.max_output_bytes!r}")


@dataclass(frozen=True)
class SandboxResult:
    """How a run ended. returncode is None when the run timed out, negative when a signal ended it."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    network_isolated: bool

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_python(code: str, limits: SandboxLimits = SandboxLimits(), stdin: str = "") -> SandboxResult:
    """Run `code` as a fresh Python program in the sandbox; every outcome of the code is a SandboxResult.

    Raises AgentBalanceError only when no interpreter on this machine can run as the sandbox user.
    """
    return _run(code, limits, stdin, _sandbox_interpreter())


def check_program(
    program: str,
    test: str,
    entry_point: str | None = None,
    limits: SandboxLimits = SandboxLimits(),
) -> bool:
    """Whether `program` passes `test`: HumanEval style (`test` defines check(candidate), called on `entry_point`)
    or, with no entry point, MBPP style (`test` is assert lines)."""
    source = f"{program}\n\n{test}"
    if entry_point is not None:
        source += f"\n\ncheck({entry_point})\n"
    return run_python(source, limits).ok


class _Capture:
    """One output stream of the child: the first `limit` bytes are kept, the rest is read and counted."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.fd = stream.fileno()
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0
        self.closed = False

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _drain(captures: list[_Capture], deadline: float) -> bool:
    """Read every stream until it is closed (True) or the deadline passes (False)."""
    by_fd = {capture.fd: capture for capture in captures if not capture.closed}
    with selectors.DefaultSelector() as selector:
        for fd in by_fd:
            selector.register(fd, selectors.EVENT_READ)
        while by_fd:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _READ_CHUNK)
                if chunk:
                    by_fd[key.fd].add(chunk)
                else:
                    by_fd.pop(key.fd).closed = True
                    selector.unregister(key.fd)
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def _unprivileged_ids() -> tuple[int, int] | None:
    """(uid, gid) of `nobody` when we are root (the run drops to it), else None (there is nobody to drop to)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return _NOBODY, _NOBODY
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        return _NOBODY, _NOBODY
    return entry.pw_uid, entry.pw_gid


def _child_env(workdir: Path) -> dict[str, str]:
    """The whole environment of the child: nothing of ours (no keys, no PYTHONPATH) reaches it."""
    home = str(workdir)
    return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "TMPDIR": home, "PYTHONDONTWRITEBYTECODE": "1"}


def _bootstrap_config(interpreter: str, limits: SandboxLimits, ids: tuple[int, int] | None, status_fd: int) -> str:
    namespaces = _CLONE_NEWNET | _CLONE_NEWPID | _CLONE_NEWIPC
    attempts = [namespaces | _CLONE_NEWNS, namespaces, _CLONE_NEWNET, _CLONE_NEWPID | _CLONE_NEWIPC]
    if ids is None:
        attempts = [_CLONE_NEWUSER | flags for flags in attempts]
    rlimits = [
        (resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 1),
        (resource.RLIMIT_AS, limits.memory_mb * _MEBIBYTE, limits.memory_mb * _MEBIBYTE),
        (resource.RLIMIT_NPROC, limits.max_processes, limits.max_processes),
        (resource.RLIMIT_FSIZE, limits.max_file_mb * _MEBIBYTE, limits.max_file_mb * _MEBIBYTE),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    return json.dumps(
        {
            "interpreter": interpreter,
            "argv": [interpreter, "-I", "-S", "-B", "-X", "utf8", "-c", _RUNNER],
            "uid": None if ids is None else ids[0],
            "gid": None if ids is None else ids[1],
            "unshare": attempts,
            "clone_newpid": _CLONE_NEWPID,
            "clone_newns": _CLONE_NEWNS,
            "rlimits": rlimits,
            "status_fd": status_fd,
        }
    )


def _run(code: str, limits: SandboxLimits, stdin: str, interpreter: str) -> SandboxResult:
    ids = _unprivileged_ids()
    workdir = Path(tempfile.mkdtemp(prefix="agentbalance-sandbox-"))
    try:
        main = workdir / "main.py"
        main.write_bytes(code.encode("utf-8", errors="surrogatepass"))
        if ids is not None:
            os.chown(main, *ids)
            os.chown(workdir, *ids)
        with tempfile.TemporaryFile() as stdin_file:
            stdin_file.write(stdin.encode("utf-8", errors="surrogatepass"))
            stdin_file.seek(0)
            return _supervise(workdir, stdin_file, limits, interpreter, ids)
    finally:
        _remove_tree(workdir)


def _supervise(
    workdir: Path, stdin_file: IO[bytes], limits: SandboxLimits, interpreter: str, ids: tuple[int, int] | None
) -> SandboxResult:
    status_read, status_write = os.pipe()
    try:
        process = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-B",
                "-c",
                _BOOTSTRAP,
                _bootstrap_config(interpreter, limits, ids, status_write),
            ],
            stdin=stdin_file,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=_child_env(workdir),
            start_new_session=True,
            pass_fds=(status_write,),
        )
    except BaseException:
        os.close(status_read)
        raise
    finally:
        os.close(status_write)
    assert process.stdout is not None and process.stderr is not None
    captures = [_Capture(process.stdout, limits.max_output_bytes), _Capture(process.stderr, limits.max_output_bytes)]
    finished = False
    try:
        finished = _drain(captures, time.monotonic() + limits.timeout_s)
    finally:
        if not finished:
            # The bootstrap SIGKILLs the code's process group (and so its pid namespace), reaps it and exits;
            # the pipes close as the killed processes go.
            os.kill(process.pid, signal.SIGTERM)
            _drain(captures, time.monotonic() + _KILL_GRACE_S)
        # Then the bootstrap's own group, before it is reaped: while unreaped, its group id is no one else's.
        _kill_group(process.pid)
        process.wait()
        process.stdout.close()
        process.stderr.close()
        namespaces = os.read(status_read, 32)
        os.close(status_read)
    stdout, stderr = captures[0].text(), captures[1].text()
    for name, capture in (("stdout", captures[0]), ("stderr", captures[1])):
        if capture.dropped:
            stderr += f"\n[sandbox: {name} truncated to {capture.limit} bytes; {capture.dropped} bytes dropped]\n"
    return SandboxResult(
        returncode=process.returncode if finished else None,
        stdout=stdout,
        stderr=stderr,
        timed_out=not finished,
        network_isolated=bool(int(namespaces or b"0") & _CLONE_NEWNET),
    )


def _remove_tree(path: Path) -> None:
    """Delete the work dir whatever the code left in it. Symlinks are removed, never followed."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except OSError:
        # Only without root can the code's own files (same user) block us: make its directories ours again.
        if not path.is_symlink():
            path.chmod(0o700)
        for root, dirs, _ in os.walk(path):
            for name in dirs:
                directory = Path(root, name)
                if not directory.is_symlink():
                    directory.chmod(0o700)
        shutil.rmtree(path, ignore_errors=True)
    if path.exists():
        log.warning("sandbox work dir %s could not be removed", path)


_INTERPRETER_LOCK = threading.Lock()


def _sandbox_interpreter() -> str:
    with _INTERPRETER_LOCK:
        return _find_interpreter()


@functools.cache
def _find_interpreter() -> str:
    """The first interpreter that runs the stdlib probe inside the sandbox, as the sandbox user.

    As root the child is `nobody`, which cannot execute an interpreter under a private home (a pyenv or venv python
    under /root, mode 0700): the base interpreter, then the system's python3, are tried next. All run with -I -S, so
    only the stdlib is importable (HumanEval and MBPP need nothing else); a version other than ours is logged.
    """
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable, getattr(sys, "_base_executable", ""), os.path.realpath(sys.executable)]
    candidates += [shutil.which(name, path="/usr/local/bin:/usr/bin:/bin") or "" for name in (version, "python3")]
    probe_limits = SandboxLimits(timeout_s=30.0)
    failures = []
    for candidate in dict.fromkeys(path for path in candidates if path):
        result = _run(_PROBE, probe_limits, "", candidate)
        if result.ok:
            found = "python" + ".".join(result.stdout.split())
            if found != version:
                log.warning("sandbox runs %s (%s) while this process runs %s", candidate, found, version)
            return candidate
        failures.append(f"{candidate}: {result.stderr.strip()[-300:] or f'exit status {result.returncode}'}")
    raise AgentBalanceError(
        "no Python interpreter can run model code in the sandbox"
        + (" as the unprivileged user nobody" if _unprivileged_ids() else "")
        + ":\n"
        + "\n".join(failures)
    )
