"""Check that a model's endpoint can be used before any work starts: a judge on an unreachable port must fail
before the whole generation, not after it.

What is checked, for each stage's model (generator, judge, rewriter):

* ``http(s)://``: the scheme (``OPENAI_BASE_URL`` is not validated anywhere else) and a TCP connection to its
  host and port (nothing is sent over it);
* ``hf://PATH``: a path that names a local folder (absolute, ``./``, ``../``, ``~``) must exist and hold a model
  (``config.json``); a GGUF file must exist; a packaged alias (``hf://smollm2``) must have its package
  installed; a Hub id cannot be checked without the Hub and is accepted;
* a stage that cannot run in-process refuses ``hf://`` up front (every stage runs in-process now).

Every problem is one ``UserInputError`` line (exit 2) naming the stage, the model and the endpoint without
credentials.
"""

from __future__ import annotations

import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from mtrbench.infra.errors import ModelError, UserInputError
from mtrbench.llm.config import JudgeConfig, resolve_base_url
from mtrbench.llm.hf import hf_model_path, is_hf_url
from mtrbench.llm.packaged import check_chat_model

CONNECT_TIMEOUT_S = 3.0
DEFAULT_PORTS = {"http": 80, "https": 443}
LOCAL_PATH_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")
# judge.engine asks through make_client, which runs hf:// judges in-process.
JUDGES_RUN_IN_PROCESS = True


def endpoint_label(judge: JudgeConfig) -> str:
    """Where the model is served, without credentials or query string: ``http://host:port/v1``, ``hf://DIR``."""
    if is_hf_url(judge.base_url):
        return str(judge.base_url)
    parts = urlsplit(resolve_base_url(judge))
    host = parts.netloc.rpartition("@")[2]  # user:password never recorded
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def check_endpoint(judge: JudgeConfig, stage: str, *, in_process: bool = True, connect: bool = True) -> None:
    """Raise one ``UserInputError`` when ``judge``'s endpoint cannot serve ``stage`` (e.g. 'judge')."""
    where = f"the {stage} ({judge.model})"
    if is_hf_url(judge.base_url):
        if not in_process:
            raise UserInputError(
                f"{where} runs in-process at {judge.base_url}, which the {stage} stage does not "
                f"support yet; serve the model over HTTP (vLLM, SGLang, llama.cpp) and pass its URL, "
                f"or name another {stage} model"
            )
        path = hf_model_path(str(judge.base_url))

        try:
            check_chat_model(path)  # hf://smollm2 without its package, hf://missing.gguf
        except ModelError as err:
            raise UserInputError(f"{where}: {err}") from None
        folder = Path(path).expanduser()
        if path.startswith(LOCAL_PATH_PREFIXES) and not path.lower().endswith(".gguf"):
            if not folder.is_dir():
                raise UserInputError(f"{where}: {judge.base_url} names a folder that does not exist")
            if not (folder / "config.json").is_file():
                raise UserInputError(f"{where}: {judge.base_url} holds no model (no config.json)")
        return
    endpoint = endpoint_label(judge)
    parts = urlsplit(endpoint)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise UserInputError(f"{where}: endpoint {endpoint!r} is not an http(s) URL or hf://MODEL")
    if not connect:
        return
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise UserInputError(f"{where}: endpoint {endpoint} has an invalid port") from None
    try:
        with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UserInputError(
            f"{where}: endpoint {endpoint} is unreachable ({reason}); is the server running?"
        ) from None
