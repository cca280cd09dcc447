"""`lockstep explore SPEC`: step through a spec in the browser, on 127.0.0.1 (a random token in the URL)."""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..loader import load_model, parse_params, resolve
from ..trace import Trace
from .common import add_spec_arguments, natural

NAME = "explore"
HELP = "explore a spec in the browser: states, enabled steps, invariants, a saved trace, the sequence chart"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_spec_arguments(p)
    p.add_argument("--trace", metavar="FILE", help="a saved trace of SPEC (e.g. `check --out`) to jump along")
    p.add_argument("--port", type=port, default=0, metavar="PORT", help="the port on 127.0.0.1 (default: a free one)")


def port(text: str) -> int:
    """A TCP port number: 0 (any free port) to 65535."""
    v = natural(text)
    if v > 65535:
        raise argparse.ArgumentTypeError(f"{v} is not a port number (0 to 65535)")
    return v


def run(args: argparse.Namespace) -> int:
    from ..explore.app import Server
    from ..explore.session import Session

    trace = Trace.load(args.trace) if args.trace else None
    params = parse_params(args.param)
    if trace is not None:
        obj, _ = resolve(args.spec)
        name = getattr(obj, "__name__", type(obj).__name__).rsplit(".", 1)[-1]
        if trace.spec_name and trace.spec_name != name:
            raise UsageError(f"--trace {args.trace} is a trace of spec {trace.spec_name}, not of {name}")
        clash = {k: v for k, v in params.items() if trace.params.get(k, v) != v}
        if clash:
            raise UsageError(f"--param {', '.join(f'{k}={v}' for k, v in clash.items())}: the trace was recorded with "
                             f"{', '.join(f'{k}={trace.params[k]}' for k in clash)}")
        params = {**trace.params, **params}
    model = load_model(args.spec, params)
    session = Session(model, trace)
    try:
        server = Server(session, args.port)
    except OSError as e:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {e.strerror}") from None
    print(f"Exploring {model.name} {model.params}" + (f" along {args.trace}" if trace else ""))
    print(f"Open {server.url}  (only on this machine; the token in the URL keeps other users out; Ctrl-C stops)")
    sys.stdout.flush()
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.sock.close()
    return 0
