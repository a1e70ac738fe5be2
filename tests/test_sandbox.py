"""The sandbox contains misbehaving code: each dangerous test first checks that the limit it relies on is in force."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import resource
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from agentbalance.tasks import sandbox
from agentbalance.tasks.sandbox import SandboxLimits, SandboxResult, check_program, run_python

IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(
    not IS_ROOT, reason="only a root parent can drop the child to `nobody` (CI runs as root)"
)

HUMANEVAL_TEST = """
def check(candidate):
    assert candidate(1, 2) == 3
    assert candidate(-1, 1) == 0
"""
MBPP_TEST = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
PRINT_CWD = "import os\nprint(os.getcwd(), flush=True)\n"


def _uids_of_processes() -> list[int]:
    uids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError):
                uids.append(os.stat(f"/proc/{entry}").st_uid)
    return uids


def _processes_working_in(directory: str) -> list[int]:
    """Processes whose working directory is `directory` (every process of a run starts there)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.removesuffix(" (deleted)") == directory:
                found.append(int(entry))
    return found


def _eventually(condition, within_s: float = 3.0) -> bool:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _seen_inside(limits: SandboxLimits | None = None) -> dict:
    """The user and the limits the code would run under (read by running code that only reports them)."""
    code = (
        "import json, os, resource\n"
        "print(json.dumps({'uid': os.getuid(), 'nproc': resource.getrlimit(resource.RLIMIT_NPROC)[0],"
        " 'address_space': resource.getrlimit(resource.RLIMIT_AS)[0]}))\n"
    )
    result = run_python(code, limits or SandboxLimits())
    assert result.ok, result.stderr
    return json.loads(result.stdout)


def _disable_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run as on a machine where unshare fails (e.g. Docker's default seccomp profile): the documented fallback."""
    sandbox._sandbox_interpreter()  # find the interpreter with the real configuration first
    build = sandbox._bootstrap_config

    def no_unshare(*args: object) -> str:
        config = json.loads(build(*args))
        config["unshare"] = []
        return json.dumps(config)

    monkeypatch.setattr(sandbox, "_bootstrap_config", no_unshare)


@pytest.fixture
def without_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    _disable_namespaces(monkeypatch)


@pytest.fixture(params=["with namespaces", "without namespaces"])
def either_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Containment must hold both with the namespaces and in the fallback without them."""
    if request.param == "without namespaces":
        _disable_namespaces(monkeypatch)


@pytest.fixture
def started_groups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Process group ids of the runs started during the test (each run's bootstrap leads a new session)."""
    sandbox._sandbox_interpreter()
    groups: list[int] = []

    class RecordingPopen(subprocess.Popen):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            groups.append(self.pid)

    monkeypatch.setattr(sandbox.subprocess, "Popen", RecordingPopen)
    return groups


# 1. Scoring


def test_correct_humaneval_program_passes() -> None:
    assert check_program("def add(a, b):\n    return a + b\n", HUMANEVAL_TEST, "add")


def test_wrong_humaneval_program_fails() -> None:
    assert not check_program("def add(a, b):\n    return a - b\n", HUMANEVAL_TEST, "add")


def test_humaneval_program_without_the_entry_point_fails() -> None:
    assert not check_program("def add(a, b):\n    return a + b\n", HUMANEVAL_TEST, "missing_function")


def test_correct_mbpp_program_passes_its_asserts() -> None:
    assert check_program("def add(a, b):\n    return a + b\n", MBPP_TEST)


def test_wrong_mbpp_program_fails_its_asserts() -> None:
    assert not check_program("def add(a, b):\n    return a * b\n", MBPP_TEST)


def test_program_with_a_syntax_error_fails_in_both_styles() -> None:
    broken = "def add(a, b)\n    return a + b\n"
    assert not check_program(broken, HUMANEVAL_TEST, "add")
    assert not check_program(broken, MBPP_TEST)


def test_result_says_how_the_program_ended() -> None:
    assert run_python("print('hi')") == SandboxResult(0, "hi\n", "", False, run_python("").network_isolated)
    failed = run_python("raise ValueError('boom')")
    assert failed.returncode == 1 and not failed.ok and "ValueError: boom" in failed.stderr
    assert run_python("exit(3)").returncode == 3
    assert run_python("quit()").ok
    assert run_python("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)").returncode == -signal.SIGTERM


def test_stdin_reaches_the_program() -> None:
    assert run_python("print(input()[::-1])", stdin="olleh\n").stdout == "hello\n"


def test_code_cannot_see_this_process_modules() -> None:
    assert run_python("import sys\nprint('agentbalance' in sys.modules, 'pytest' in sys.modules)").stdout == (
        "False False\n"
    )


def test_limits_are_validated_when_built() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="max_processes"):
        SandboxLimits(max_processes=0)


