"""`python3 -m colo_probe ARGS` for the tests, without paying for `import torch` on every run.

A fresh interpreter spends about 2.5 s of CPU importing torch before the probe does anything, and
the --script tests start the probe about a hundred times. run() instead asks a server that has
imported torch (and nothing of colo_probe) to fork; the child runs colo_probe as `python3 -m`
does: runpy's _run_module_as_main with sys.argv and sys.path as -m sets them, the run's
environment, working directory and stdio, then the threads' join, the exit handlers and the exit
status a fresh interpreter would give. What differs from a fresh interpreter: the modules torch
imported are already loaded, and torch read its import-time environment from the server's (the
tests' own). COLO_PROBE_TESTS_FRESH=1 runs every probe in a fresh interpreter instead; the entry
point itself is always tested that way (test_recording's CommandLine and UserFiles tests).

Run as a script, this file is the server: `forked_probe.py FD`, requests on the socket FD."""
import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading

_server = None


def run(args, env, cwd=None, timeout=600):
    """subprocess.run([sys.executable, "-m", "colo_probe", *args], capture_output=True, text=True,
    env=env, cwd=cwd, timeout=timeout), through the server unless COLO_PROBE_TESTS_FRESH=1."""
    cmd = [sys.executable, "-m", "colo_probe", *args]
    if os.environ.get("COLO_PROBE_TESTS_FRESH") == "1":
        return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    return _Server.get().run(cmd, list(args), dict(env), os.path.abspath(cwd or os.getcwd()), timeout)


def _stop():
    if _server is not None:
        _server.close()


class _Server:
    @classmethod
    def get(cls):
        global _server
        if _server is None:
            atexit.register(_stop)  # the client's (a forked run's exit handlers are the server's)
        elif _server.proc.poll() is not None:
            _server.sock.close()  # ended (killed?): another one
        else:
            return _server
        _server = cls()
        return _server

    def __init__(self):
        mine, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env["CUDA_VISIBLE_DEVICES"] = ""
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(theirs.fileno())],
                                     pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        self.sock = mine
        self.file = mine.makefile("rw", encoding="utf-8")

    def close(self):
        """The server ends at the end of its requests."""
        self.file.close()
        self.sock.close()
        self.proc.wait()

    def _answer(self, deadline=None):
        self.sock.settimeout(deadline)
        line = self.file.readline()
        if not line:
            raise RuntimeError(f"forked_probe: the server ended (exit {self.proc.wait()})")
        return json.loads(line)

    def run(self, cmd, args, env, cwd, timeout):
        with tempfile.TemporaryDirectory(prefix="colo-forked-probe-") as d:
            out, err = os.path.join(d, "stdout"), os.path.join(d, "stderr")
            self.file.write(json.dumps({"args": args, "env": env, "cwd": cwd, "stdout": out, "stderr": err}) + "\n")
            self.file.flush()
            pid = self._answer()["pid"]
            try:
                status = self._answer(timeout)["status"]
            except (socket.timeout, TimeoutError):
                os.kill(pid, signal.SIGKILL)
                self.file.close()  # a timed-out read leaves it unusable
                self.file = self.sock.makefile("rw", encoding="utf-8")
                self._answer()
                raise subprocess.TimeoutExpired(cmd, timeout)
            with open(out, encoding="utf-8", errors="replace") as f_out, open(err, encoding="utf-8", errors="replace") as f_err:
                return subprocess.CompletedProcess(cmd, status, f_out.read(), f_err.read())


def _child(req, fd):
    """In the forked child: becomes `python3 -m colo_probe ARGS` and never returns."""
    import runpy
    import types
    code = 1
    try:
        os.close(fd)  # the server's socket: only the server answers on it
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            f = os.open(path, flags, 0o600)
            os.dup2(f, fd)
            os.close(f)
        # What -m sets: argv[0] the module's file (runpy puts it there), sys.path[0] the working
        # directory, then PYTHONPATH, then the interpreter's own entries.
        sys.argv = ["-m", *req["args"]]
        pythonpath = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [os.getcwd(), *pythonpath, *_BASE_PATH]
        # A fresh __main__ (runpy runs the module in the current one's namespace: the server's here).
        sys.modules["__main__"] = types.ModuleType("__main__")
        code = 0
        try:
            runpy._run_module_as_main("colo_probe", alter_argv=True)
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code & 0xFF)


def _serve(fd):
    import torch  # noqa: F401  (what each run would otherwise import again)
    sock = socket.socket(fileno=fd)
    f = sock.makefile("rw", encoding="utf-8")
    for line in f:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req, fd)
        f.write(json.dumps({"pid": pid}) + "\n")
        f.flush()
        _, status = os.waitpid(pid, 0)
        f.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")
        f.flush()


if __name__ == "__main__":
    _BASE_PATH = sys.path[1:]  # the interpreter's entries (the server runs without PYTHONPATH)
    _serve(int(sys.argv[1]))
