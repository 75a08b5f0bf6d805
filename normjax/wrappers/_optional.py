"""Optional dependencies: a clear ImportError that names the extra to install."""

from __future__ import annotations

import importlib


def require(module: str, extra: str, needed_by: str):
    """Import `module`, or raise ImportError saying which normjax extra provides it.

    The adapters to Gymnasium and PettingZoo are optional so that the core package
    (and training on accelerators) does not pull them in; a user who imports an
    adapter without its extra should learn the one command that fixes it.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"{needed_by} needs the '{module}' package, which is not installed; install it "
            f'from a normjax checkout with: pip install -e ".[{extra}]"'
        ) from err
