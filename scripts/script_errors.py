"""One-line errors for the repository's scripts: `run(main, "name")` runs main() and turns what a
bad argument or input file raises (a missing file or binary, unreadable JSON, a malformed value, a
failed colo command) into `name: error: …` on one line and exit status 1, never a traceback. A
traceback still comes out for anything else: that is a bug in the script. need_program and
need_output check a --colo program and an output path before a script's work; int_list and
name_list read a flag's comma-separated values; colo_json and read_jsonl read JSON with errors
that name the command or the file and line."""
import json
import os
import subprocess
import sys


def _last_line(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def run(main, name):
    try:
        main()
    except subprocess.CalledProcessError as e:
        cmd = e.cmd if isinstance(e.cmd, str) else " ".join(str(c) for c in e.cmd)
        why = _last_line(e.stderr) or _last_line(e.output) or "its message is above"
        sys.exit("%s: error: `%s` failed (exit %s): %s" % (name, cmd[:200], e.returncode, why))
    except FileNotFoundError as e:
        sys.exit("%s: error: %s: no such file or program" % (name, e.filename))
    except (OSError, json.JSONDecodeError, KeyError, ValueError) as e:
        what = "missing field %s" % e if isinstance(e, KeyError) else str(e)
        sys.exit("%s: error: %s" % (name, " ".join(what.split())))


def need_program(name, path, flag="--colo"):
    """Exits with `name: FLAG PATH: ...` on one line unless `path` is an executable file: checked
    before a script's long work, not when its first command fails (a directory is no program)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        sys.exit("%s: %s %s: %s" % (name, flag, path, "not an executable program" if os.path.exists(path)
                                     else "no such program (build colo first, README)"))


def need_output(name, path, flag):
    """Exits with `name: FLAG PATH: ...` on one line unless `path` can be written as a file: its
    directory exists and it is not a directory itself (checked before the work, not after it)."""
    if not path:
        sys.exit("%s: %s: an empty path" % (name, flag))
    where = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        sys.exit("%s: %s %s: is a directory" % (name, flag, path))
    if not os.path.isdir(where):
        sys.exit("%s: %s %s: no directory %s" % (name, flag, path, where))


def _once(name, flag, text, values):
    # A value given twice would run (and count) twice in its group.
    for v in values:
        if values.count(v) > 1:
            sys.exit(f"{name}: {flag} '{text}': {v} is given twice")
    return values


def int_list(name, flag, text):
    """The integers of `text` ("80,90"), each once; else `name: FLAG 'text': ...` and exit 1."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        sys.exit(f"{name}: {flag} '{text}': expected comma-separated integers")
    return _once(name, flag, text, values)


def name_list(name, flag, text):
    """The non-empty names of `text` ("magm,lug"), each once; else a one-line error and exit 1."""
    values = text.split(",")
    if any(not v for v in values):
        sys.exit(f"{name}: {flag} '{text}': expected comma-separated names")
    return _once(name, flag, text, values)


def colo_json(cmd, text):
    """The JSON a command (colo with --json) printed; a ValueError naming the command when it
    printed none (a --colo that is some other program)."""
    try:
        return json.loads(text)
    except ValueError:
        shown = " ".join(str(c) for c in cmd)[:200]
        raise ValueError("`%s` printed no JSON (is it colo?): %s" % (shown, _last_line(text)[:100] or "no output")) \
            from None


def read_jsonl(path):
    """[(line number, value)] of a file of JSON lines (blank lines skipped); a ValueError naming
    PATH:LINE for a line that is not JSON, an OSError for a file that cannot be read."""
    out = []
    with open(path, encoding="utf-8") as f:
        try:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        out.append((n, json.loads(line)))
                    except ValueError:
                        raise ValueError("%s:%d: not a JSON line" % (path, n)) from None
        except UnicodeDecodeError:
            raise ValueError("%s: not UTF-8 text" % path) from None
    return out


def read_trace_index(path):
    """{row id: record} of a probe trace directory's index.jsonl (python -m colo_probe.gpumemnet,
    colo estimate eval --keep-traces): ValueErrors naming PATH:LINE for a record without its
    "filename", or a recorded ("ok") one without its "trace" file."""
    index = {}
    for n, j in read_jsonl(path):
        if not isinstance(j, dict) or not isinstance(j.get("filename"), str):
            raise ValueError(f"{path}:{n}: expected an object with a \"filename\"")
        if j.get("status") == "ok" and not isinstance(j.get("trace"), str):
            raise ValueError(f"{path}:{n}: a recorded (\"ok\") probe without its \"trace\" file")
        index[j["filename"]] = j
    return index
