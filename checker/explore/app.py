"""The explorer's web app (Starlette) and its server (uvicorn), bound to 127.0.0.1 only.

Other users share the machine, so every URL carries a random session token
(`http://127.0.0.1:PORT/TOKEN/`): a request without it gets 404, and a request whose Host is
not this server's loopback address gets 400 (no DNS rebinding). Moves are POSTs with a JSON
body, which a page on another origin cannot send without the token anyway. All assets (the
page, its script and style) are served from the package: no CDN.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from ..safejson import loads as load_json
from .session import ExploreError, Session

STATIC = os.path.join(os.path.dirname(__file__), "static")
ASSETS = {"explorer.js": "text/javascript", "explorer.css": "text/css"}
MAX_BODY = 4096


def build_app(session: Session, token: str, port_of: Callable[[], int]) -> Starlette:
    """The ASGI app of one exploration; `port_of()` gives the port it is served on (for the Host check)."""
    lock = threading.Lock()

    def allowed(request: Request) -> Response | None:
        if not hmac.compare_digest(request.path_params.get("token", ""), token):
            return Response("not found", status_code=404)
        host = request.headers.get("host", "")
        if host not in (f"127.0.0.1:{port_of()}", f"localhost:{port_of()}"):
            return Response("bad host", status_code=400)
        return None

    async def index(request: Request) -> Response:
        return allowed(request) or FileResponse(os.path.join(STATIC, "index.html"), media_type="text/html",
                                                headers=_no_store())

    async def asset(request: Request) -> Response:
        refused = allowed(request)
        if refused:
            return refused
        name = request.path_params["name"]
        if name not in ASSETS:
            return Response("not found", status_code=404)
        return FileResponse(os.path.join(STATIC, name), media_type=ASSETS[name], headers=_no_store())

    async def state(request: Request) -> Response:
        refused = allowed(request)
        if refused:
            return refused
        with lock:
            return JSONResponse(session.view(), headers=_no_store())

    async def move(request: Request) -> Response:
        refused = allowed(request)
        if refused:
            return refused
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send JSON"}, status_code=415)
        body = await request.body()
        if len(body) > MAX_BODY:
            return JSONResponse({"error": "request too large"}, status_code=413)
        try:
            data = load_json(body or b"{}", "request body", max_depth=4)
            if not isinstance(data, dict):
                raise ValueError
        except ValueError as e:
            return JSONResponse({"error": str(e) or "the body must be a JSON object"}, status_code=400)
        op = request.path_params["op"]
        index = data.get("index")
        with lock:
            try:
                if op == "back":
                    session.back()
                elif op == "reset":
                    session.reset()
                elif op in ("step", "goto", "follow"):
                    if isinstance(index, bool) or not isinstance(index, int):
                        raise ExploreError(f"{op} needs an integer \"index\"")
                    getattr(session, op)(index)
                else:
                    return JSONResponse({"error": f"no such move {op!r}"}, status_code=404)
            except ExploreError as e:
                return JSONResponse({"error": str(e)}, status_code=409)
            return JSONResponse(session.view(), headers=_no_store())

    routes = [Route("/{token}/", index), Route("/{token}/static/{name}", asset),
              Route("/{token}/api/state", state), Route("/{token}/api/{op}", move, methods=["POST"])]
    return Starlette(routes=routes)


def _no_store() -> dict[str, str]:
    return {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


class Server:
    """The explorer served on 127.0.0.1:`port` (0: a free port) in a background thread; `url` holds the token."""

    def __init__(self, session: Session, port: int = 0):
        import uvicorn

        self.token = secrets.token_urlsafe(24)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.port = self.sock.getsockname()[1]
        app = build_app(session, self.token, lambda: self.port)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.token}/"

    def serve(self) -> None:
        """Serve in this thread until interrupted."""
        self.server.run(sockets=[self.sock])

    def start(self) -> Server:
        """Serve in a background thread; returns once the server accepts connections."""
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the explorer's server did not start")
            threading.Event().wait(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(timeout=10)
        self.sock.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
