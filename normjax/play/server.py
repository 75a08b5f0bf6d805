"""Running the `normjax play` app: one server per --out, a production WSGI server off loopback.

`serve` takes the folder lock first (`normjax.play.guard.FolderLock`: a second server on
the same --out exits with a message naming the holder), makes the admin token and
prints it with the URL, then serves: on a loopback --host with Werkzeug's threaded
server, on any other with waitress (the ``[play]`` extra; the development server is not
meant for the open internet).  Neither sends a version banner (``Server: normjax``).
"""

from __future__ import annotations

import secrets
import tempfile
import time
from pathlib import Path

from normjax.play.guard import BANNER, LOOPBACK, MAX_BODY, FolderLock

WAITRESS_THREADS = 48  # a step request waits for the world: at least one thread per active participant


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


def wsgi_server(host: str) -> str:
    """ "werkzeug" for a loopback --host, "waitress" for any other (ImportError if it is missing)."""
    if is_loopback(host):
        return "werkzeug"
    try:
        import waitress  # noqa: F401 (only its presence is checked here)
    except ImportError as e:
        raise ImportError(
            f"--host {host} exposes the study: that needs the production server waitress (pip install 'normjax[play]')"
        ) from e
    return "waitress"


def local_server(host: str, port: int, app):
    """Werkzeug's threaded server for loopback, its banner replaced by `BANNER`."""
    from werkzeug.serving import WSGIRequestHandler, make_server

    class Handler(WSGIRequestHandler):
        def version_string(self) -> str:
            return BANNER

    return make_server(host, port, app, threaded=True, request_handler=Handler)


def warm_up(norm_id: int, seed: int = 0, interaction_steps: int = 200, capacity: int = 10, cell_px: int = 32) -> float:
    """Compile every program a participant needs before anyone is let in: a throwaway participant
    (in a temporary folder) waits through one norm's interaction phase into its first test
    episode, fetching each frame.  Returns the seconds it took."""
    from normjax.play.session import Session

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="normjax-play-warmup-") as tmp:
        s = Session(tmp, "warmup", [norm_id], seed, capacity, interaction_steps, cell_px)
        s.start()
        try:
            while True:
                v = s.view()  # waits up to 30 s for the turn; a cold compile can take longer
                if v["status"] == "starting" or (v["status"] == "playing" and "phase" not in v):
                    continue
                if v["status"] != "playing":
                    raise RuntimeError(f"the warm-up session stopped: {s.error or v['status']}")
                s.frame_png()
                if v["phase"] != "interaction":
                    break
                s.submit(dict(turn=v["turn"], action="wait"))
        finally:
            s.close()
    return time.perf_counter() - t0


def serve(out_dir, norm_ids: list[int], host: str = "127.0.0.1", port: int = 8000, warm: bool = True, **kwargs) -> None:
    """Lock --out, build the app, compile (`warm_up`), print the URL and the admin token, serve until stopped."""
    from normjax.play.app import create_app

    kind = wsgi_server(host)
    with FolderLock(out_dir):
        token = secrets.token_urlsafe(24)
        app = create_app(out_dir, norm_ids, admin_token=token, **kwargs)
        if warm:
            study = kwargs.get("study")
            first = (study.pool if study is not None else norm_ids)[0]
            protocol = {k: kwargs[k] for k in ("seed", "interaction_steps", "capacity", "cell_px") if k in kwargs}
            print("normjax play: compiling the world's programs before participants are let in...", flush=True)
            print(f"normjax play: programs ready in {warm_up(first, **protocol):.1f} s", flush=True)
        base = kwargs.get("base_path", "").rstrip("/")
        url = f"http://{host}:{port}{base}/"
        print(f"normjax play: {url}  (results under {Path(out_dir).resolve()}; server: {kind})", flush=True)
        print(f"normjax play: admin view {url}admin  token: {token}", flush=True)
        try:
            if kind == "waitress":
                import waitress

                waitress.serve(
                    app, host=host, port=port, ident=BANNER, threads=WAITRESS_THREADS, max_request_body_size=MAX_BODY
                )
            else:
                local_server(host, port, app).serve_forever()
        finally:
            for s in list(app.config["sessions"].values()):
                s.close()


__all__ = ["WAITRESS_THREADS", "is_loopback", "local_server", "serve", "warm_up", "wsgi_server"]
