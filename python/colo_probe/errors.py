"""An exception as the one line the probe reports."""


def reason(e):
    """`Type: message` on one line. An error raised inside __torch_dispatch__ comes back from
    PyTorch's C++ with the Python stack appended after "At:" and its type repeated in the message
    ("RuntimeError: RuntimeError: ..."); the stack is the probe's own frames, not the user's, so
    both are dropped."""
    text = str(e)
    at = text.find("\nAt:\n")
    if at >= 0:
        text = text[:at]
    name = type(e).__name__
    text = " ".join(text.split())
    while text.startswith(name + ": "):
        text = text[len(name) + 2:]
    return f"{name}: {text}"


def exit_status(e):
    """What a SystemExit means as a process exit: sys.exit("bye") prints "bye" and exits 1."""
    if e.code is None:
        return "status 0"
    if isinstance(e.code, int):
        return f"status {e.code}"
    return f"status 1: {' '.join(str(e.code).split())}"
