"""`render_mode="human"` for the host-side adapters (the Gymnasium env and PettingZoo's
envs): each `render()` draws the current frame in a matplotlib window and returns None,
as Gymnasium and PettingZoo define the mode (PettingZoo's `render_test` checks both).

On a machine without a display (no DISPLAY / WAYLAND_DISPLAY, or a non-interactive
matplotlib backend) nothing can be shown: the first `render()` says so once, clearly, and
the frames are dropped instead of the process crashing; `render_mode="rgb_array"` returns
them as arrays there.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from normjax.interop.render import render_frame_jit

RENDER_MODES = ("rgb_array",)  # what every adapter renders, the vector env included
SINGLE_ENV_RENDER_MODES = ("human", "rgb_array")  # one environment: also a window


def has_display() -> bool:
    """Whether a window can be shown: a display server, and an interactive matplotlib backend."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return False
    import matplotlib

    return matplotlib.get_backend().lower() not in ("agg", "pdf", "ps", "svg", "cairo", "template")


class HumanViewer:
    """One matplotlib window per environment; `show(frame)` redraws it."""

    def __init__(self, title: str):
        self.title, self._fig, self._image, self._warned = title, None, None, False

    def show(self, frame: np.ndarray) -> None:
        if not has_display():
            if not self._warned:
                warnings.warn(
                    "render_mode='human' needs a display (none here: no DISPLAY, or matplotlib's backend "
                    "is not interactive); frames are not shown. Use render_mode='rgb_array' for arrays.",
                    stacklevel=3,
                )
                self._warned = True
            return
        import matplotlib.pyplot as plt

        if self._fig is None or not plt.fignum_exists(self._fig.number):
            self._fig, ax = plt.subplots(num=self.title)
            ax.set_axis_off()
            self._image = ax.imshow(frame)
        else:
            self._image.set_data(frame)
        self._fig.canvas.draw_idle()
        plt.pause(0.001)

    def __getstate__(self):  # pickling or copying an env keeps no window
        return dict(title=self.title, _fig=None, _image=None, _warned=self._warned)

    def close(self) -> None:
        if self._fig is not None:
            import matplotlib.pyplot as plt

            plt.close(self._fig)
            self._fig = self._image = None


class RenderedEnv:
    """`render()` and `close()` of a host-side adapter that holds `render_mode`, `cell_px`,
    `params` and the current `_state` (None before the first reset, which raises
    `not_reset_error`)."""

    not_reset_error: type[Exception] = RuntimeError
    _viewer: HumanViewer | None = None

    def render(self):
        if self.render_mode is None:
            warnings.warn(
                "render() called with render_mode=None; pass render_mode='rgb_array' or 'human'", stacklevel=2
            )
            return None
        if self._state is None:
            raise self.not_reset_error("call reset() before render()")
        frame = np.asarray(render_frame_jit(self._state, self.params, cell_px=self.cell_px))
        if self.render_mode != "human":
            return frame
        if self._viewer is None:  # drawn in a window; the mode returns nothing
            self._viewer = HumanViewer("NormGym")
        self._viewer.show(frame)
        return None

    def close(self):
        if self._viewer is not None:
            self._viewer.close()


def check_render_mode(render_mode, modes: tuple[str, ...] = RENDER_MODES):
    if render_mode is not None and render_mode not in modes:
        raise ValueError(f"render_mode must be None or one of {', '.join(map(repr, modes))}, got {render_mode!r}")
    return render_mode
