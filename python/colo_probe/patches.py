"""Attribute and sys.modules replacements the probe makes while it runs, undone in reverse order
(the --script run's patches of torch.cuda and friends; the detection sampler under --probe)."""
import sys


class Patches:
    """Attribute replacements, undone in reverse order."""

    def __init__(self):
        self.saved = []

    def set(self, owner, name, value):
        self.saved.append((owner, name, owner.__dict__.get(name, MISSING) if isinstance(owner, type) else
                           getattr(owner, name, MISSING)))
        setattr(owner, name, value)

    def set_module(self, name, module):
        """A module importable by `name` (`import torch.accelerator`) while the script runs."""
        self.saved.append((_SysModules, name, sys.modules.get(name, MISSING)))
        sys.modules[name] = module

    def undo(self):
        for owner, name, old in reversed(self.saved):
            if owner is _SysModules:
                if old is MISSING:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = old
            elif old is MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, old)
        self.saved.clear()


MISSING = object()  # "the attribute was not there"


class _SysModules:
    """Patches' owner for sys.modules entries."""
