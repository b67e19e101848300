"""Judge configuration: which model, where it is served, and how to talk to it.

A judges file lists one or more judges (several = an ensemble) and may override prices::

    judges:
      - {name: gpt4o, model: gpt-4o}
      - {name: local, model: Qwen/Qwen2.5-7B-Instruct, base_url: "http://127.0.0.1:8000/v1", concurrency: 32}
      - {name: smol, base_url: "hf://smollm2", max_tokens: 64}   # in-process; model defaults to the hf:// name
    prices:
      gpt-4o: [2.50, 10.00]     # USD per 1M input / output tokens

The API key never appears here: a judge names the environment variable that holds it. A base URL with
``user:password@`` is split when the judge is made: ``base_url`` keeps the URL without them (it is what
summaries record) and ``base_url_auth`` the credentials, sent only as the ``Authorization`` header.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from mtrbench.infra.errors import MtrbenchError, UserInputError, closest
from mtrbench.llm.redact import UrlCredentials, public_url, split_userinfo

HTTP_TIMEOUT_S = 60.0  # a hosted or local server's reply
HF_TIMEOUT_S = 900.0  # an in-process batch: a CPU reads a long judge prompt at tens of milliseconds a token


@dataclass(frozen=True)
class JudgeConfig:
    name: str  # label used in outputs (per-judge aggregates)
    model: str  # model id sent to the server
    base_url: str | None = None  # None -> env OPENAI_BASE_URL, else https://api.openai.com/v1
    api_key_env: str = "OPENAI_API_KEY"  # NAME of the env var holding the key; the key itself is never stored
    temperature: float = 0.0
    max_tokens: int = 1024
    # per request (hf://: per generation batch); None: the backend's default, HTTP_TIMEOUT_S or HF_TIMEOUT_S
    timeout_s: float | None = None
    max_retries: int = 5  # transport retries (timeouts, 429, 5xx, connection errors)
    parse_retries: int = 2  # extra requests when a reply cannot be parsed
    concurrency: int = 8
    # Stop the run (finished work is kept) when this many requests in a row fail after their retries: a dead
    # server, a wrong key or model name. 0: never stop.
    max_failures_in_a_row: int = 10
    # None: send response_format=json_object when the request asks for JSON, and stop sending it to this
    # server if it answers 400 to it. True: always send it for JSON requests. False: never.
    json_mode: bool | None = None
    price_input_per_mtok: float | None = None  # USD per 1M tokens; None -> price table lookup by model
    price_output_per_mtok: float | None = None
    extra_body: dict = field(default_factory=dict)  # e.g. {"seed": 0, "top_p": 1}
    # user:password that base_url carried; set from base_url, never read from a judges file
    base_url_auth: UrlCredentials | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.base_url, str):
            clean, credentials = split_userinfo(self.base_url)
            if credentials is not None:
                object.__setattr__(self, "base_url", clean)
                object.__setattr__(self, "base_url_auth", credentials)
        problem = _invalid_field(self)
        if problem:
            raise UserInputError(f"judge '{self.name}': {problem}")

    @property
    def effective_timeout_s(self) -> float:
        """``timeout_s``, or the default of the backend the base URL selects."""
        if self.timeout_s is not None:
            return float(self.timeout_s)
        return HF_TIMEOUT_S if isinstance(self.base_url, str) and self.base_url.startswith("hf://") else HTTP_TIMEOUT_S

    def __hash__(self) -> int:  # extra_body is a dict, so the generated hash would fail
        return hash(
            (
                self.name,
                self.model,
                self.base_url,
                self.api_key_env,
                json.dumps(self.extra_body, sort_keys=True, default=str),
            )
        )


def _invalid_field(judge: JudgeConfig) -> str | None:
    """The first field with an unusable value, described in one phrase; None when all are fine."""
    if not isinstance(judge.name, str) or not judge.name.strip():
        return "field 'name' must be a non-empty string"
    if not isinstance(judge.model, str) or not judge.model.strip():
        return "field 'model' must be a non-empty string"
    if judge.base_url is not None and not (
        isinstance(judge.base_url, str) and judge.base_url.startswith(("http://", "https://", "hf://"))
    ):
        shown = public_url(judge.base_url) if isinstance(judge.base_url, str) else judge.base_url
        return f"field 'base_url' must be an http(s) URL or hf://MODEL (local transformers), got {shown!r}"
    if not isinstance(judge.api_key_env, str) or not judge.api_key_env.strip():
        return "field 'api_key_env' must name an environment variable"
    checks: list[tuple[str, Any, float | None, bool]] = [  # field, value, minimum, must be int
        ("temperature", judge.temperature, 0.0, False),
        ("max_tokens", judge.max_tokens, 1, True),
        ("max_retries", judge.max_retries, 0, True),
        ("parse_retries", judge.parse_retries, 0, True),
        ("concurrency", judge.concurrency, 1, True),
        ("max_failures_in_a_row", judge.max_failures_in_a_row, 0, True),
    ]
    for name, value, minimum, integer in checks:
        if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
            return f"field '{name}' must be {'an integer' if integer else 'a number'}, got {value!r}"
        if not math.isfinite(value) or (minimum is not None and value < minimum):
            return f"field '{name}' must be >= {minimum}, got {value!r}"
    if judge.timeout_s is not None and (
        isinstance(judge.timeout_s, bool)
        or not isinstance(judge.timeout_s, (int, float))
        or not math.isfinite(judge.timeout_s)
        or judge.timeout_s <= 0
    ):
        return f"field 'timeout_s' must be a number > 0, got {judge.timeout_s!r}"
    if judge.json_mode is not None and not isinstance(judge.json_mode, bool):
        return f"field 'json_mode' must be true, false or null, got {judge.json_mode!r}"
    for name in ("price_input_per_mtok", "price_output_per_mtok"):
        value = getattr(judge, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            return f"field '{name}' must be a non-negative number, got {value!r}"
    if not isinstance(judge.extra_body, dict):
        return f"field 'extra_body' must be a mapping, got {type(judge.extra_body).__name__}"
    return None


JUDGE_FIELDS = tuple(f.name for f in dataclasses.fields(JudgeConfig) if f.name != "base_url_auth")


def judge_from_flags(
    model: str, base_url: str | None, api_key_env: str = "OPENAI_API_KEY", name: str | None = None
) -> JudgeConfig:
    """A single judge from command-line flags (``--llm-model``, ``--llm-base-url``, ``--api-key-env``)."""
    return JudgeConfig(name=name or model, model=model, base_url=base_url or None, api_key_env=api_key_env)


def load_judges(path: str | Path) -> list[JudgeConfig]:
    """Judges from a YAML or JSON file ``{"judges": [{...}, ...], "prices": {model: [in, out]}}``.

    ``prices`` fill in the per-judge price fields of judges that do not set them (see ``cost.py``).
    A bare list of judges is accepted too. Errors name the file and the offending field.
    """
    path = Path(path)
    if not path.is_file():
        raise UserInputError(f"judges file {path} not found")
    text = path.read_text(encoding="utf-8")
    data = _parse_document(path, text)
    if isinstance(data, list):
        data = {"judges": data}
    if not isinstance(data, dict):
        raise UserInputError(f"{path}: expected a mapping with a 'judges' list, got {type(data).__name__}")
    unknown = set(data) - {"judges", "prices"}
    if unknown:
        raise UserInputError(f"{path}: unknown top-level field(s) {sorted(unknown)}; expected 'judges' and 'prices'")
    prices = _parse_prices(path, data.get("prices") or {})
    entries = data.get("judges")
    if not isinstance(entries, list) or not entries:
        raise UserInputError(f"{path}: 'judges' must be a non-empty list")
    judges = [_parse_judge(path, i, entry, prices) for i, entry in enumerate(entries)]
    seen: set[str] = set()
    for i, judge in enumerate(judges):
        if judge.name in seen:
            raise UserInputError(
                f"{path}: judges[{i}].name '{judge.name}' is used twice; names label outputs and must be unique"
            )
        seen.add(judge.name)
    return judges


def _parse_document(path: Path, text: str) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise UserInputError(f"{path}: invalid JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    try:
        return yaml.safe_load(text)  # YAML is a superset of JSON, so other suffixes go here
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "could not parse"
        raise UserInputError(f"{path}: invalid YAML{where}: {problem}") from None


def _parse_prices(path: Path, raw: Any) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict):
        raise UserInputError(f"{path}: 'prices' must map model -> [input, output] USD per 1M tokens")
    prices: dict[str, tuple[float, float]] = {}
    for model, pair in raw.items():
        if isinstance(pair, dict) and set(pair) == {"input", "output"}:
            pair = [pair["input"], pair["output"]]
        if (
            not isinstance(pair, (list, tuple))
            or len(pair) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in pair)
        ):
            raise UserInputError(
                f"{path}: prices.{model} must be [input, output] non-negative USD per 1M tokens, got {pair!r}"
            )
        prices[str(model)] = (float(pair[0]), float(pair[1]))
    return prices


def _parse_judge(path: Path, index: int, entry: Any, prices: dict[str, tuple[float, float]]) -> JudgeConfig:
    where = f"{path}: judges[{index}]"
    if not isinstance(entry, dict):
        raise UserInputError(f"{where} must be a mapping with at least 'model', got {type(entry).__name__}")
    if "api_key" in entry:
        raise UserInputError(
            f"{where}.api_key: keys are never read from files; export the key in an environment "
            "variable and name it with 'api_key_env'"
        )
    for key in entry:
        if key not in JUDGE_FIELDS:
            raise UserInputError(f"{where}: unknown field '{key}'.{closest(str(key), JUDGE_FIELDS)}")
    values = dict(entry)
    base_url = values.get("base_url")
    if "model" not in values and isinstance(base_url, str) and base_url.startswith("hf://"):
        values["model"] = base_url[len("hf://") :].strip() or base_url  # in-process: the name is only for records
    if "model" not in values:
        raise UserInputError(f"{where}: missing required field 'model'")
    values.setdefault("name", values["model"])
    if isinstance(values.get("name"), (int, float)) and not isinstance(values.get("name"), bool):
        values["name"] = str(values["name"])
    model = values["model"]
    if isinstance(model, str) and model in prices:
        values.setdefault("price_input_per_mtok", prices[model][0])
        values.setdefault("price_output_per_mtok", prices[model][1])
    if values.get("extra_body") is None:
        values.pop("extra_body", None)
    try:
        return JudgeConfig(**values)
    except MtrbenchError as err:
        message = str(err)
        detail = message.split(": ", 1)[1] if message.startswith("judge '") else message
        raise UserInputError(f"{where}: {detail}") from None


DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})


def resolve_base_url(judge: JudgeConfig) -> str:
    return (judge.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def is_local_url(url: str) -> bool:
    return (urlsplit(url).hostname or "").lower() in LOCAL_HOSTS


def display_url(url: str) -> str:
    """The URL for messages: any user:password part shown as ``***``."""
    return public_url(url)
