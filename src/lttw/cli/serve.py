"""`lttw serve`: a model folder over HTTP."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from lttw.choices import Backend
from lttw.cli.app import (
    BadInputError,
    ChunkTexts,
    ModelDir,
    Params,
    Revision,
    app,
    examples,
    model_folder,
)
from lttw.errors import UserError


@app.command(
    epilog=examples(
        "lttw serve --model models/fold_0",
        "lttw serve --model exported/lttw-int8 --port 8080 --max-batch 128",
        "curl -s localhost:8000/predict -H 'content-type: application/json' "
        '-d \'{"texts": ["Stocks rally as oil prices fall"], "top_k": 2}\'',
    )
)
def serve(
    model: ModelDir = None,
    revision: Revision = None,
    host: Annotated[
        str,
        typer.Option(
            help="address to listen on (0.0.0.0: every network interface; think before exposing it)"
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port")] = 8000,
    backend: Annotated[
        Backend,
        typer.Option(
            help="auto: onnxruntime where the folder holds model.onnx (`lttw export --onnx`), "
            "else torch"
        ),
    ] = "auto",
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="CPU threads of a forward pass [default: the CPUs this process may use]"
        ),
    ] = None,
    max_batch: Annotated[
        int, typer.Option(min=1, help="texts gathered from concurrent requests into one batch")
    ] = 64,
    forward_batch: Annotated[
        int,
        typer.Option(
            min=1,
            help="texts per forward pass: a batch runs shortest first in passes of this "
            "many, each padded only to its own longest text",
        ),
    ] = 16,
    max_wait_ms: Annotated[
        float,
        typer.Option(min=0.0, help="how long a request waits for others to share its forward pass"),
    ] = 5.0,
    max_texts: Annotated[int, typer.Option(min=1, help="texts per request (more: 422)")] = 256,
    max_text_chars: Annotated[
        int, typer.Option(min=1, help="characters per text (more: 422)")
    ] = 10_000,
    max_body_bytes: Annotated[
        int, typer.Option(min=1, help="bytes per request body (more: 413)")
    ] = 4 * 1024 * 1024,
    max_queue_texts: Annotated[
        int,
        typer.Option(
            min=1,
            help="texts (with --chunk: windows) waiting for a forward pass, all requests "
            "(more: 503 + Retry-After; one request with more: 422)",
        ),
    ] = 1024,
    request_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="seconds from a request's arrival to its answer (then 504)"),
    ] = 30.0,
    shutdown_timeout: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="on SIGTERM / Ctrl-C, seconds to finish queued and running requests (then 503)",
        ),
    ] = 20.0,
    drain: Annotated[
        float,
        typer.Option(
            min=0.0,
            help="on SIGTERM, seconds to keep listening (/ready 503, new work 503, every "
            "answer closing its connection) before closing; it also listens on while "
            "requests are in progress",
        ),
    ] = 0.0,
    max_header_bytes: Annotated[
        int,
        typer.Option(min=1024, help="bytes of request line and headers (more: 431, closed)"),
    ] = 16 * 1024,
    header_timeout: Annotated[
        float,
        typer.Option(min=0.001, help="seconds to receive request line and headers (then 408)"),
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.001, help="seconds to receive a request body (then 408)")
    ] = 30.0,
    keep_alive: Annotated[
        int, typer.Option(min=1, help="seconds an idle keep-alive connection stays open")
    ] = 5,
    max_connections: Annotated[
        int, typer.Option(min=1, help="open connections (more: 503, closed at once)")
    ] = 128,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="LTTW_API_KEY",
            show_envvar=True,
            help="a token every request but GET /health must send as 'Authorization: Bearer "
            "KEY' (else 401) [default: none needed]",
        ),
    ] = None,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            help="a Host header name the server answers to (repeat it; a name starting with "
            "'\\*.' also matches its subdomains, a lone '\\*' any Host); others get 400 "
            "[default: 127.0.0.1, localhost, ::1 on a loopback address; needed on any other]"
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(
            help="a browser origin allowed to call cross-origin (repeat it) [default: CORS off]"
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="log one line per request")] = False,
    chunk: ChunkTexts = False,
    params: Params = Path("params.yaml"),
) -> None:
    """Serve a model folder over HTTP (FastAPI + uvicorn): POST /predict {"texts": [...]},
    {"text": "..."} as application/json (optional "top_k") answers labels and probabilities
    in the order given ({"inputs": ...}: Text Embeddings Inference's answer); POST /explain;
    GET / (a page to try the model); GET /health; GET /live and /ready (probes); GET
    /metrics (Prometheus); GET /info (labels, variant, encoder, word splitting, metrics,
    limits, access); GET /docs and /openapi.json (the OpenAPI schema).
    Concurrent requests share forward passes (micro-batching). Every error is one line of
    JSON; every limit is an option below (docs/how-to/serving.md, "Limits and security").
    SIGTERM / Ctrl-C: stops accepting, finishes what it can within --shutdown-timeout, exits."""
    from lttw.inference.loading import backend_name, load_predictor
    from lttw.serving.limits import over_bound
    from lttw.serving.security import LOOPBACK_HOSTS, Access, is_loopback
    from lttw.serving.server import Limits
    from lttw.serving.server import serve as run_server

    logging.getLogger("lttw.serving").setLevel(logging.INFO)
    too_large = over_bound(
        {
            "threads": threads,
            "max_batch": max_batch,
            "forward_batch": forward_batch,
            "max_wait_ms": max_wait_ms,
            "max_texts": max_texts,
            "max_text_chars": max_text_chars,
            "max_body_bytes": max_body_bytes,
            "max_queue_texts": max_queue_texts,
            "request_timeout": request_timeout,
            "shutdown_timeout": shutdown_timeout,
            "drain": drain,
            "max_header_bytes": max_header_bytes,
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "keep_alive": keep_alive,
            "max_connections": max_connections,
        }
    )
    if too_large:
        raise BadInputError(too_large)
    if api_key is not None and not api_key.strip():
        raise UserError(
            "--api-key / LTTW_API_KEY is empty: give a token, or leave both unset to serve "
            "without one"
        )
    for name in allowed_host or ():
        check_allowed_host(name)
    for origin in cors_origin or ():
        _check_origin(origin)
    if not allowed_host and not is_loopback(host):
        raise UserError(
            f"--host {host} reaches beyond this machine: name the host names clients use with "
            "--allowed-host NAME (repeatable; '*' allows any Host header)"
        )
    access = Access(
        allowed_hosts=tuple(allowed_host or LOOPBACK_HOSTS),
        api_key=api_key or None,
        cors_origins=tuple(cors_origin or ()),
    )
    from lttw.serving.connection import bind_socket

    try:  # before the model loads and the banner: a port in use is one line
        sock = bind_socket(host, port)
    except OSError as err:
        raise UserError(
            f"cannot listen on {host}:{port}: {err.strerror or err} (choose another --port "
            "or --host, or stop what uses it)"
        ) from None
    # a folder or a hub id goes to load_predictor as given: it resolves and opens it once
    folder = model if model is not None else model_folder(None, params, revision)
    try:
        predictor = load_predictor(folder, threads=threads, backend=backend, revision=revision)
    except UserError as err:
        raise (err if "backend" in str(err) else BadInputError(str(err))) from None
    if chunk:  # long texts in sliding windows (inference.long_texts)
        from lttw.inference.long_texts import WindowedPredictor

        predictor = WindowedPredictor(predictor, chunk=True)
    limits = Limits(
        max_texts=max_texts,
        max_text_chars=max_text_chars,
        max_body_bytes=max_body_bytes,
        max_batch=max_batch,
        max_wait_ms=max_wait_ms,
        forward_batch=forward_batch,
        max_queue_texts=max_queue_texts,
        request_timeout_s=request_timeout,
        shutdown_timeout_s=shutdown_timeout,
        drain_s=drain,
        max_header_bytes=max_header_bytes,
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
        keep_alive_s=keep_alive,
        max_connections=max_connections,
    )
    name = backend_name(predictor)
    typer.echo(
        f"serving {folder} ({predictor.meta['variant']}, {name}, "
        f"{len(predictor.classes)} labels) on http://{host}:{sock.getsockname()[1]}; limits: "
        f"{max_texts} texts of <= {max_text_chars} characters per request, batches of "
        f"<= {max_batch} texts in passes of {forward_batch}, waiting <= {max_wait_ms:g} ms; "
        f"queue <= {max_queue_texts} {'windows' if chunk else 'texts'}, answers within {request_timeout:g} s, "
        f"<= {max_connections} connections; token: {'yes' if access.api_key else 'no'}, "
        f"hosts: {', '.join(access.allowed_hosts)}, "
        f"CORS: {', '.join(access.cors_origins) or 'off'}",
        err=True,
    )
    run_server(predictor, host, port, limits, name, access_log, sockets=[sock], access=access)


def check_allowed_host(name: str) -> None:
    """A Host header name pattern: a host name, an IP address, ``*`` or ``*.domain``; no
    port (the Host header's port is not compared), no scheme or path."""
    import ipaddress
    import re

    bare = name[2:] if name.startswith("*.") else name
    try:
        ipaddress.ip_address(bare.strip("[]"))
        return
    except ValueError:
        pass
    label = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
    if name != "*" and not re.fullmatch(rf"{label}(\.{label})*\.?", bare):
        raise UserError(
            f"--allowed-host {name!r}: a host name (api.example.org), '*.example.org' or '*', "
            "without a port, scheme or path"
        )


def _check_origin(origin: str) -> None:
    """A browser origin: ``scheme://host[:port]``, nothing after it."""
    from urllib.parse import urlsplit

    parts = urlsplit(origin)
    try:
        port_ok = parts.port is None or 0 < parts.port < 65536
    except ValueError:
        port_ok = False
    if not (
        parts.scheme in ("http", "https")
        and parts.hostname
        and port_ok
        and not parts.path
        and not parts.query
        and not parts.fragment
        and not parts.username
    ):
        raise UserError(
            f"--cors-origin {origin!r}: an origin is scheme://host[:port] "
            "(https://app.example.org), nothing after it"
        )
