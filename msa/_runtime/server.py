"""A warm msa kept between runs, as Mercurial's ``chg`` keeps a warm ``hg``.

A run of a small family is mostly start-up: the interpreter, NumPy, Numba and CuPy (0.45 s of
a CPU run, 0.7 s of a GPU run on the device host, docs/start-up.md), while FAMSA aligns most
10^3 families in 0.3-0.6 s. A per-user server holds those modules imported and msa's
compiled functions loaded; ``msa`` connects to it, and the server runs the command in a
forked process that takes the client's arguments, working directory, environment, umask and
standard streams (passed as descriptors), so the command sees what it would see in the
client's own process and writes the same bytes. The client relays SIGINT, SIGTERM and SIGHUP
to it and exits with its status.

* Where there is no server, the command runs in the client's process as always, and once it
  has ended (not stopped by a signal) a server is started for the next run, detached (its own
  session, standard streams on /dev/null), so no caller waits for it. It leaves after
  :data:`IDLE_SECONDS` without a run (``MSA_SERVER_IDLE``), and at once if msa's or its
  libraries' files change (an upgrade, an edit of a checkout): the run that finds it stale
  runs in its own process.
* One server per install and per environment that shapes a process at its start: the socket's
  name hashes the interpreter, msa's folder, the CPU affinity and every variable
  :data:`KEY_PREFIXES` names (Numba's and OpenMP's threads, Python's and CuPy's settings...),
  so a run with other such settings gets a server of its own. The socket lives in
  ``$XDG_RUNTIME_DIR/msa`` (else ``$TMPDIR/msa-UID``), a folder only its user can enter, and
  the client checks the server's user (``SO_PEERCRED``).
* ``MSA_SERVER=off`` (or ``0``) runs every command in its own process and starts no server.
  Runs on a Dask cluster (``--workers``, ``--gpus``, ``--scheduler``) always do.
* Two forks a run: the server forks a watcher, the watcher forks the command. GNU OpenMP
  refuses to run a parallel region in a direct child of a process that loaded Numba's
  OpenMP layer, and the grandchild is not one (checked in the tests); the server itself never
  runs a parallel region nor makes a CUDA context, so the command starts both afresh. The
  watcher reports the command's pid and status to the client and ends the command if the
  client goes away.
"""
from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, Any

from msa._runtime.client import ANSWER_SECONDS, LENGTH, private

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

#: Longest a spare's command waits for its GPU warm-up before running a request that came during it.
WARM_WAIT_SECONDS = 30.0
#: A server leaves after this many seconds without a run (``MSA_SERVER_IDLE`` overrides).
IDLE_SECONDS = 600.0
IDLE_ENV = "MSA_SERVER_IDLE"


def serve(path: str, command: Callable[[], int]) -> None:
    """The server's process: take the lock of ``path`` (else another server has it: leave),
    listen, import and load everything a run uses, then fork a watcher per client until idle;
    each client's command runs ``command`` (``msa.__main__``'s run of ``sys.argv``, returning
    its exit status once the streams are flushed)."""
    import fcntl
    import socket

    folder = os.path.dirname(path)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:  # no folder can be made (a read-only /tmp): no server
        return
    if not private(folder):
        return
    os.chdir("/")  # not the first client's folder: the server would keep it busy (an unmount, a removal)
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.bind(path)
    listener.listen(64)
    ours = os.stat(path).st_ino
    signal.signal(signal.SIGTERM, _leave)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _warm()
        stamp = _stamp()
        _loop(listener, lock, stamp, _idle_seconds(), command)
    except SystemExit:
        pass
    finally:
        try:
            if os.stat(path).st_ino == ours:
                os.unlink(path)
        except OSError:
            pass
        listener.close()
        os.close(lock)


def _idle_seconds() -> float:
    try:
        return max(0.0, float(os.environ.get(IDLE_ENV, IDLE_SECONDS)))
    except ValueError:
        return IDLE_SECONDS


