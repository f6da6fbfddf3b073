"""One-line errors for the repository's scripts: `run(main, "name")` runs main() and turns what a
bad argument or input file raises (a missing file or binary, unreadable JSON, a malformed value, a
failed colo command) into `name: error: …` on one line and exit status 1, never a traceback. A
traceback still comes out for anything else: that is a bug in the script."""
import json
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