def test_concurrent_runs_from_asyncio_threads_each_get_their_own_result() -> None:
    programs = [f"def add(a, b):\n    return a + b + {offset}\n" for offset in (0, 1) * 4]

    async def score_all() -> list[bool]:
        return await asyncio.gather(*(asyncio.to_thread(check_program, p, MBPP_TEST) for p in programs))

    assert asyncio.run(score_all()) == [True, False] * 4


# 2. Infinite loop


def test_infinite_loop_times_out_and_its_process_group_is_gone(either_mode: None, started_groups: list[int]) -> None:
    start = time.monotonic()
    result = run_python(PRINT_CWD + "while True:\n    pass\n", SandboxLimits(timeout_s=1))
    elapsed = time.monotonic() - start

    assert result.timed_out and result.returncode is None and not result.ok
    assert elapsed < 1 + 2.5
    for group in started_groups:
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)
    assert _eventually(lambda: not _processes_working_in(result.stdout.strip()))


def test_cpu_limit_ends_a_busy_loop_before_the_wall_clock() -> None:
    result = run_python("while True:\n    pass\n", SandboxLimits(timeout_s=10, cpu_s=1))
    assert not result.timed_out
    assert result.returncode in (-signal.SIGXCPU, -signal.SIGKILL)


def test_process_that_leaves_the_group_dies_with_the_run(either_mode: None) -> None:
    code = PRINT_CWD + "import time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
    result = run_python(code, SandboxLimits(timeout_s=5))
    assert result.ok
    assert _eventually(lambda: not _processes_working_in(result.stdout.strip()))


# 3. Fork bomb


@needs_root
def test_fork_bomb_fails_within_the_timeout_and_leaves_nothing(either_mode: None) -> None:
    limits = SandboxLimits(timeout_s=5)
    inside = _seen_inside(limits)
    assert inside["uid"] == 65534 and inside["nproc"] == limits.max_processes, "RLIMIT_NPROC not in force: not run"
    nobody_before = _uids_of_processes().count(65534)

    start = time.monotonic()
    result = run_python("import os\nwhile True:\n    os.fork()\n", limits)

    assert not result.ok
    assert time.monotonic() - start < limits.timeout_s + 2.5
    assert _eventually(lambda: _uids_of_processes().count(65534) <= nobody_before)
    assert subprocess.run([sys.executable, "-c", "pass"], timeout=30).returncode == 0


# 4. Memory


def test_ten_gigabyte_allocation_fails_quickly() -> None:
    assert _seen_inside()["address_space"] == 1024 * 2**20, "RLIMIT_AS not in force: the allocation is not tried"
    start = time.monotonic()
    result = run_python("x = bytearray(10 * 1024**3)\n")
    assert not result.ok and "MemoryError" in result.stderr
    assert time.monotonic() - start < 5


def test_file_size_limit_stops_a_big_write() -> None:
    result = run_python("open('big', 'wb').write(b'x' * 2 * 1024**2)\n", SandboxLimits(max_file_mb=1))
    assert not result.ok and "File too large" in result.stderr


# 5. Files of root


@needs_root
def test_file_private_to_root_cannot_be_read() -> None:
    secret = Path(pwd.getpwuid(0).pw_dir) / f"agentbalance-sandbox-secret-{uuid.uuid4().hex}"
    fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, b"sk-root-secret")
        os.close(fd)
        code = f"try:\n    print(open({str(secret)!r}).read())\nexcept PermissionError:\n    print('DENIED')\n"
        result = run_python(code)
    finally:
        secret.unlink()
    assert result.stdout == "DENIED\n" and result.ok


@needs_root
def test_root_home_cannot_be_listed() -> None:
    home = pwd.getpwuid(0).pw_dir
    if os.stat(home).st_mode & stat.S_IROTH:
        pytest.skip(f"{home} is world-readable on this machine")
    result = run_python(f"import os\ntry:\n    os.listdir({home!r})\nexcept PermissionError:\n    print('DENIED')\n")
    assert result.stdout == "DENIED\n"


