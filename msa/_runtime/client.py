"""The client side of msa's warm server (:mod:`msa._runtime.server`, which says why and how):
where this install's server is, running a command on it, and starting one after a run that
found none. Kept apart from the server so that ``msa``'s own start imports only this.
"""
from __future__ import annotations

import os
import signal
import struct
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket

#: ``MSA_SERVER``: ``off`` or ``0`` runs every command in its own process.
SERVER_ENV = "MSA_SERVER"
OFF = ("0", "off", "no", "false")
#: How long a client waits for a server's answer (it answers once its imports are done,
#: ~1 s after it starts) before running the command itself.
ANSWER_SECONDS = 10.0
#: The commands a server runs; ``--version`` and ``--help`` need no warm process.
SERVED = ("align", "add", "merge", "tree", "score")
#: Options that start or join a Dask cluster: those runs stay in their own process.
CLUSTER_OPTIONS = ("--workers", "--gpus", "--scheduler")
#: Environment variables read when a process starts (Numba's and OpenMP's threads, the
#: interpreter's settings, CuPy's and CUDA's, the locale of the standard streams): a server
#: serves only clients whose values match its own.
KEY_PREFIXES = ("MSA_", "NUMBA_", "OMP_", "GOMP_", "KMP_", "MKL_", "OPENBLAS_", "PYTHON", "CUPY_", "CUDA_", "LD_",
                "LANG", "LC_")
#: The longest socket path AF_UNIX takes (108 bytes with its terminating zero on Linux).
MAX_PATH = 107
#: A request's length, ahead of it.
LENGTH = struct.Struct("!I")


class _Client:
    """What the client found: where its server would be, and whether to start one."""

    path: str | None = None
    start: bool = False
    environ: dict[str, str] | None = None


_client = _Client()


def _off(environ: os._Environ[str] | dict[str, str]) -> bool:
    return environ.get(SERVER_ENV, "").strip().lower() in OFF


def address(argv: list[str]) -> str | None:
    """The socket of the server for this install and environment, or None where a server is
    not used for ``argv`` (``MSA_SERVER=off``, not Linux, a command that needs no warm
    process, a cluster run, a folder that is not private, a path too long)."""
    if _off(os.environ) or not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return None
    if len(argv) < 2 or argv[1] not in SERVED:
        return None
    if any(a == o or a.startswith(o + "=") for a in argv[2:] for o in CLUSTER_OPTIONS):
        return None
    folder = _folder()
    if folder is None:
        return None
    path = os.path.join(folder, _key() + ".sock")
    return path if len(path.encode()) <= MAX_PATH else None


def _folder() -> str | None:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        folder = os.path.join(runtime, "msa")
    else:
        folder = os.path.join(os.path.abspath(os.environ.get("TMPDIR") or "/tmp"), f"msa-{os.getuid()}")
    return folder if private(folder) or not os.path.lexists(folder) else None


def private(folder: str) -> bool:
    """Whether ``folder`` is a directory of this user's that no one else may enter."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    import stat

    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def _key() -> str:
    import json
    import zlib

    import msa

    try:
        cpus = sorted(os.sched_getaffinity(0))
    except OSError:
        cpus = []
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith(KEY_PREFIXES) and k != SERVER_ENV)
    parts = [os.getuid(), os.path.realpath(sys.executable), sys.version, os.path.dirname(msa.__file__), cpus, env]
    data = json.dumps(parts).encode()  # three checksums (no OpenSSL to load): 96 bits
    return f"{zlib.crc32(data):08x}{zlib.crc32(data[::-1]):08x}{zlib.adler32(data):08x}"


def client(argv: list[str]) -> int | None:
    """Run ``argv`` on the server; its exit status, or None where it must run in this process
    (no server, one that is stale or does not answer, a standard stream closed). Where no
    server answered, :func:`start_server` starts one after the run. A signal that comes
    before the command's process is known waits for it and is passed on, so the command
    cleans up as it would in this process, and the status it exits with is this one's."""
    path = address(argv)
    if path is None:
        return None
    import socket

    _client.path, _client.environ = path, dict(os.environ)
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
        cwd = os.getcwd()
    except OSError:
        return None
    relay = _Relay()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(ANSWER_SECONDS)
    try:
        sock.connect(path)
        status = _served(sock, argv, cwd, relay)
    except (FileNotFoundError, ConnectionRefusedError):
        _client.start = True
        status = None
    except OSError:  # timed out, or the server went away before the command started
        status = None
    finally:
        sock.close()
        relay.restore()
    if status is None and relay.pending:  # nothing started: stop as a run in this process does
        os.write(2, b"msa: interrupted\n")
        os._exit(128 + relay.pending[0])
    return status


def _served(sock: socket.socket, argv: list[str], cwd: str, relay: _Relay) -> int | None:
    import json
    import socket

    reader = sock.makefile("rb")
    uid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
    if uid != os.getuid():
        return None
    answer = reader.readline()
    if answer != b"ready\n":
        _client.start = answer == b"stale\n"
        return None
    umask = os.umask(0)
    os.umask(umask)
    request = json.dumps({"argv": argv, "cwd": cwd, "env": dict(os.environ), "umask": umask}).encode()
    socket.send_fds(sock, [LENGTH.pack(len(request))], [0, 1, 2])
    sock.sendall(request)
    words = reader.readline().split()
    if len(words) != 2 or words[0] != b"pid":
        return None
    pid = int(words[1])
    sock.settimeout(None)
    relay.to(pid)
    try:  # from here the command runs: it is never run again in this process
        words = reader.readline().split()
    except OSError:
        words = []
    if len(words) == 2 and words[0] == b"exit":
        return int(words[1])
    if len(words) == 2 and words[0] == b"signal":  # the command was killed: so is the client
        signum = int(words[1])
        relay.restore()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    try:
        os.kill(pid, signal.SIGTERM)
    except OSError:
        pass
    os.write(2, b"msa: error: the msa server ended during the run (MSA_SERVER=off runs msa without it)\n")
    return 1


#: The signals the client passes on to the command's process.
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Relay:
    """SIGINT, SIGTERM and SIGHUP passed on to the command's process while the client waits;
    those that come before its pid is known wait for it (:attr:`pending`)."""

    def __init__(self) -> None:
        self._pid: int | None = None
        self.pending: list[int] = []
        self._previous = {s: signal.signal(s, self._note) for s in RELAYED}

    def _note(self, signum: int, frame: object) -> None:
        if self._pid is None:
            self.pending.append(signum)
        else:
            self._send(signum)

    def _send(self, signum: int) -> None:
        try:
            os.kill(self._pid, signum)
        except OSError:
            pass

    def to(self, pid: int) -> None:
        """The command's process is ``pid``: pass on what came and what comes."""
        self._pid = pid
        for signum in self.pending:
            self._send(signum)

    def restore(self) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)
        self._previous = {}


def start_server(status: int) -> None:
    """After a run in this process that found no server (and was not stopped by a signal),
    start one for the next run: detached, in its own session, its standard streams on
    /dev/null, so nothing waits for it."""
    if not _client.start or _client.path is None or status > 128:
        return
    import subprocess

    import msa

    root = os.path.dirname(os.path.dirname(msa.__file__))
    code = f"import sys; sys.path.insert(0, {root!r}); from msa.__main__ import serve; serve({_client.path!r})"
    flags = subprocess._args_from_interpreter_flags()  # the client's -O, -X ...: the server's too
    devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        os.posix_spawn(sys.executable, [sys.executable, *flags, "-c", code], _client.environ or os.environ,
                       file_actions=devnull, setsid=True)
    except OSError:
        pass
