"""Which measured tables the pinned aiconfigurator-core package ships, and how our names map to it.

The package keeps one parquet file per op under
``aiconfigurator_core/systems/data/<system>/<family>/<engine>/<version>/<op>_perf.parquet``.
We read those files by path (never its SDK: loading a GPU's database through it takes ~0.6 s and
runs its own interpolation); the package is located with importlib without importing it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final

# The one import of the dtype vocabulary: re-point to explorer.base.dtypes when it lands.
from explorer.base.dtypes import normalize_dtype
from explorer.base.engines import SERVING_ENGINES, ServingEngine
from explorer.kernel_tables._grid import BoolArray, FloatArray
from explorer.specs.engine import ENGINE_KINDS, NotAsServed, OverheadNotServed

PACKAGE: Final = "aiconfigurator-core"
_MODULE: Final = "aiconfigurator_core"

# The scenario's engine vocabulary (explorer.base.engines), the package's folder names too.
Engine = ServingEngine
ENGINES: Final[tuple[Engine, ...]] = SERVING_ENGINES

# Hardware preset slug (data/hardware.csv) → the package's system name; None: no data shipped.
SYSTEM_FOR_PRESET: Final[dict[str, str | None]] = {
    "h100": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",  # the preset is the HGX B200 (1000 W), as the package's b200_sxm
    "gb200": "gb200",  # B200 in GB200 (1200 W clocks): the package measured it separately
    "b300": "b300_sxm",
    "a100": "a100_sxm",
    "l40s": "l40s",
    "gb300": "gb300",
    "rtx-pro-6000": "rtx_pro_6000_server",
    "arc-pro-b60": "b60",  # vLLM tables only
    # The package ships these systems' spec files but no measured data (empty data folders;
    # each file says "Estimate-only system spec … No built-in silicon performance database").
    "h100-pcie": None,
    "a100-pcie": None,
    "a30": None,
    "l4": None,
    "mi300x": None,  # AMD: the package only measures NVIDIA (and one Intel) GPUs
    "mi325x": None,
    "mi350x": None,
    "mi355x": None,
}
_NO_AMD = ("aiconfigurator-core has no {} (AMD) tables; it measures NVIDIA GPUs and the Intel "
           "B60 only")
_ESTIMATE_ONLY = ("aiconfigurator-core 0.12.0 ships {}'s system spec but no measured tables "
                  "('Estimate-only system spec', an empty data folder)")
_NO_DATA_REASON: Final[dict[str, str]] = {
    "mi300x": _NO_AMD.format("MI300X"),
    "mi325x": _NO_AMD.format("MI325X"),
    "mi350x": _NO_AMD.format("MI350X"),
    "mi355x": _NO_AMD.format("MI355X"),
    "h100-pcie": _ESTIMATE_ONLY.format("h100_pcie"),
    "a100-pcie": _ESTIMATE_ONLY.format("a100_pcie"),
    "a30": _ESTIMATE_ONLY.format("a30"),
    "l4": _ESTIMATE_ONLY.format("l4"),
}

# Package spelling of each canonical dtype in the GEMM and KV-cache columns.
_TABLE_SPELLING: Final[dict[str, str]] = {
    "bf16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block", "fp4": "nvfp4",
}
_PACKAGE_SPELLINGS: Final = frozenset(
    {*_TABLE_SPELLING.values(), "int8_wo", "int4_wo", "sq", "float16"}
)


# Each engine's table quirks are declared with the engine (explorer/specs/engine.py: ENGINE_KINDS,
# with their sources); these are the lookups by (engine, op, dtype in the package's spelling).
NOT_AS_SERVED: Final[dict[tuple[str, str, str], NotAsServed]] = {
    (e.slug, op, dtype): q for e in ENGINE_KINDS.values() for (op, dtype), q in e.not_as_served
}
OVERHEAD_NOT_SERVED: Final[dict[tuple[str, str, str], OverheadNotServed]] = {
    (e.slug, op, dtype): q for e in ENGINE_KINDS.values()
    for (op, dtype), q in e.overhead_not_served
}


@dataclass(frozen=True)
class Missing:
    """No measured table covers this request; `reason` says why, for the UI and the fallback."""

    reason: str


@dataclass(frozen=True)
class Provenance:
    """Where a looked-up kernel time comes from."""

    package: str  # "aiconfigurator-core 0.12.0"
    system: str
    family: str
    engine: str
    engine_version: str
    op: str
    dtype: str  # the table's own spelling, e.g. bfloat16
    kernel_source: str
    detail: str = ""  # e.g. "74 of 35816 grid points filled"
    # Set where this table prices another engine's calls: that engine, and why not its own.
    stands_in_for: str = ""
    stand_in_reason: str = ""
    # Set where the measured times were changed to price a serving step (OVERHEAD_NOT_SERVED):
    # what was done and where, or why it could not be.
    adjustment: str = ""

    @property
    def label(self) -> str:
        """One short line: package, table folder, dtype, kernel (and whose calls it stands in
        for)."""
        where = f"{self.system}/{self.family}/{self.engine}/{self.engine_version}"
        if self.op != self.family:
            where += f"/{self.op}"
        label = f"{self.package}, {where}, {self.dtype}, {self.kernel_source}"
        if self.stands_in_for:
            label += (f" — standing in for {self.stands_in_for}'s own table: "
                      f"{self.stand_in_reason}")
        if self.adjustment:
            label += f" — {self.adjustment}"
        return label


@dataclass(frozen=True)
class TableLookup:
    """Latency of one kind of kernel call for arrays of its sizes, from one measured table:
    decode attention and routed experts alike (GEMM adds which points were filled)."""

    latency_s: FloatArray  # NaN where not covered
    covered: BoolArray
    provenance: Provenance

    @property
    def all_covered(self) -> bool:
        return bool(self.covered.all())


@dataclass(frozen=True)
class TableRef:
    """One shipped table file."""

    system: str
    family: str  # the folder: gemm, attention, moe, comm, mla, …
    engine: str
    version: str
    op: str  # file name without `_perf.parquet`: gemm, generation_attention, nccl, …
    path: Path

    @property
    def where(self) -> str:
        return f"{self.system}/{self.family}/{self.engine}/{self.version}"


def package_version() -> str | None:
    try:
        return importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_label() -> str:
    return f"{PACKAGE} {package_version() or '(version unknown)'}"


@lru_cache(maxsize=1)
def data_root() -> Path | None:
    """The package's systems/data folder, found without importing the package."""
    try:
        spec = importlib.util.find_spec(_MODULE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "systems" / "data"
    return root if root.is_dir() else None


_VERSION = re.compile(
    r"^(?P<release>\d+(?:\.\d+)*)(?:(?P<pre>a|b|rc)(?P<pre_n>\d+))?"
    r"(?:\.post(?P<post>\d+))?(?:\.dev(?P<dev>\d+))?$"
)


def version_key(version: str) -> tuple[tuple[int, ...], int, int, int, int]:
    """Sort key for the package's version folders (1.3.0rc20 < 1.3.0, 0.5.6.post2 > 0.5.6).

    Unparseable names sort first, so they are never taken as the newest."""
    match = _VERSION.match(version)
    if match is None:
        return ((-1,), 0, 0, 0, 0)
    release = tuple(int(x) for x in match["release"].split("."))
    release += (0,) * (4 - len(release))
    dev = match["dev"]
    if match["pre"]:  # a pre-release sorts before its release
        pre = {"a": -3, "b": -2, "rc": -1}[match["pre"]]
        pre_n = int(match["pre_n"])
    else:
        pre, pre_n = (-4, 0) if dev is not None and match["post"] is None else (0, 0)
    post = int(match["post"]) if match["post"] else -1
    return (release, pre, pre_n, post, int(dev) if dev is not None else 1 << 30)


@lru_cache(maxsize=4)
def list_tables(root: Path | None = None) -> tuple[TableRef, ...]:
    """Every table file under the data root (default: the installed package)."""
    base = root if root is not None else data_root()
    if base is None or not base.is_dir():
        return ()
    refs = []
    for path in base.glob("*/*/*/*/*_perf.parquet"):
        version_dir = path.parent
        refs.append(TableRef(
            system=version_dir.parent.parent.parent.name,
            family=version_dir.parent.parent.name,
            engine=version_dir.parent.name,
            version=version_dir.name,
            op=path.name.removesuffix("_perf.parquet"),
            path=path,
        ))
    return tuple(sorted(refs, key=lambda r: (r.system, r.family, r.engine,
                                             version_key(r.version), r.op)))


def systems(root: Path | None = None) -> tuple[str, ...]:
    return tuple(sorted({r.system for r in list_tables(root)}))


def resolve_system(gpu: str, root: Path | None = None) -> str | Missing:
    """A hardware preset slug (h200) or a package system name (h200_sxm) → the system name."""
    key = gpu.strip().lower()
    if key in SYSTEM_FOR_PRESET:
        system = SYSTEM_FOR_PRESET[key]
        if system is None:
            return Missing(_NO_DATA_REASON.get(key, f"no {PACKAGE} tables for hardware {gpu!r}"))
    else:
        system = key
    if not list_tables(root):
        return Missing(f"{PACKAGE} is not installed (no measured kernel tables)")
    if system not in systems(root):
        return Missing(f"no {package_label()} tables for hardware {gpu!r}")
    return system


def versions(gpu: str, op: str, engine: str, root: Path | None = None) -> tuple[str, ...]:
    """Engine versions that measured `op` on `gpu`, oldest first."""
    system = resolve_system(gpu, root)
    if isinstance(system, Missing):
        return ()
    found = {r.version for r in list_tables(root)
             if r.system == system and r.op == op and r.engine == engine}
    return tuple(sorted(found, key=version_key))


def newest_version(gpu: str, op: str, engine: str, root: Path | None = None) -> str | None:
    found = versions(gpu, op, engine, root)
    return found[-1] if found else None


def find_table(
    gpu: str, op: str, engine: str, version: str | None = None, root: Path | None = None
) -> TableRef | Missing:
    """The table for (gpu, op, engine[, version]); the newest version when none is named."""
    system = resolve_system(gpu, root)
    if isinstance(system, Missing):
        return system
    engine_key = engine.strip().lower()
    rows = [r for r in list_tables(root) if r.system == system and r.op == op]
    if not rows:
        return Missing(f"no {package_label()} {op} table for {system}")
    with_engine = [r for r in rows if r.engine == engine_key]
    if not with_engine:
        have = ", ".join(sorted({r.engine for r in rows}))
        return Missing(f"no {op} table for {system} with engine {engine!r} (have: {have})")
    if version is None:
        return max(with_engine, key=lambda r: version_key(r.version))
    exact = [r for r in with_engine if r.version == version]
    if not exact:
        have = ", ".join(r.version for r in with_engine)
        return Missing(f"no {op} table for {system}/{engine_key} version {version} (have: {have})")
    return exact[0]


def table_dtype(name: str) -> str:
    """The package's spelling of a dtype (bf16 → bfloat16, fp4 → nvfp4, fp8-block → fp8_block).

    A name already in the package's spelling is taken as is, before the shared vocabulary can
    fold it (fp8_block is a table of its own)."""
    key = name.strip().lower().replace("-", "_")
    if key in _PACKAGE_SPELLINGS:
        return key
    canonical = normalize_dtype(key)
    return _TABLE_SPELLING.get(canonical, canonical)


def newest_versions(root: Path | None = None) -> dict[tuple[str, str, str], str]:
    """(system, op, engine) → the newest version shipped."""
    out: dict[tuple[str, str, str], str] = {}
    for r in list_tables(root):  # sorted by version within each key: the last one wins
        out[(r.system, r.op, r.engine)] = r.version
    return out


def engine_versions(
    op: str = "gemm", engines: Iterable[str] = ENGINES, root: Path | None = None
) -> dict[str, str | None]:
    """Each engine's newest version of `op` across all systems (None: never measured)."""
    tables = list_tables(root)
    out: dict[str, str | None] = {}
    for engine in engines:
        found = [r.version for r in tables if r.engine == engine and r.op == op]
        out[engine] = max(found, key=version_key) if found else None
    return out