@needs_root
def test_code_runs_as_nobody_without_groups() -> None:
    result = run_python("import os\nprint(os.getuid(), os.geteuid(), os.getgroups())")
    assert result.stdout == "65534 65534 []\n"


# 6. Environment


def test_parent_environment_variables_are_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTBALANCE_API_KEY", "sk-test-secret")
    result = run_python("import os\nprint(os.environ.get('AGENTBALANCE_API_KEY'))\nprint(sorted(os.environ))")
    assert result.stdout.splitlines() == [
        "None",
        str(sorted(["HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE", "TMPDIR"])),
    ]


@needs_root
def test_parent_process_environ_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTBALANCE_API_KEY", "sk-test-secret")
    code = (
        f"try:\n    print(open('/proc/{os.getpid()}/environ', 'rb').read())\n"
        "except PermissionError:\n    print('DENIED')\n"
        "except FileNotFoundError:\n    print('NOT VISIBLE')\n"  # the sandbox's own /proc has no host process
    )
    result = run_python(code)
    assert result.stdout in ("DENIED\n", "NOT VISIBLE\n") and "sk-test-secret" not in result.stderr


def test_host_processes_are_not_visible_in_a_pid_namespace() -> None:
    result = run_python("import os\nprint(sorted(int(entry) for entry in os.listdir('/proc') if entry.isdigit()))")
    if result.stdout.startswith("[") and os.getpid() in json.loads(result.stdout):
        pytest.skip("no pid and mount namespaces here: /proc shows the host's processes (documented fallback)")
    assert result.stdout == "[1, 2]\n"  # the namespace's init and the code


# 7. Network


def test_loopback_listener_of_the_host_is_unreachable_when_isolated() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # reachable from here
        code = (
            "import socket\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('CONNECTED')\n"
            "except OSError:\n    print('BLOCKED')\n"
        )
        result = run_python(code)
    if not result.network_isolated:
        pytest.skip("unshare(CLONE_NEWNET) is not available here: network isolation is the documented fallback")
    assert result.stdout == "BLOCKED\n"


@needs_root
def test_without_namespaces_the_run_reports_no_isolation_but_still_drops_privileges(without_namespaces: None) -> None:
    result = run_python("import os\nprint(os.getuid())")
    assert result.ok and not result.network_isolated and result.stdout == "65534\n"


# 8. Output


def test_huge_output_is_truncated_not_fatal() -> None:
    result = run_python("import sys\nsys.stdout.write('x' * 50_000_000)\n", SandboxLimits(max_output_bytes=1000))
    assert result.ok and result.stdout == "x" * 1000
    assert "stdout truncated to 1000 bytes" in result.stderr


def test_endless_output_is_capped_and_cut_at_the_deadline() -> None:
    result = run_python("while True:\n    print('x' * 1000)\n", SandboxLimits(timeout_s=1, max_output_bytes=5000))
    assert result.timed_out and len(result.stdout) == 5000


# 9. Work dir


def test_work_dir_is_removed_after_a_run() -> None:
    code = PRINT_CWD + "os.mkdir('locked')\nopen('locked/file', 'w').write('x')\nos.chmod('locked', 0)\n"
    result = run_python(code)
    workdir = Path(result.stdout.strip())
    assert result.ok and workdir.name.startswith("agentbalance-sandbox-")
    assert not workdir.exists()


def test_work_dir_is_removed_after_a_timeout(either_mode: None) -> None:
    result = run_python(PRINT_CWD + "open('file', 'w').write('x')\nwhile True:\n    pass\n", SandboxLimits(timeout_s=1))
    workdir = Path(result.stdout.strip())
    assert result.timed_out and workdir.name.startswith("agentbalance-sandbox-")
    assert not workdir.exists()


def test_sandbox_interpreter_is_usable_by_the_sandbox_user() -> None:
    interpreter = sandbox._sandbox_interpreter()
    assert run_python("import hashlib, json, math, re\nprint(hashlib.sha256(b'').hexdigest()[:8])").stdout == (
        "e3b0c442\n"
    )
    assert Path(interpreter).is_file()


def test_limits_apply_to_the_child_only() -> None:
    ours = [resource.getrlimit(limit) for limit in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_CPU)]
    run_python("pass", SandboxLimits(memory_mb=256, max_processes=4, cpu_s=1))
    assert [
        resource.getrlimit(limit) for limit in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_CPU)
    ] == ours