def _leave(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _warm() -> None:
    """Import what the commands import and load msa's compiled functions (no parallel region
    runs, no CUDA context is made), then freeze the collector so the commands' processes
    neither scan nor copy these objects."""
    import gc
    import importlib
    import pkgutil
    import threading

    import msa
    from msa._runtime.bytecode import keep_bytecode
    from msa._runtime.startup import _ProbeBlock, _skip_numba_extensions, import_pipeline

    keep_bytecode()
    block = _ProbeBlock()
    try:
        import_pipeline()
    finally:
        block.release()
    _skip_numba_extensions()
    skip = ("msa.testing", "msa._runtime.precompile", "msa.run.dask", "msa._runtime.server", "msa._runtime.client")
    try:
        import cupy  # noqa: F401
    except Exception:
        skip += ("msa.backends.cuda",)
    for module in pkgutil.walk_packages(msa.__path__, "msa."):
        if not module.name.startswith(skip):
            try:
                importlib.import_module(module.name)
            except Exception:
                pass
    from numba.np.ufunc.parallel import _launch_threads

    from msa.jit import DISPATCHERS, preload

    _launch_threads()  # Numba's threading layer, as loading a shipped parallel function loads it
    preload(DISPATCHERS)
    if threading.active_count() != 1 or "distributed" in sys.modules:
        raise SystemExit(0)  # a fork would copy another thread's locks, or Dask's state
    gc.collect()
    gc.freeze()


def _stamp(package: str | None = None) -> list[tuple[str, int, int]]:
    """The size and time of every file of msa (or of ``package``, a folder) and of each
    library folder a run imports: any change (an upgrade, an edit) makes this server stale."""
    import msa

    files = []
    for root, dirs, names in os.walk(package or os.path.dirname(msa.__file__)):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [os.path.join(root, n) for n in names]
    for name in ("numpy", "numba", "llvmlite", "cupy", "typer", "click", "rich"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            files.append(os.path.dirname(module.__file__))
    stamp = []
    for f in sorted(files):
        try:
            info = os.stat(f)
        except OSError:
            continue
        stamp.append((f, info.st_size, info.st_mtime_ns))
    return stamp


def _loop(
    listener: socket.socket, lock: int, stamp: list[tuple[str, int, int]], idle: float, command: Callable[[], int]
) -> None:
    import selectors
    import time

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    watchers: dict[int, int] = {}  # pidfd -> pid
    inherited = [lock]  # what a watcher closes: the server's own descriptors

    def fork(child: Callable[[], None]) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                selector.close()
                listener.close()
                for fd in [*inherited, *watchers]:
                    os.close(fd)
                child()
            finally:
                os._exit(0)
        return pid

    spare = _Spare(fork, command)
    inherited.append(spare.fileno())
    deadline = time.monotonic() + idle
    while True:
        timeout = None if watchers else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            return
        for key, _ in selector.select(timeout):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                if _stamp() != stamp:
                    _say(conn, b"stale\n")
                    conn.close()
                    return
                pid = spare.hand(conn)
                if pid is None:  # the spare is gone: a watcher of its own for this client
                    spare.end()
                    pid = fork(lambda: _watch(conn, _forked(conn, command)))
                conn.close()
                inherited.remove(spare.fileno())
                spare.close()
                spare = _Spare(fork, command)
                inherited.append(spare.fileno())
                pidfd = os.pidfd_open(pid)
                watchers[pidfd] = pid
                selector.register(pidfd, selectors.EVENT_READ)
            else:
                pidfd = key.fd
                selector.unregister(pidfd)
                os.waitpid(watchers.pop(pidfd), 0)
                os.close(pidfd)
            deadline = time.monotonic() + idle


class _Spare:
    """The next client's watcher, forked ahead with its command's process, which meanwhile
    makes its CUDA context and loads the kernels (:func:`_warm_gpu`): a GPU run served by it
    starts as a CPU run does. The server hands it the client's connection; closing our end
    (the server leaves) ends both."""

    def __init__(self, fork: Callable[[Callable[[], None]], int], command: Callable[[], int]) -> None:
        import socket

        self._ours, theirs = socket.socketpair()

        def watcher() -> None:
            self._ours.close()
            _spare_watcher(theirs, command)

        self.pid = fork(watcher)
        theirs.close()

    def fileno(self) -> int:
        return self._ours.fileno()

    def hand(self, conn: socket.socket) -> int | None:
        """Give the spare ``conn``; its pid, or None where it is gone."""
        import socket

        try:
            socket.send_fds(self._ours, [b"c"], [conn.fileno()])
        except OSError:
            return None
        return self.pid

    def close(self) -> None:
        self._ours.close()

    def end(self) -> None:
        """The spare failed: end and reap it."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)


def _spare_watcher(server: socket.socket, command: Callable[[], int]) -> None:
    """A spare watcher: fork the command's process (it warms up, then waits for its request),
    wait for a client's connection from the server, then watch as :func:`_watch` does."""
    import socket

    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        try:
            server.close()
            ours.close()
            _spare_command(theirs, command)
        finally:
            os._exit(1)
    theirs.close()
    try:
        _, fds, _, _ = socket.recv_fds(server, 1, 1)
    except OSError:
        fds = []
    server.close()
    if not fds:  # the server left: so does the spare command (its request channel closes)
        ours.close()
        os.waitpid(pid, 0)
        return

    def start(request: bytes, streams: list[int]) -> int:
        ours.sendall(LENGTH.pack(len(request)) + request)
        socket.send_fds(ours, [b"f"], streams)
        return pid

    _watch(socket.socket(fileno=fds[0]), start)


def _spare_command(channel: socket.socket, command: Callable[[], int]) -> None:
    """A spare command's process: warm up, then run the request that comes (never returns)."""
    import json
    import socket
    import threading

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    # On a thread, while the request is awaited. A request that comes during the warm-up waits
    # for its end: a fresh server's first run, started while its spare made the context and
    # loaded the kernels on this thread, died of a segmentation fault (session 26, H200; the two
    # threads starting CUDA at once are the suspected cause, docs/start-up.md).
    warm = threading.Thread(target=_warm_gpu, name="msa-spare-gpu", daemon=True)
    warm.start()
    try:
        head = _exactly(channel, LENGTH.size)
        request = _exactly(channel, LENGTH.unpack(head)[0])
        _, fds, _, _ = socket.recv_fds(channel, 1, 4)
    except OSError:
        os._exit(0)
    channel.close()
    if len(fds) != 4:
        os._exit(1)
    warm.join(WARM_WAIT_SECONDS)
    _command(json.loads(request), fds, command)


def _exactly(channel: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = channel.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _warm_gpu() -> None:
    """Make the CUDA context and load msa's kernels (the CUDA backend's construction), only
    where CuPy is imported and the GPU is in the default compute mode (an idle context on an
    exclusive GPU would keep every other process off it). Nothing runs on the CPU's threads
    here: a command that forks (msa add's reading) must find no OpenMP pool made. Errors are
    left to the command, whose own start reports them."""
    if "cupy" not in sys.modules or not _gpu_shared():
        return
    try:
        import cupy

        from msa._runtime.cuda_start import start_cuda
        from msa.backends.cuda import CudaBackend

        start_cuda()
        if cupy.is_available():
            CudaBackend()
    except Exception:
        pass


#: CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, and CU_COMPUTEMODE_DEFAULT.
_COMPUTE_MODE, _DEFAULT_MODE = 20, 0


def _gpu_shared() -> bool:
    """Whether the first visible GPU takes contexts of many processes (the driver, by ctypes)."""
    import ctypes

    from msa._runtime.cuda_start import _DRIVER_LIBRARY

    try:
        driver = ctypes.CDLL(_DRIVER_LIBRARY)
        device, mode = ctypes.c_int(), ctypes.c_int()
        return (driver.cuInit(0) == 0 and driver.cuDeviceGet(ctypes.byref(device), 0) == 0
                and driver.cuDeviceGetAttribute(ctypes.byref(mode), _COMPUTE_MODE, device) == 0
                and mode.value == _DEFAULT_MODE)
    except (OSError, AttributeError):
        return False


def _say(conn: socket.socket, line: bytes) -> None:
    try:
        conn.sendall(line)
    except OSError:
        pass


def _forked(conn: socket.socket, command: Callable[[], int]) -> Callable[[bytes, list[int]], int]:
    """How a watcher of ``conn`` starts a command's process of its own: a fork that runs the
    request (without ``conn``: the client must see it close when the watcher ends)."""

    def start(request: bytes, streams: list[int]) -> int:
        import json

        pid = os.fork()
        if pid == 0:
            conn.close()
            _command(json.loads(request), streams, command)
        return pid

    return start


def _watch(conn: socket.socket, start: Callable[[bytes, list[int]], int]) -> None:
    """The watcher: read the client's request, start its command (``start``: the request and
    the client's three streams, giving the command's pid), tell the client the pid and then
    the status; a client that goes away before the end has the command ended (SIGTERM)."""
    import select
    import socket

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    conn.settimeout(ANSWER_SECONDS)
    _say(conn, b"ready\n")
    try:
        head, fds, _, _ = socket.recv_fds(conn, LENGTH.size, 3)
        if len(head) != LENGTH.size or len(fds) != 3:
            return
        request = _exactly(conn, LENGTH.unpack(head)[0])
        said, told = os.pipe()  # the command's status, told before its process ends
        try:
            pid = start(request, [*fds, told])
        finally:
            os.close(told)
    except OSError:
        return
    for fd in fds:
        os.close(fd)
    conn.settimeout(None)
    _say(conn, f"pid {pid}\n".encode())
    pidfd = os.pidfd_open(pid)
    watched = [conn, pidfd, said]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if pidfd in ready:  # ended: its status from the kernel (a signal too)
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            _say(conn, f"signal {-status}\n".encode() if status < 0 else f"exit {status}\n".encode())
            return
        if said in ready:
            told_status = os.read(said, 16)
            watched.remove(said)
            if told_status.endswith(b"\n"):  # done: the client goes; the process ends meanwhile
                _say(conn, b"exit " + told_status)
                os.waitpid(pid, 0)
                return
            continue  # closed without a status: ended by a signal, which its pidfd tells
        try:
            gone = not conn.recv(64)
        except OSError:
            gone = True
        if gone:  # the client went away: end the command (it cleans up as on a user's SIGTERM)
            watched.remove(conn)
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass


def _command(request: dict[str, Any], fds: list[int], command: Callable[[], int]) -> None:
    """The command's process: the client's streams (``fds[:3]``), folder, environment and
    umask, then the command as ``msa`` runs it in a process of its own; never returns. Its
    status goes to the watcher through ``fds[3]`` before the process ends, its streams closed,
    so the client need not wait for the process's teardown (a CUDA context's, ~tens of ms)."""
    status = 1
    try:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        try:
            os.chdir(request["cwd"])
        except OSError as exc:
            os.write(2, f"msa: error: cannot enter the working folder: {exc.strerror}\n".encode())
            return
        os.environ.clear()
        os.environ.update(request["env"])
        os.umask(request["umask"])
        sys.argv = list(request["argv"])
        sys.stdout.reconfigure(line_buffering=sys.stdout.isatty())
        from msa import pipeline
        from msa._runtime import startup

        startup.served = True  # its start costs are not a cold process's

        pipeline.threads_sleep_when_idle()
        status = command()
    finally:
        try:
            for fd in (0, 1, 2):
                os.close(fd)
            os.write(fds[3], f"{status & 0xFF}\n".encode())
        except OSError:
            pass
        os._exit(status)
