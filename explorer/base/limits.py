"""Limits shared by the types, the parsers, the URL, the CLI and the charts: each declared once.

The measured-data limits are one contract: the parsers refuse a file over a cap (naming it)
before doing the work the cap bounds, and the types in explorer/specs/measured.py check the
same numbers, so nothing a parser accepts can fail later.
"""

from __future__ import annotations

# D: the largest draft length the model evaluates (scenario, mechanisms, CLI lists).
MAX_DRAFT_LEN = 64
# D on the explorer's axes and slider: the article's figures run to D = 32.
VIEW_MAX_DRAFT_LEN = 32
# Rows of a measured timing table embedded in a scenario (kernel or step times).
MAX_MEASURED_ROWS = 200_000
# Points of one measured AL curve.
MAX_CURVE_POINTS = 256
# Largest draft length (or draft position) a measurement may name; beyond MAX_DRAFT_LEN it is
# kept for the record (a block drafter measured at D = 300) but never evaluated.
MAX_MEASURED_DRAFT_LEN = 1024
# An AL may exceed 1 + D by at most this much (float noise in 1 + Σ rates); the one rule for
# parsers, curves, step tables and the scenario's fixed AL (specs.measured.al_within_bounds).
AL_BOUND_TOLERANCE = 1e-9
# Measured times in seconds: below a picosecond is no measurement (4.9e-324 ms underflows to
# 0 s), above an hour is a unit mistake. Parsers and the timing types check the same range.
MIN_TIME_S = 1e-12
MAX_TIME_S = 3600.0
# Characters of a dataset's label and of its one-line source/provenance text (storage, display).
MAX_LABEL_CHARS = 200
MAX_SOURCE_CHARS = 500

# --- Measured-data files: what one upload or `validate` may cost -------------------------------
# The upload limit (the app's server.maxUploadSize says the same in MB).
MAX_FILE_BYTES = 50 * 1024 * 1024
# Lines after a CSV's header, lines of a Prometheus text, records of a JSON-lines file.
MAX_ROWS = MAX_MEASURED_ROWS
# Columns of a CSV, and rows x columns (cells are held in memory while a table is checked).
MAX_COLUMNS = 256
MAX_CELLS = 4_000_000
# Characters of one CSV cell (a source citation is a few hundred).
MAX_CELL_CHARS = 1_000
# JSON: nesting depth and values (numbers, strings, lists, objects) of one file.
MAX_JSON_DEPTH = 32
MAX_JSON_VALUES = 2_000_000
# Characters of one JSON number (digits, sign, point, exponent): float() reads any length, but
# int() refuses beyond 4,300 digits and a 1e6-digit number costs seconds; no measurement or
# setting needs more than a few dozen.
MAX_NUMBER_CHARS = 100
# AL curves one file may hold (curve groups of a CSV, SGLang configurations, vLLM series,
# SPEED-Bench cells); categories of a SPEED-Bench report or a specdec_bench profile.
MAX_CURVES = 1_000
MAX_CATEGORIES = 100

# --- Model dimensions: what a config may say before it is an absurd size (the cost model's arrays
# stay small, and a typo of three extra zeros is caught): each bound is far above any published
# model. The config parser names them, and ModelSpec/DrafterSpec hold them, so a packed model in
# a link (`?cm=`, `?cd=`) meets the same bounds as a config file (hidden = 1e20 is refused).
MAX_LAYERS = 1000
MAX_HIDDEN = 131_072
MAX_HEADS = 4096
MAX_HEAD_DIM = 4096
MAX_FFN = 1_048_576
MAX_EXPERTS = 65_536
MAX_VOCAB = 4_194_304
MAX_WINDOW = 16_777_216
# MLA's latent KV rank (kv_lora_rank); a spec's head_dim for MLA is that plus the RoPE dims.
MAX_KV_LORA = 4 * MAX_HEAD_DIM

# --- Messages about a file -----------------------------------------------------------------------
# Problems listed per file (then one "and N more" line).
MAX_PROBLEMS = 50
# Characters of a cell quoted in a message, of one message, of a field name in a message.
MAX_QUOTE_CHARS = 40
MAX_MESSAGE_CHARS = 500
MAX_FIELD_CHARS = 100

# --- Derived work on a measured table -------------------------------------------------------------
# Rows a fit (kernel efficiencies, step overheads, draft back-out) uses: above this an evenly
# spaced sample is fitted and the result says so.
MAX_CALIBRATION_ROWS = 20_000
